"""The sha256 of a file, read in blocks: the one function every record of a file's content uses (prepared runs'
manifests, GRADE's graph tables, installed encoders' weights). A leaf module."""

from __future__ import annotations

import hashlib
import os

__all__ = ["sha256_file"]


def sha256_file(path: str | os.PathLike) -> str:
    """The hex sha256 of the bytes of the file at ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
