"""Writing scored rows as they come, so that a stopped run resumes where it stopped.

The output is JSONL (any suffix but ``.csv``) or CSV. Beside it, ``<output>.dialeval.json`` (the *manifest*)
records the score signature, the run's settings, how many rows and bytes of the output are complete, and running
totals. Each chunk of rows is appended and flushed to disk before the manifest is replaced (atomically), so after a
kill at any moment the manifest describes a prefix of the output. A restart truncates the output to that prefix and
goes on from the next input row: every row is written exactly once, in input order.

A restart is refused, with the reason, when the manifest's signature differs from the new run's (scores of two
checkpoints or settings never share a file), when the run's settings differ (metric, input), and
when the output exists without a manifest or is shorter than its manifest says; ``overwrite=True`` starts afresh.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import DialevalError, InputError

__all__ = ["MANIFEST_SUFFIX", "OutputConflict", "ResultWriter", "Totals", "manifest_path"]

MANIFEST_SUFFIX = ".dialeval.json"
MANIFEST_FORMAT = 1
#: the columns a result adds to an input row (``skipped_reason`` and ``error`` only where they apply)
RESULT_COLUMNS = ("score", "skipped_reason", "error")


class OutputConflict(DialevalError):
    """An output that this run may not continue: another signature or other settings, or not a resumable output."""


def manifest_path(output: Path) -> Path:
    return output.with_name(output.name + MANIFEST_SUFFIX)


@dataclass
class Totals:
    """Counts over every row written so far (across resumed runs), the running sum behind the system score, and the
    wall seconds spent reading, scoring and writing them (model loading not included)."""

    rows: int = 0
    scored: int = 0
    skipped: int = 0
    failed: int = 0
    score_sum: float = 0.0
    seconds: float = 0.0

    def add(self, row: dict[str, Any]) -> None:
        self.rows += 1
        if row.get("score") is not None:
            self.scored += 1
            self.score_sum += row["score"]  # one row at a time, in input order: the same sum however it was chunked
        elif "error" in row:
            self.failed += 1
        else:
            self.skipped += 1

    @property
    def system_score(self) -> float:
        return self.score_sum / self.scored if self.scored else math.nan


class ResultWriter:
    """Appends scored rows to ``path`` in input order and keeps its manifest (see the module docstring)."""

    def __init__(self, path: str | os.PathLike, *, signature: str, run: dict[str, Any], overwrite: bool = False
                 ) -> None:
        self.path = Path(path)
        self.manifest = manifest_path(self.path)
        self.signature, self.run = signature, run
        self.csv = self.path.suffix.lower() == ".csv"
        self.totals, self.columns, self.bytes, self.complete = Totals(), None, 0, False
        self.level: str | None = None
        if overwrite:
            self.path.unlink(missing_ok=True)
            self.manifest.unlink(missing_ok=True)
        if self.manifest.exists():
            self._resume()
        elif self.path.exists():
            raise OutputConflict(f"{self.path} exists and was not written by a resumable dialeval run (it has no "
                                 f"{self.manifest.name}); pass --overwrite (overwrite=True) to replace it, or choose "
                                 "another output")
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_bytes(b"")
            self._save()

    @property
    def rows_done(self) -> int:
        """Input rows already written: the next run starts at this row."""
        return self.totals.rows

    def _resume(self) -> None:
        try:
            state = json.loads(self.manifest.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise OutputConflict(f"{self.manifest} cannot be read ({err}); pass --overwrite to start again") from None
        if state.get("signature") != self.signature:
            raise OutputConflict(
                f"{self.path} holds scores with signature {state.get('signature')!r}, and this run's signature is "
                f"{self.signature!r}; scores of two checkpoints or settings are never mixed in one file: choose "
                "another output, or pass --overwrite to score it all again")
        differing = sorted(k for k in set(state.get("run", {})) | set(self.run)
                           if state.get("run", {}).get(k) != self.run.get(k))
        if differing:
            was = {k: state.get("run", {}).get(k) for k in differing}
            now = {k: self.run.get(k) for k in differing}
            raise OutputConflict(f"{self.path} was written by a run with {was}, and this run has {now}; run it "
                                 "with the same arguments to continue, or pass --overwrite to start again")
        size = self.path.stat().st_size if self.path.exists() else 0
        if size < state["bytes"]:
            raise OutputConflict(f"{self.path} has {size} bytes but its manifest says {state['bytes']} were written; "
                                 "the file was changed by something else: pass --overwrite to start again")
        if size > state["bytes"]:  # the torn tail of a chunk that was being written when the run stopped
            with open(self.path, "r+b") as fh:
                fh.truncate(state["bytes"])
        self.totals = Totals(**state["totals"])
        self.columns, self.bytes, self.complete = state.get("columns"), state["bytes"], state["complete"]
        self.level = state.get("level")

    def append(self, rows: list[dict[str, Any]], wheres: list[str], *, seconds: float, level: str | None = None
               ) -> None:
        """Write ``rows`` (the next rows in input order; ``wheres`` names each for errors) and record them, with the
        ``seconds`` they took and their ``level`` ("turn" or "dialogue")."""
        self.level = self.level or level
        if self.csv:
            data = self._csv_text(rows, wheres)
        else:
            data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        with open(self.path, "ab") as fh:
            fh.write(data.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        self.bytes += len(data.encode("utf-8"))
        for row in rows:
            self.totals.add(row)
        self.totals.seconds = round(self.totals.seconds + seconds, 4)
        self._save()

    def finish(self) -> None:
        self.complete = True
        self._save()

    def _csv_text(self, rows: list[dict[str, Any]], wheres: list[str]) -> str:
        buffer = io.StringIO(newline="")
        if self.columns is None:  # the first rows fix the header
            inputs = dict.fromkeys(k for r in rows for k in r if k not in RESULT_COLUMNS)
            self.columns = [*inputs, *RESULT_COLUMNS]
            csv.writer(buffer).writerow(self.columns)
        writer = csv.DictWriter(buffer, fieldnames=self.columns)
        for row, where in zip(rows, wheres):
            extra = [k for k in row if k not in self.columns]
            if extra:
                raise InputError(f"{where}: field '{extra[0]}' is not among the CSV output's columns, which the "
                                 f"first rows fixed ({', '.join(self.columns)}); write JSONL output (.jsonl) instead")
            writer.writerow({k: json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else v
                             for k, v in row.items()})
        return buffer.getvalue()

    def _save(self) -> None:
        state = {"format": MANIFEST_FORMAT, "signature": self.signature, "run": self.run, "bytes": self.bytes,
                 "columns": self.columns, "level": self.level, "complete": self.complete, "totals": asdict(self.totals)}
        tmp = self.manifest.with_name(self.manifest.name + ".tmp")
        tmp.write_text(json.dumps(state, indent=1), encoding="utf-8")
        os.replace(tmp, self.manifest)
