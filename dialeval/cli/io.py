"""Reading and writing the rows of ``dialeval score`` (JSONL or CSV), with errors that name the file and line.

A file that cannot be read raises :class:`~dialeval.errors.InputFileError`: a missing file, bytes that are not
UTF-8 (named by line and byte offset), a JSONL line that is not a JSON object (``file:line``), a file without rows,
or a CSV list cell that is not valid JSON.

CSV: the list columns (``context``, ``dialogue``, ``references``) are written as JSON by :func:`write_rows`, and a
cell of those columns that starts with ``[`` is read back as that JSON list; a plain cell is one turn (one
reference), or several when ``turn_separator`` is given. Other columns are text.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from ..errors import InputFileError
from ..textfiles import jsonl_objects, read_text

__all__ = ["LIST_COLUMNS", "read_rows", "read_text", "write_rows"]

#: CSV columns that hold a list (of turns, messages or references)
LIST_COLUMNS = ("context", "dialogue", "references")


def read_rows(path: Path, turn_separator: str | None = None) -> list[dict[str, Any]]:
    """The rows of a ``.csv`` file or of a JSONL file (any other suffix), in file order; never empty."""
    text = read_text(path)
    rows = _csv_rows(path, text, turn_separator) if path.suffix.lower() == ".csv" else _jsonl_rows(path, text)
    if not rows:
        raise InputFileError(f"{path} has no rows; expected one JSON object (or CSV row) per item")
    return rows


def _jsonl_rows(path: Path, text: str) -> list[dict[str, Any]]:
    return [row for _, row in jsonl_objects(path, text)]


def _csv_rows(path: Path, text: str, turn_separator: str | None) -> list[dict[str, Any]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows = []
    for n, row in enumerate(reader, 1):
        for column in LIST_COLUMNS:
            cell = row.get(column)
            if isinstance(cell, str):
                row[column] = _list_cell(cell, turn_separator, f"{path}:{reader.line_num}: row {n}, column "
                                                               f"'{column}'")
        rows.append(row)
    return rows


def _list_cell(cell: str, turn_separator: str | None, where: str) -> Any:
    if cell.lstrip().startswith("["):
        try:
            value = json.loads(cell)
        except json.JSONDecodeError as err:
            raise InputFileError(f"{where}: a cell that starts with '[' is read as a JSON list, and this one is "
                                 f"not valid JSON ({err.msg} at character {err.pos})") from None
        if not isinstance(value, list):
            raise InputFileError(f"{where}: expected a JSON list, got {type(value).__name__}")
        return value
    if turn_separator:
        return cell.split(turn_separator)
    return cell


def write_rows(rows: list[dict[str, Any]], path: Path) -> None:
    """Write ``rows`` as CSV (``.csv``; lists and dicts as JSON, ``None`` as an empty cell) or JSONL."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".csv":
        keys = list(dict.fromkeys(k for r in rows for k in r))
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=keys)
            writer.writeheader()
            for r in rows:
                writer.writerow({k: json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else v
                                 for k, v in r.items()})
    else:
        with open(path, "w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
