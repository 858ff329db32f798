"""Store an existing checkpoint's weights in float16: ``dialeval checkpoint half --checkpoint DIR``.

The training commands already write their ``best/`` in float16 (:func:`dialeval.training.loop.half_state_dict`);
this converts a checkpoint written before they did, in place, with the same rule: floating-point tensors become
float16 (the row scales of int8 weights excepted), the others are kept, and the file's metadata is kept.
``config.json`` is not touched: its ``dtype`` stays what the model computes in, so loading casts the stored values
back up.
"""

from __future__ import annotations

from pathlib import Path

from safetensors import safe_open
from safetensors.torch import save_file

from ..errors import CheckpointNotFoundError
from .loop import half_state_dict

WEIGHTS = "model.safetensors"


def halve_checkpoint(checkpoint: str | Path) -> tuple[int, int]:
    """Rewrite ``<checkpoint>/model.safetensors`` with its floating-point tensors in float16; returns the file's
    size in bytes before and after. :class:`~dialeval.errors.CheckpointNotFoundError` (a ``FileNotFoundError``) when
    the folder holds no weights file."""
    path = Path(checkpoint) / WEIGHTS
    if not path.is_file():
        raise CheckpointNotFoundError(f"{checkpoint} holds no {WEIGHTS}")
    before = path.stat().st_size
    with safe_open(str(path), "pt") as fh:
        metadata = fh.metadata()
        state = {key: fh.get_tensor(key) for key in fh.keys()}
    tmp = path.with_suffix(".tmp")
    save_file(half_state_dict(state), str(tmp), metadata=metadata)
    tmp.replace(path)
    return before, path.stat().st_size
