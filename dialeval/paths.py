"""Where the real corpora and human-judgement sets live.

Order: an explicit ``data_dir`` argument, then the ``DIALEVAL_DATA_DIR`` environment variable, then
``../shared/data`` seen from the current directory, then ``../shared/data`` seen from this source checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import DataDirNotFound

__all__ = ["ENV_VAR", "DataDirNotFound", "data_file", "resolve_data_dir"]

ENV_VAR = "DIALEVAL_DATA_DIR"


def _candidates(data_dir: str | os.PathLike | None) -> list[Path]:
    if data_dir is not None:
        return [Path(data_dir)]
    if os.environ.get(ENV_VAR):
        return [Path(os.environ[ENV_VAR])]
    return [Path.cwd().parent / "shared" / "data", Path(__file__).resolve().parents[2] / "shared" / "data"]


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """Return the data directory or raise :class:`DataDirNotFound` saying how to point at it."""
    tried = _candidates(data_dir)
    for p in tried:
        if p.is_dir():
            return p.resolve()
    raise DataDirNotFound(
        f"data directory not found (tried: {', '.join(str(p) for p in tried)}); "
        f"pass data_dir=... / --data-dir or set {ENV_VAR}"
    )


def data_file(relative: str, data_dir: str | os.PathLike | None = None) -> Path:
    """A file inside the data directory, with an error naming it when it is missing."""
    path = resolve_data_dir(data_dir) / relative
    if not path.exists():
        raise DataDirNotFound(f"{path} does not exist: is {resolve_data_dir(data_dir)} the dialeval data directory?")
    return path
