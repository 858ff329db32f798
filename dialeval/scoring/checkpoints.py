"""Where learned metrics find their checkpoints, and the fingerprint that goes into a score's signature.

One place for the rules every learned metric follows: ``None`` or ``"default"`` is the checkpoint shipped in the
package (``dialeval/checkpoints/<metric_dir>/default``); a folder with a ``config.json`` is a checkpoint; a training
run folder stands for its ``best/`` checkpoint. A missing checkpoint is an error that says how to train one.
"""

from __future__ import annotations

import hashlib
import os
from importlib import resources
from pathlib import Path

from ..errors import CheckpointNotFoundError

# Files that make up a checkpoint. Others are ignored: `evaluate` writes lock files into a folder given as
# ``config_name``, and a user's notes beside the weights must not change the signature. The custom-code files
# (``*.py``) that `save_pretrained` writes are left out too: scorers run the installed ``dialeval.modeling`` code,
# never a folder's copy, so a run's ``best/`` and the same weights shipped without code have one fingerprint.
FINGERPRINT_SUFFIXES = (".json", ".safetensors", ".txt", ".gz")


def shipped_checkpoint(metric_dir: str, train_command: str, name: str = "default") -> Path:
    path = Path(str(resources.files("dialeval"))) / "checkpoints" / metric_dir / name
    if not (path / "config.json").exists():
        raise CheckpointNotFoundError(
            f"no shipped {metric_dir} checkpoint named {name!r} at {path}; train one with "
            f"`{train_command} --output-dir runs/{metric_dir}` and pass checkpoint='runs/{metric_dir}/best' "
            f"(CLI: --checkpoint runs/{metric_dir}/best)"
        )
    return path


def resolve_checkpoint(checkpoint: str | os.PathLike | None, metric_dir: str, train_command: str) -> Path:
    if checkpoint is None or str(checkpoint) == "default":
        return shipped_checkpoint(metric_dir, train_command)
    path = Path(checkpoint)
    if (path / "config.json").exists():
        return path
    if (path / "best" / "config.json").exists():
        return path / "best"
    raise CheckpointNotFoundError(f"{path} is not a {metric_dir} checkpoint folder (no config.json, nor "
                                  f"best/config.json); train one with `{train_command}`")


def checkpoint_fingerprint(path: Path) -> str:
    """Short sha256 over the checkpoint's files (config, weights, tables), in sorted relative-path order."""
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in FINGERPRINT_SUFFIXES):
        h.update(str(f.relative_to(path)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:12]
