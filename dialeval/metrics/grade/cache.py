"""Where GRADE keeps what it builds once and reuses (keyword IDF, graph tables), and the file hash that keys those
caches and verifies saved tables."""

from __future__ import annotations

from pathlib import Path

from ...digest import sha256_file

__all__ = ["default_cache_dir", "sha256_file"]


def default_cache_dir() -> Path:
    """``$DIALEVAL_CACHE_DIR/grade``, else ``$XDG_CACHE_HOME/dialeval/grade``, else ``~/.cache/dialeval/grade``."""
    from ...paths import cache_dir

    return cache_dir("grade")


