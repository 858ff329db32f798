"""Rows to score, read lazily one at a time: JSONL, CSV and Parquet files, ``datasets`` datasets (map-style or
streaming) and any iterable of dicts.

Nothing reads a whole input: a file is read line by line (Parquet: record batch by record batch), so memory does
not grow with the input. Every row comes as a :class:`SourceRow` that says where it is (``file:line`` for JSONL and
CSV, ``file: row n`` for Parquet, ``row n`` otherwise) and holds either its fields or why it could not be read (a
JSONL line that is not a JSON object, bytes that are not UTF-8, a CSV row with the wrong number of cells, a CSV list
cell that is not JSON). The scoring stream decides what such a row means (stop, or record it as failed), except for
CSV bytes that are not UTF-8: no row boundary after them can be trusted, so that row is *fatal* and the run stops.

CSV: the list columns (``context``, ``dialogue``, ``references``) hold a JSON list when the cell starts with ``[``
(that is how results are written back); a plain cell is one turn (one reference), or several when
``turn_separator`` is given. Other columns are text.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputFileError

__all__ = ["LIST_COLUMNS", "RowSource", "SourceRow", "open_source"]

#: CSV columns that hold a list (of turns, messages or references)
LIST_COLUMNS = ("context", "dialogue", "references")
PARQUET_BATCH_ROWS = 1024


@dataclass(frozen=True)
class SourceRow:
    """One input row: its position (0-based, in input order), where it is, and its fields or why it is unreadable."""

    index: int
    where: str
    fields: dict[str, Any] | None
    error: str | None = None
    #: the input cannot be read past this row (CSV bytes that are not UTF-8): the run stops here whatever the policy
    fatal: bool = False


class RowSource:
    """An input that yields :class:`SourceRow` objects lazily, from any position (a resumed run starts mid-way)."""

    #: how the input is named in messages
    name: str
    #: what an output's manifest records of the input: a file's absolute path (so ``./in.jsonl`` and ``in.jsonl``
    #: are one input), else the name
    identity: str
    #: number of rows when known without parsing the input (a map-style dataset, a list, a Parquet file's metadata,
    #: a JSONL file's non-blank lines), else None; progress bars show it as their total
    length: int | None = None

    def rows(self, start: int = 0) -> Iterator[SourceRow]:
        raise NotImplementedError


def open_source(source: Any, *, turn_separator: str | None = None) -> RowSource:
    """The :class:`RowSource` for ``source``: a path (``.csv``, ``.parquet``, anything else is JSONL), a
    ``datasets.Dataset`` / ``IterableDataset``, or an iterable of dicts (a list, a generator)."""
    if isinstance(source, RowSource):
        return source
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.exists():
            raise InputFileError(f"{path} does not exist")
        if path.is_dir():
            raise InputFileError(f"{path} is a folder; expected a .jsonl, .csv or .parquet file")
        suffix = path.suffix.lower()
        if suffix == ".csv":
            return CsvSource(path, turn_separator)
        if suffix == ".parquet":
            return ParquetSource(path)
        return JsonlSource(path)
    if isinstance(source, (dict, bytes)) or not isinstance(source, Iterable):
        raise InputFileError(f"cannot read rows from a {type(source).__name__}; pass a file path, a datasets "
                             "Dataset or IterableDataset, or an iterable of dicts")
    return IterableSource(source)


def _decode(line: bytes, where: str) -> tuple[str | None, str | None]:
    """(text, None), or (None, why) for bytes that are not UTF-8."""
    try:
        return line.decode("utf-8"), None
    except UnicodeDecodeError as err:
        return None, (f"{where}: not UTF-8 (byte 0x{line[err.start]:02x} at column {err.start + 1}); save the file "
                      "as UTF-8")


def _binary_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of every line, a leading UTF-8 byte-order mark dropped."""
    with open(path, "rb") as fh:
        for n, line in enumerate(fh, 1):
            yield n, (line[3:] if n == 1 and line.startswith(b"\xef\xbb\xbf") else line)


class FileSource(RowSource):
    """A file input: named by its path as given, identified by its absolute path."""

    def __init__(self, path: Path) -> None:
        self.path, self.name, self.identity = path, str(path), str(path.resolve())


class JsonlSource(FileSource):
    """One JSON object per non-blank line; a row's ``where`` is ``file:line``."""

    @property
    def length(self) -> int:  # type: ignore[override]
        """The non-blank lines, counted (not parsed) on first use: one quick pass over the bytes."""
        if not hasattr(self, "_length"):
            self._length = sum(1 for _, raw in _binary_lines(self.path) if raw.strip())
        return self._length

    def rows(self, start: int = 0) -> Iterator[SourceRow]:
        index = 0
        for n, raw in _binary_lines(self.path):
            if not raw.strip():
                continue
            if index >= start:  # rows before ``start`` are counted, never parsed
                yield self._row(index, f"{self.path}:{n}", raw)
            index += 1

    @staticmethod
    def _row(index: int, where: str, raw: bytes) -> SourceRow:
        text, error = _decode(raw, where)
        if error:
            return SourceRow(index, where, None, error)
        try:
            value = json.loads(text)
        except json.JSONDecodeError as err:
            return SourceRow(index, where, None, f"{where}: not valid JSON ({err.msg} at column {err.colno})")
        if not isinstance(value, dict):
            return SourceRow(index, where, None,
                             f"{where}: expected a JSON object with the item's fields, got {type(value).__name__}")
        return SourceRow(index, where, value)


class CsvSource(FileSource):
    """A CSV file with a header row; a row's ``where`` is ``file:line`` (the line the row starts on)."""

    def __init__(self, path: Path, turn_separator: str | None = None) -> None:
        super().__init__(path)
        self.turn_separator = turn_separator

    def rows(self, start: int = 0) -> Iterator[SourceRow]:
        undecodable: list[str] = []

        def text_lines() -> Iterator[str]:
            for n, raw in _binary_lines(self.path):
                text, error = _decode(raw, f"{self.path}:{n}")
                if error:  # csv cannot go on past bytes it cannot read: the row holding them is the last one
                    undecodable.append(error)
                    return
                yield text

        reader = csv.reader(text_lines())
        header = next(reader, None)
        if header is None:
            if undecodable:
                raise InputFileError(undecodable[0])
            return
        first_line, index = reader.line_num + 1, 0
        for cells in reader:
            where = f"{self.path}:{first_line}"
            first_line = reader.line_num + 1
            if index >= start:
                yield self._row(index, where, header, cells)
            index += 1
        if undecodable:  # the row that holds the bytes, and nothing after it, since no row boundary can be trusted
            where = undecodable[0].split(": ", 1)[0]
            yield SourceRow(index, where, None, undecodable[0], fatal=True)

    def _row(self, index: int, where: str, header: list[str], cells: list[str]) -> SourceRow:
        if len(cells) != len(header):
            return SourceRow(index, where, None, f"{where}: the row has {len(cells)} cells but the header has "
                                                 f"{len(header)}")
        fields: dict[str, Any] = dict(zip(header, cells))
        for column in LIST_COLUMNS:
            if column in fields:
                try:
                    fields[column] = _list_cell(fields[column], self.turn_separator)
                except ValueError as err:
                    return SourceRow(index, where, None, f"{where}: column '{column}': {err}")
        return SourceRow(index, where, fields)


def _list_cell(cell: str, turn_separator: str | None) -> Any:
    if cell.lstrip().startswith("["):
        try:
            value = json.loads(cell)
        except json.JSONDecodeError as err:
            raise ValueError(f"a cell that starts with '[' is read as a JSON list, and this one is not valid JSON "
                             f"({err.msg} at character {err.pos})") from None
        if not isinstance(value, list):
            raise ValueError(f"expected a JSON list, got {type(value).__name__}")
        return value
    if turn_separator:
        return cell.split(turn_separator)
    return cell


class ParquetSource(FileSource):
    """A Parquet file read record batch by record batch; a row's ``where`` is ``file: row n`` (from 0)."""

    def __init__(self, path: Path) -> None:
        import pyarrow.parquet as pq

        super().__init__(path)
        try:
            self._file = pq.ParquetFile(path)
        except Exception as err:  # pyarrow raises several types for a file that is not Parquet
            raise InputFileError(f"{path}: not a readable Parquet file ({err})") from None
        self.length = self._file.metadata.num_rows

    def rows(self, start: int = 0) -> Iterator[SourceRow]:
        groups, first = [], 0
        for g in range(self._file.num_row_groups):  # whole row groups before ``start`` are never read
            size = self._file.metadata.row_group(g).num_rows
            if groups or first + size > start:
                groups.append(g)
            else:
                first += size
        if not groups:
            return
        index = first
        for batch in self._file.iter_batches(batch_size=PARQUET_BATCH_ROWS, row_groups=groups):
            for fields in batch.to_pylist():
                if index >= start:
                    yield SourceRow(index, f"{self.path}: row {index}", fields)
                index += 1


class IterableSource(RowSource):
    """A ``datasets`` dataset (map-style or streaming) or any iterable of dicts; a row's ``where`` is ``row n``."""

    def __init__(self, rows: Iterable) -> None:
        self._rows = rows
        self.name = type(rows).__name__
        fingerprint = getattr(rows, "_fingerprint", None)  # a map-style datasets.Dataset
        if fingerprint:
            self.name = f"Dataset {fingerprint}"
        self.identity = self.name
        try:
            self.length = len(rows)  # type: ignore[arg-type]
        except TypeError:
            self.length = None

    def rows(self, start: int = 0) -> Iterator[SourceRow]:
        rows: Iterable = self._rows
        if self.length is not None and start >= self.length:  # (Dataset.skip refuses to skip every row)
            return
        if start and hasattr(rows, "skip"):  # datasets: skip without decoding (IterableDataset, Dataset)
            rows = rows.skip(start)
        elif start:
            rows = itertools.islice(rows, start, None)
        for index, fields in enumerate(rows, start):
            if isinstance(fields, dict):
                yield SourceRow(index, f"row {index}", fields)
            else:
                yield SourceRow(index, f"row {index}", None,
                                f"row {index}: expected a dict of fields, got {type(fields).__name__}")
