"""Store an existing checkpoint's weights in float16: ``python -m dialeval.training.half --checkpoint DIR``.

The training commands already write their ``best/`` in float16 (:func:`dialeval.training.loop.half_state_dict`);
this converts a checkpoint written before they did, in place, with the same rule: floating-point tensors become
float16, the others are kept, and the file's metadata is kept. ``config.json`` is not touched: its ``dtype`` stays
what the model computes in, so loading casts the stored values back up.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from safetensors import safe_open
from safetensors.torch import save_file

from .loop import half_state_dict

WEIGHTS = "model.safetensors"


def halve_checkpoint(checkpoint: str | Path) -> tuple[int, int]:
    """Rewrite ``<checkpoint>/model.safetensors`` with its floating-point tensors in float16; returns the file's
    size in bytes before and after."""
    path = Path(checkpoint) / WEIGHTS
    if not path.is_file():
        raise FileNotFoundError(f"{checkpoint} holds no {WEIGHTS}")
    before = path.stat().st_size
    with safe_open(str(path), "pt") as fh:
        metadata = fh.metadata()
        state = {key: fh.get_tensor(key) for key in fh.keys()}
    tmp = path.with_suffix(".tmp")
    save_file(half_state_dict(state), str(tmp), metadata=metadata)
    tmp.replace(path)
    return before, path.stat().st_size


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dialeval.training.half",
                                     description=f"Store a checkpoint's floating-point weights ({WEIGHTS}) in "
                                                 "float16, in place; config.json is left as it is.")
    parser.add_argument("--checkpoint", required=True, action="append",
                        help="checkpoint folder (holds model.safetensors); may be repeated")
    args = parser.parse_args(argv)
    for folder in args.checkpoint:
        before, after = halve_checkpoint(folder)
        print(f"{folder}: {before:,} -> {after:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
