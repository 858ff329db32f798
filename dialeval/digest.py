"""The bytes of a file read in blocks (:func:`file_blocks`), and their sha256 (:func:`sha256_file`): how every record
of a file's content reads it (prepared runs' manifests, GRADE's graph tables, encoders' weights). A leaf module."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator

__all__ = ["file_blocks", "sha256_file"]

BLOCK_BYTES = 1 << 20


def file_blocks(path: str | os.PathLike) -> Iterator[bytes]:
    """The bytes of the file at ``path``, in blocks of :data:`BLOCK_BYTES`, read once from start to end."""
    with open(path, "rb") as fh:
        yield from iter(lambda: fh.read(BLOCK_BYTES), b"")


def sha256_file(path: str | os.PathLike) -> str:
    """The hex sha256 of the bytes of the file at ``path``."""
    digest = hashlib.sha256()
    for block in file_blocks(path):
        digest.update(block)
    return digest.hexdigest()
