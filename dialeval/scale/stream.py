"""Scoring an input of any size: read it in chunks, score each chunk, write it before reading the next, resume a
stopped run, and share the rows among processes.

* :func:`score_stream` scores a source (a file path, a ``datasets`` dataset, an iterable of dicts; see
  :mod:`dialeval.scale.sources`) into a JSONL or CSV output that a restart with the same arguments continues
  (:mod:`dialeval.scale.output`). Memory is bounded by ``chunk_size``, not by the input.
* :func:`iter_scored` yields the scored chunks, in input order, for callers that keep the results themselves.

**Rows.** A row holds ``context`` and ``response`` (and ``references``, or ``reference``) or ``dialogue``, in any
form :mod:`dialeval.schema` accepts; the first row read decides between pairs and dialogues, and whether
references are read. Each output row is the input row with ``score`` (``None`` when the row has none),
``skipped_reason`` (an empty turn under ``empty_turns="skip"``) or ``error`` (a bad row under ``on_error="skip"``);
an input row's own fields of those names are replaced.

**Bad rows.** A row that cannot be read or validated stops the run (``on_error="stop"``) with an
:class:`~dialeval.errors.InputError` naming ``file:line`` and the field, once every row before it is written;
``on_error="skip"`` records it as failed, with the reason, and goes on.

**Processes.** Under ``accelerate launch`` (or ``torchrun``) every process reads the input, scores every n-th valid
row of each chunk on its own device, and the chunk's scores are gathered back into input order; only the main
process writes. Every forward pass of a learned metric has a fixed row count and batches never mix lengths
(:mod:`dialeval.backbone.batching`), so a row's score does not depend on which rows share its process: the scores
equal a single process's exactly.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..backbone.batching import may_show, progress
from ..backbone.device import process_state
from ..errors import DialevalError, InputError, InputFileError, UnknownNameError
from ..schema import check_empty_turns, normalize_dialogues, normalize_items
from ..scoring.base import Scorer, quiet_truncation
from ..scoring.scales import DEFAULT_SCALE, with_scale
from .output import RESULT_COLUMNS, OutputConflict, ResultWriter, Totals
from .sources import SourceRow, open_source

__all__ = ["DEFAULT_CHUNK_ROWS", "ON_ERROR_POLICIES", "ScoredChunk", "StreamResult", "iter_scored", "score_stream"]

#: what to do with a row that cannot be read or validated: stop the run, or record it as failed and go on
ON_ERROR_POLICIES = ("stop", "skip")
#: rows read, scored and written together; memory grows with this, never with the input
DEFAULT_CHUNK_ROWS = 1024


@dataclass
class ScoredChunk:
    """Consecutive input rows with their results, in input order."""

    rows: list[dict[str, Any]]
    #: where each row is in the input (``file:line``, ``row n``)
    wheres: list[str]
    #: the scorer's metadata for the chunk, one dict per process that scored rows (counts only, no per-item lists)
    metadata: list[dict[str, Any]]
    #: "turn" (context-response pairs) or "dialogue", as the first row decided; None while no row was valid
    level: str | None = None


@dataclass
class StreamResult:
    """What a :func:`score_stream` run produced: totals over the whole output (rows written by earlier, stopped
    runs included), the signature, and the metadata of the chunks this run scored."""

    output: Path | None
    totals: Totals
    signature: str
    #: rows that were already written when this run started (0 for a fresh run)
    resumed_from: int
    metadata: list[dict[str, Any]] = field(default_factory=list)
    #: "turn" or "dialogue" (None when no row was valid)
    level: str | None = None

    @property
    def system_score(self) -> float:
        return self.totals.system_score


# -- rows -> scorer inputs -------------------------------------------------------------------------------------------
_FIELD = {"contexts": "context", "responses": "response", "references": "references", "dialogues": "dialogue"}


def _field_message(message: str, index: int = 0) -> str:
    """A schema message about item ``index`` of a call (``responses[0] has type int``) told about the row's field
    (``field 'response' has type int``): the row's place in the input is named by the caller."""
    def name(m: re.Match) -> str:
        entry = f", entry {m.group(2)}" if m.group(2) is not None else ""
        return f"field '{_FIELD[m.group(1)]}'{entry}"

    return re.sub(rf"\b(contexts|responses|references|dialogues)\[{index}\](?:\[(\d+)\])?", name, message)


class RowParser:
    """Turns row fields into one scorer input; the first row it accepts fixes the level and whether references are
    read, and every later row must match."""

    def __init__(self, scorer: Scorer, empty_turns: str) -> None:
        self.scorer, self.empty_turns = scorer, empty_turns
        self.level: str | None = None
        self.with_references: bool | None = None
        self.first_where: str | None = None

    def parse(self, fields: dict[str, Any], where: str) -> Any:
        """The row's input (a dialogue, or a (context, response, references) triple); InputError naming the field."""
        level = "dialogue" if "dialogue" in fields else "turn"
        refs_key = next((k for k in ("references", "reference") if k in fields), None)
        if self.level is None:
            if level == "turn":
                missing = [k for k in ("context", "response") if k not in fields]
                if missing:
                    raise InputError(f"{where}: no '{missing[0]}' field; a row holds 'context' and 'response' (and "
                                     f"'references'), or 'dialogue'; it has {sorted(fields)}")
            self.level, self.with_references, self.first_where = level, refs_key is not None, where
        if level != self.level:
            raise InputError(f"{where}: the row has {'a' if level == 'dialogue' else 'no'} 'dialogue' field, "
                             f"unlike the first row ({self.first_where}); one run scores either dialogues or pairs")
        if self.level == "dialogue":
            try:
                normalize_dialogues([fields["dialogue"]], min_turns=2, empty_turns=self.empty_turns)
            except InputError as err:
                raise InputError(f"{where}: {_field_message(str(err))}") from None
            return fields["dialogue"]
        for key in ("context", "response"):
            if key not in fields:
                raise InputError(f"{where}: no '{key}' field")
        if (refs_key is not None) != self.with_references:
            has = "has" if refs_key else "has no"
            raise InputError(f"{where}: the row {has} a 'references' field, unlike the first row ({self.first_where})"
                             "; every row of a run has references, or none does")
        if self.scorer.requires_references and refs_key is None:
            raise InputError(f"{where}: no 'references' field; {self.scorer.missing_references()}")
        refs = [fields[refs_key]] if refs_key else None
        try:
            normalize_items([fields["context"]], [fields["response"]], refs, empty_turns=self.empty_turns)
        except InputError as err:
            raise InputError(f"{where}: {_field_message(str(err))}") from None
        return fields["context"], fields["response"], fields[refs_key] if refs_key else None


@dataclass
class ParsedRows:
    """What :func:`parse_rows` made of consecutive rows, by position among them: the input of each valid row, the
    message of each bad row recorded under ``on_error="skip"``, and ``stop``, the position and message of the bad
    row that ends the run (under ``"stop"``, or a row past which the input cannot be read); rows after it are not
    parsed."""

    inputs: dict[int, Any] = field(default_factory=dict)
    errors: dict[int, str] = field(default_factory=dict)
    stop: tuple[int, str] | None = None


def parse_rows(parser: RowParser, rows: Sequence[SourceRow], on_error: str) -> ParsedRows:
    """Each row's scorer input, or why it has none (see :class:`ParsedRows`)."""
    parsed = ParsedRows()
    for pos, row in enumerate(rows):
        try:
            if row.error is not None:
                raise InputError(row.error)
            parsed.inputs[pos] = parser.parse(row.fields, row.where)
        except InputError as err:
            if on_error == "stop" or row.fatal:
                parsed.stop = (pos, str(err))
                break
            parsed.errors[pos] = str(err)
    return parsed


def score_inputs(scorer: Scorer, level: str, inputs: list, *, batch_size: int, empty_turns: str,
                 scale: str = DEFAULT_SCALE, progress_bar: bool | None = False
                 ) -> tuple[list[float | None], list[str | None], dict[str, Any]]:
    """Scores (on ``scale``), skip reasons and compact metadata of parsed ``inputs`` (all of one ``level``), in
    order; ``progress_bar`` as in :meth:`Scorer.score` (the scorer's stages, batch by batch). The scorer's
    truncation warning is held back (a run says it once, from ``n_truncated_items``)."""
    common = {"batch_size": batch_size, "progress_bar": progress_bar, "empty_turns": empty_turns, "scale": scale}
    with quiet_truncation():  # what a run cut is said once, at its end, from the counts (dialeval score)
        if level == "dialogue":
            out = scorer.score_dialogues(dialogues=inputs, **common)
        else:
            contexts, responses, references = (list(column) for column in zip(*inputs))
            out = scorer.score(contexts=contexts, responses=responses,
                               references=None if references[0] is None else references, **common)
    reasons = {s["index"]: s["reason"] for s in out.metadata.get("skipped", ())}
    compact = {k: v for k, v in out.metadata.items() if not isinstance(v, (list, dict, tuple))}
    compact["n_skipped"] = len(reasons)
    if "truncated_items" in out.metadata:
        compact["n_truncated_items"] = len(out.metadata["truncated_items"])
    return out.scores, [_field_message(reasons[i], i) if i in reasons else None for i in range(len(inputs))], compact


# -- the stream ------------------------------------------------------------------------------------------------------
def check_policies(empty_turns: str, on_error: str, chunk_size: int) -> None:
    check_empty_turns(empty_turns)
    if on_error not in ON_ERROR_POLICIES:
        raise UnknownNameError("on_error policy", on_error, ON_ERROR_POLICIES)
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise InputError(f"chunk_size must be a positive integer, got {chunk_size!r}")


def iter_scored(
    scorer: Scorer,
    source: Any,
    *,
    start: int = 0,
    chunk_size: int = DEFAULT_CHUNK_ROWS,
    batch_size: int = 32,
    empty_turns: str = "error",
    on_error: str = "stop",
    turn_separator: str | None = None,
    scale: str = DEFAULT_SCALE,
    progress_bar: bool | None = False,
) -> Iterator[ScoredChunk]:
    """Scored chunks of ``source`` from row ``start`` on, in input order (see the module docstring), scored on
    ``scale`` (:mod:`dialeval.scoring.scales`).

    ``progress_bar`` (the main process's only; see :func:`~dialeval.backbone.batching.progress`): a bar of the rows,
    with their total where the source knows it, that advances per chunk, and under it the bar of each stage of the
    chunk's scoring, labelled ``<metric>: <stage>``, that advances per batch.

    Under ``on_error="stop"`` a bad row ends the iteration with an :class:`InputError` naming it, right after the
    chunk that holds the rows before it.
    """
    check_policies(empty_turns, on_error, chunk_size)
    state = process_state()
    parser = RowParser(scorer, empty_turns)
    src = open_source(source, turn_separator=turn_separator)
    rows = src.rows(start)
    enabled = progress_bar if state.is_main_process else False
    # a JSONL file's rows are counted for the bar's total only where a bar can appear
    total = src.length if may_show(enabled) else None
    bar = progress(iter(()), total=None if total is None else max(total - start, 0), enabled=enabled,
                   desc=f"{scorer.name}: rows")
    try:
        for chunk in _scored_chunks(scorer, src, rows, parser, state, chunk_size=chunk_size, batch_size=batch_size,
                                    empty_turns=empty_turns, on_error=on_error, scale=scale, start=start,
                                    progress_bar=enabled):
            bar.update(len(chunk.rows))
            yield chunk
    finally:
        bar.close()


def _scored_chunks(scorer: Scorer, src, rows: Iterator[SourceRow], parser: RowParser, state, *, chunk_size: int,
                   batch_size: int, empty_turns: str, on_error: str, scale: str, start: int,
                   progress_bar: bool | None) -> Iterator[ScoredChunk]:
    """The body of :func:`iter_scored`: each chunk read, scored (its stages' bars as ``progress_bar`` says) and
    gathered."""
    errors_seen = False
    while True:
        chunk: list[SourceRow] = list(itertools.islice(rows, chunk_size))
        if not chunk:
            if start == 0 and parser.first_where is None and not errors_seen:
                raise InputFileError(f"{src.name} has no rows; expected one JSON object (or CSV or Parquet row) "
                                     "per item")
            return
        parsed = parse_rows(parser, chunk, on_error)
        inputs, errors, stop = parsed.inputs, parsed.errors, parsed.stop
        errors_seen = errors_seen or bool(errors)
        if stop is not None:
            chunk = chunk[:stop[0]]
        # every process parsed the whole chunk; each scores every n-th valid row, and the results are gathered
        valid = sorted(inputs)
        mine = valid[state.process_index::state.num_processes]
        results: list[tuple[int, float | None, str | None]] = []
        metadata: list[dict[str, Any]] = []
        if mine:
            scores, reasons, meta = score_inputs(scorer, parser.level, [inputs[p] for p in mine],
                                                 batch_size=batch_size, empty_turns=empty_turns, scale=scale,
                                                 progress_bar=progress_bar)
            results, metadata = list(zip(mine, scores, reasons)), [meta]
        if state.num_processes > 1:
            from accelerate.utils import gather_object

            gathered = gather_object([(results, metadata)])
            results = [r for part, _ in gathered for r in part]
            metadata = [m for _, metas in gathered for m in metas]
        by_pos = {pos: (score, reason) for pos, score, reason in results}
        out_rows = []
        for pos, row in enumerate(chunk):
            out = {k: v for k, v in (row.fields or {}).items() if k not in RESULT_COLUMNS}
            if pos in errors:
                out.update(score=None, error=errors[pos])
            else:
                score, reason = by_pos[pos]
                out["score"] = score
                if reason is not None:
                    out["skipped_reason"] = reason
            out_rows.append(out)
        if out_rows:
            yield ScoredChunk(out_rows, [r.where for r in chunk], metadata, parser.level)
        if stop is not None:
            raise InputError(stop[1])


def score_stream(
    scorer: Scorer,
    source: Any,
    output: str | Path | None = None,
    *,
    chunk_size: int = DEFAULT_CHUNK_ROWS,
    batch_size: int = 32,
    empty_turns: str = "error",
    on_error: str = "stop",
    overwrite: bool = False,
    turn_separator: str | None = None,
    progress_bar: bool | None = None,
    scale: str = DEFAULT_SCALE,
) -> StreamResult:
    """Score ``source`` into ``output`` (JSONL, or CSV by its suffix), chunk by chunk; see the module docstring.

    Run again with the same arguments after a stop, it goes on from the first row not written. With
    ``output=None`` nothing is written and the result holds the totals only (use :func:`iter_scored` to keep rows).
    """
    check_policies(empty_turns, on_error, chunk_size)
    state = process_state()
    src = open_source(source, turn_separator=turn_separator)
    signature = with_scale(scorer.signature, scale)
    writer, start, problem = None, 0, None
    if output is not None and state.is_main_process:
        # the policies are not part of it: rows already written are the same under any of them, and a run stopped
        # by a bad row is meant to go on under --on-error skip or --empty-turns skip
        run = {"metric": scorer.name, "input": src.identity}
        try:
            writer = ResultWriter(output, signature=signature, run=run, overwrite=overwrite)
            start = -1 if writer.complete else writer.rows_done
        except DialevalError as err:
            problem = err
    if state.num_processes > 1:  # every process learns where to start, or why not to
        from accelerate.utils import broadcast_object_list

        start, message = broadcast_object_list([start, None if problem is None else str(problem)])
        if message is not None and problem is None:
            problem = OutputConflict(message)
    if problem is not None:
        raise problem
    totals = writer.totals if writer is not None else Totals()
    result = StreamResult(Path(output) if output is not None else None, totals, signature,
                          resumed_from=totals.rows, level=writer.level if writer is not None else None)
    if start == -1:  # the output is complete already
        return result
    tick = time.perf_counter()
    try:
        for chunk in iter_scored(scorer, src, start=start, chunk_size=chunk_size, batch_size=batch_size,
                                 empty_turns=empty_turns, on_error=on_error, scale=scale, progress_bar=progress_bar):
            # wall seconds since the last chunk was handed over: reading, scoring and the previous write
            now = time.perf_counter()
            seconds, tick = now - tick, now
            result.level = result.level or chunk.level
            if writer is not None:
                writer.append(chunk.rows, chunk.wheres, seconds=seconds, level=chunk.level)
            elif output is None:
                for row in chunk.rows:
                    totals.add(row)
                totals.seconds = round(totals.seconds + seconds, 4)
            result.metadata.extend(chunk.metadata)
    except InputError as err:
        if output is None:
            raise
        raise InputError(f"{err} (every row before it is in {output}; fix the row and run the same command again to "
                        "go on from it, or pass --on-error skip to record bad rows as failed)") from None
    if writer is not None:
        writer.finish()
    return result

