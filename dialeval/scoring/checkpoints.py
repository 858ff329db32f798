"""Where learned metrics find their checkpoints, and the fingerprint that goes into a score's signature.

One place for the rules every learned metric follows:

* **shipped checkpoints, by name**: ``dialeval/checkpoints/<metric_dir>/<name>``. ``"default"`` (also ``None``) is
  the one on the bundled all-MiniLM-L6-v2, which every learned metric ships; ``"base"``, where a metric ships one, is
  trained on the base-size all-mpnet-base-v2 (``dialeval encoders install all-mpnet-base-v2``). :func:`shipped_names`
  lists a metric's, ``dialeval checkpoint list`` every metric's (:func:`shipped_rows`).
* **folders**: a folder with a ``config.json`` is a checkpoint; a training run folder stands for its ``best/``.
* **shared files**: a checkpoint may take files from the checkpoint beside it instead of holding copies (GRADE's
  base: the default's graph tables and keywords; :mod:`dialeval.scoring.shared_files`). Its files are read, hashed
  and listed where they are.

A string without a path separator is read as a shipped name when it is one; if it also names a checkpoint folder in
the current directory, that is an error rather than a guess, which says how to ask for each (``./base`` is always the
folder). A path object (``pathlib.Path``) is always a folder. Another string that is neither a shipped name nor a
checkpoint folder is an error that lists the metric's shipped names and says how to train one.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import CheckpointNotFoundError, DialevalError
from .shared_files import checkpoint_files, read_shared_files

__all__ = ["DEFAULT_CHECKPOINT", "ENCODER_FIELDS", "checkpoint_encoders", "checkpoint_fingerprint", "checkpoint_label",
           "encoder_state", "is_shipped_label", "resolve_checkpoint", "shipped_checkpoint", "shipped_names",
           "shipped_root", "shipped_rows"]

#: the name of the checkpoint every learned metric ships (on all-MiniLM-L6-v2), and what ``None`` stands for
DEFAULT_CHECKPOINT = "default"
#: the config fields in which a checkpoint records a text encoder it needs: BERT-RUBER's and PONE's sentence encoder,
#: DynaEval's utterance encoder, the encoder that GRADE, RADE and the AMR models fine-tune
ENCODER_FIELDS = ("encoder", "utterance_encoder", "base_encoder")

# Files that make up a checkpoint. Others are ignored: `evaluate` writes lock files into a folder given as
# ``config_name``, and a user's notes beside the weights must not change the signature. The custom-code files
# (``*.py``) that `save_pretrained` writes are left out too: scorers run the installed ``dialeval.modeling`` code,
# never a folder's copy, so a run's ``best/`` and the same weights shipped without code have one fingerprint.
FINGERPRINT_SUFFIXES = (".json", ".safetensors", ".txt", ".gz")


def shipped_root() -> Path:
    """The folder of the shipped checkpoints: one folder per metric, one checkpoint folder per name inside it."""
    return Path(str(resources.files("dialeval"))) / "checkpoints"


def shipped_names(metric_dir: str) -> list[str]:
    """The names of ``metric_dir``'s shipped checkpoints, ``default`` first."""
    folder = shipped_root() / metric_dir
    names = sorted(p.parent.name for p in folder.glob("*/config.json")) if folder.is_dir() else []
    return sorted(names, key=lambda n: n != DEFAULT_CHECKPOINT)


def _all_shipped_names() -> set[str]:
    return {p.parent.name for p in shipped_root().glob("*/*/config.json")}


def shipped_checkpoint(metric_dir: str, train_command: str, name: str = DEFAULT_CHECKPOINT) -> Path:
    path = shipped_root() / metric_dir / name
    if not (path / "config.json").exists():
        names = shipped_names(metric_dir)
        raise CheckpointNotFoundError(
            f"no shipped {metric_dir} checkpoint named {name!r} (shipped: {', '.join(names) or 'none'}); train one "
            f"with `{train_command} --output-dir runs/{metric_dir}` and pass checkpoint='runs/{metric_dir}/best' "
            f"(CLI: --checkpoint runs/{metric_dir}/best)")
    return path


def _checkpoint_folder(path: Path) -> Path | None:
    """``path`` when it is a checkpoint folder, its ``best/`` when it is a training run folder, else None."""
    if (path / "config.json").exists():
        return path
    if (path / "best" / "config.json").exists():
        return path / "best"
    return None


def resolve_checkpoint(checkpoint: str | os.PathLike | None, metric_dir: str, train_command: str) -> Path:
    """The checkpoint folder ``checkpoint`` stands for: a shipped name (``None``: ``default``), a checkpoint folder
    or a training run folder (the rules: the module docstring)."""
    if checkpoint is None:
        return shipped_checkpoint(metric_dir, train_command)
    if isinstance(checkpoint, str) and "/" not in checkpoint and os.sep not in checkpoint:
        folder = _checkpoint_folder(Path(checkpoint))
        if checkpoint in shipped_names(metric_dir):
            shipped = shipped_checkpoint(metric_dir, train_command, checkpoint)
            if folder is not None:
                raise CheckpointNotFoundError(
                    f"{checkpoint!r} names both the shipped {metric_dir} checkpoint and the checkpoint folder "
                    f"./{checkpoint} here; pass './{checkpoint}' for the folder, or {str(shipped)!r} for the shipped "
                    "one")
            return shipped
        if folder is None:
            raise CheckpointNotFoundError(
                f"{checkpoint!r} is neither a shipped {metric_dir} checkpoint (shipped: "
                f"{', '.join(shipped_names(metric_dir)) or 'none'}) nor a checkpoint folder here (no config.json, "
                f"nor best/config.json); train one with `{train_command}`")
        return folder
    path = Path(checkpoint)
    folder = _checkpoint_folder(path)
    if folder is None:
        raise CheckpointNotFoundError(f"{path} is not a {metric_dir} checkpoint folder (no config.json, nor "
                                      f"best/config.json); train one with `{train_command}`")
    return folder


def _shipped_name(path: Path) -> str | None:
    """The name of the shipped checkpoint ``path`` is, or None for any other folder."""
    try:
        inside = path.resolve().relative_to(shipped_root().resolve())
    except ValueError:
        return None
    return inside.parts[1] if len(inside.parts) == 2 else None


def checkpoint_label(path: Path) -> str:
    """How a score's signature names checkpoint ``path`` (its fingerprint's ``checkpoint``): a shipped one by its name
    (``default``, ``base``); another folder by its own name, or by its path where that name would say nothing
    (``best``) or would read as a shipped name (a user's folder called ``base``)."""
    name = _shipped_name(path)
    if name is not None:
        return name
    if path.name in ("best", ""):
        return str(path)
    return str(path.resolve()) if path.name in _all_shipped_names() else path.name


def is_shipped_label(label: str) -> bool:
    """Whether a signature's ``checkpoint`` (:func:`checkpoint_label`) names a shipped checkpoint."""
    return label in _all_shipped_names()


def checkpoint_fingerprint(path: Path) -> str:
    """Short sha256 over the checkpoint's files (config, weights, tables), in sorted relative-path order; a file it
    shares is read in its source, checked (:func:`~dialeval.scoring.shared_files.checkpoint_files`), so a folder
    that shares files has the fingerprint of the same folder holding copies of them."""
    h = hashlib.sha256()
    files = checkpoint_files(path)
    for name in sorted(name for name in files if name.suffix in FINGERPRINT_SUFFIXES):
        h.update(str(name).encode())
        h.update(files[name].read_bytes())
    return h.hexdigest()[:12]


def checkpoint_encoders(path: Path) -> list[str]:
    """The text encoders checkpoint ``path`` records in its config (:data:`ENCODER_FIELDS`), as recorded."""
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    return list(dict.fromkeys(config[f] for f in ENCODER_FIELDS if isinstance(config.get(f), str) and config[f]))


def encoder_state(encoder: str) -> str:
    """Whether the encoder a checkpoint records is on this machine: ``installed``, or ``not installed: `<the command
    that installs it>``` for a named encoder, or ``missing: <why>``."""
    from ..backbone.encoder import resolve_encoder_path, weights_file
    from ..backbone.encoders import EncoderNotInstalled, named_encoder

    try:
        weights_file(resolve_encoder_path(encoder)[0])
    except EncoderNotInstalled:
        return f"not installed: `{named_encoder(encoder).install_command}`"
    except DialevalError as err:
        return f"missing: {err}"
    return "installed"


def _validation(path: Path) -> str:
    """The headline of a checkpoint's ``training.json``: the validation figure that chose it, at its step."""
    record = path / "training.json"
    if not record.is_file():
        return "-"
    validation = json.loads(record.read_text(encoding="utf-8")).get("validation") or {}
    if "key" not in validation or validation.get("best") is None:
        return "-"
    return f"{validation['key']} {validation['best']:.4f}" + (
        f" at step {validation['best_step']}" if validation.get("best_step") is not None else "")


def shipped_rows() -> list[dict[str, Any]]:
    """One row per shipped checkpoint, by metric folder and name (``dialeval checkpoint list``): its path, the
    encoders it records and whether each is on this machine (:func:`encoder_state`), its size on disk (its own files),
    what it shares (``shared``: the source checkpoint's name, the shared entries and their bytes, which the source's
    row counts; None when it shares nothing) and the validation headline of its ``training.json``."""
    rows = []
    for metric_dir in sorted(p.name for p in shipped_root().iterdir() if p.is_dir()):
        for name in shipped_names(metric_dir):
            path = shipped_root() / metric_dir / name
            encoders = {encoder: encoder_state(encoder) for encoder in checkpoint_encoders(path)}
            shared = read_shared_files(path)
            rows.append({"metric_dir": metric_dir, "name": name, "path": str(path), "encoders": encoders,
                         "bytes": sum(f.stat().st_size for f in path.rglob("*") if f.is_file()),
                         "shared": None if shared is None else {"checkpoint": shared.checkpoint,
                                                                "entries": shared.entries, "bytes": shared.bytes},
                         "validation": _validation(path)})
    return rows
