"""Where GRADE keeps what it builds once and reuses (keyword IDF, graph tables), and the file hash that keys those
caches and verifies saved tables."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["default_cache_dir", "sha256_file"]


def default_cache_dir() -> Path:
    """``$DIALEVAL_CACHE_DIR/grade``, else ``$XDG_CACHE_HOME/dialeval/grade``, else ``~/.cache/dialeval/grade``."""
    from ...paths import cache_dir

    return cache_dir("grade")


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()
