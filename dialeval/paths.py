"""Where the real corpora and human-judgement sets live, and where derived files are cached.

Data: an explicit ``data_dir`` argument, then the ``DIALEVAL_DATA_DIR`` environment variable, then
``../shared/data`` seen from the current directory, then ``../shared/data`` seen from this source checkout.

Cache (:func:`cache_dir`): ``$DIALEVAL_CACHE_DIR/<kind>``, else ``$XDG_CACHE_HOME/dialeval/<kind>``, else
``~/.cache/dialeval/<kind>``.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import DataDirNotFound

__all__ = ["CACHE_ENV_VAR", "ENV_VAR", "DataDirNotFound", "cache_dir", "data_file", "resolve_data_dir"]

ENV_VAR = "DIALEVAL_DATA_DIR"
CACHE_ENV_VAR = "DIALEVAL_CACHE_DIR"


def _candidates(data_dir: str | os.PathLike | None) -> list[Path]:
    if data_dir is not None:
        return [Path(data_dir)]
    if os.environ.get(ENV_VAR):
        return [Path(os.environ[ENV_VAR])]
    # from the checkout's root both are the same folder: it is tried (and named) once
    return list(dict.fromkeys([Path.cwd().parent / "shared" / "data",
                               Path(__file__).resolve().parents[2] / "shared" / "data"]))


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


def cache_dir(kind: str) -> Path:
    """The cache folder for one kind of derived file (``grade``, ``amr_graphs``, ...); see the module docstring."""
    if os.environ.get(CACHE_ENV_VAR):
        return Path(os.environ[CACHE_ENV_VAR]) / kind
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dialeval" / kind
