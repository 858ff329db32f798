"""Reading a user's text files (UTF-8, JSON Lines) with errors that name the file and the line.

A leaf module: the corpora a scorer is pointed at (RADE's pseudo-reference corpus, the AMR evaluator's corpora) read
through it; the rows to score are read lazily by :mod:`dialeval.scale.sources`. Every failure is an :class:`~dialeval.errors.InputFileError`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import InputFileError

__all__ = ["jsonl_objects", "read_text"]


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path`` (a byte-order mark is dropped); :class:`InputFileError` if it cannot be read."""
    if not path.exists():
        raise InputFileError(f"{path} does not exist")
    if path.is_dir():
        raise InputFileError(f"{path} is a folder; expected a file")
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        raise InputFileError(f"{path}:{line}: not UTF-8 (byte 0x{data[err.start]:02x} at offset {err.start}); "
                             "save the file as UTF-8") from None


def jsonl_objects(path: Path, text: str | None = None) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line of a JSONL file (``text``: its content, when already read);
    :class:`InputFileError` naming ``file:line`` for a line that is not a JSON object."""
    rows = []
    for n, line in enumerate((read_text(path) if text is None else text).splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputFileError(f"{path}:{n}: not valid JSON ({err.msg} at column {err.colno})") from None
        if not isinstance(row, dict):
            raise InputFileError(f"{path}:{n}: expected a JSON object with the item's fields, got "
                                 f"{type(row).__name__}")
        rows.append((n, row))
    return rows
