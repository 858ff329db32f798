"""Scoring on many machines with Ray Data: a scorer actor per worker, each loading its model once.

::

    import ray
    from dialeval.scale.ray_data import score_ray_dataset

    ray.init()                                          # or ray.init(address="auto") on a cluster
    rows = ray.data.read_json("responses.jsonl")       # context, response (references) or dialogue; and an id
    scored = score_ray_dataset(rows, "grade", concurrency=8, num_gpus=1)
    scored.write_parquet("scores/")

Rows have the fields :func:`dialeval.scale.score_stream` reads; the result is the input with ``score``,
``skipped_reason`` and ``error`` columns (``None`` where they do not apply). Every forward pass of a learned metric has
a fixed shape (:mod:`dialeval.backbone.batching`), so a row's score is the same whichever actor and batch it lands in,
and equal to a single process's at the same CPU thread count (``threads``; :mod:`dialeval.backbone.device`); the dataset keeps its row order (``preserve_order`` is set on its context). Ray has
no row numbers: an error names a row by its ``id`` field, so give rows one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backbone.device import set_torch_threads
from ..errors import InputError
from ..scoring.registry import load_scorer
from .sources import SourceRow
from .stream import RowParser, check_policies, parse_rows, score_inputs

__all__ = ["ScorerActor", "score_ray_dataset"]


def _plain(value: Any) -> Any:
    """A value from an Arrow-backed pandas batch as plain Python: arrays become lists, recursively."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


class ScorerActor:
    """Loads one scorer; called with a pandas batch of rows, returns it with the result columns."""

    def __init__(self, metric: str, scorer_kwargs: dict[str, Any], batch_size: int, empty_turns: str,
                 on_error: str, threads: int | None = None) -> None:
        set_torch_threads(threads)  # an actor is a process of its own
        self.scorer = load_scorer(metric, **scorer_kwargs)
        self.parser = RowParser(self.scorer, empty_turns)
        self.batch_size, self.empty_turns, self.on_error = batch_size, empty_turns, on_error

    def __call__(self, batch):
        records = [{k: _plain(v) for k, v in r.items()} for r in batch.to_dict("records")]
        rows = [SourceRow(index=pos, fields=fields,
                          where=f"row id={fields['id']!r}" if "id" in fields else "a row without an 'id' field")
                for pos, fields in enumerate(records)]
        parsed = parse_rows(self.parser, rows, self.on_error)
        if parsed.stop is not None:
            raise InputError(parsed.stop[1])
        inputs, errors = parsed.inputs, parsed.errors
        scores: list[float | None] = [None] * len(records)
        reasons: list[str | None] = [None] * len(records)
        if inputs:
            kept = sorted(inputs)
            got, why, _ = score_inputs(self.scorer, self.parser.level, [inputs[p] for p in kept],
                                       batch_size=self.batch_size, empty_turns=self.empty_turns)
            for pos, score, reason in zip(kept, got, why):
                scores[pos], reasons[pos] = score, reason
        out = batch.copy()
        out["score"] = scores
        out["skipped_reason"] = reasons
        out["error"] = [errors.get(pos) for pos in range(len(records))]
        return out


def score_ray_dataset(
    dataset,
    metric: str,
    *,
    checkpoint: str | None = None,
    scorer_options: dict[str, Any] | None = None,
    batch_size: int = 32,
    rows_per_call: int = 1024,
    concurrency: int = 1,
    num_cpus: float = 1,
    num_gpus: float = 0,
    empty_turns: str = "error",
    on_error: str = "stop",
    threads: int | None = None,
):
    """``dataset`` (a ``ray.data.Dataset``) with ``metric``'s scores; lazy, like every Ray Data transform.

    ``concurrency`` scorer actors each get ``num_cpus`` / ``num_gpus`` and load the model once; each call scores
    ``rows_per_call`` rows in batches of ``batch_size``. ``scorer_options`` are the scorer's settings (as
    ``dialeval score --option``). ``on_error`` is one of :data:`~dialeval.scale.stream.ON_ERROR_POLICIES`.
    ``threads`` is each actor's torch CPU thread count (``None``: what Ray gives the actor's process, which
    follows ``num_cpus``); a CPU score is bit-identical to another process's at the same count.
    """
    check_policies(empty_turns, on_error, rows_per_call)
    dataset.context.execution_options.preserve_order = True
    kwargs = dict(scorer_options or {})
    if checkpoint is not None:
        kwargs["checkpoint"] = checkpoint
    from ray.data import ActorPoolStrategy

    return dataset.map_batches(
        ScorerActor,
        fn_constructor_kwargs={"metric": metric, "scorer_kwargs": kwargs, "batch_size": batch_size,
                               "empty_turns": empty_turns, "on_error": on_error, "threads": threads},
        batch_size=rows_per_call, batch_format="pandas", compute=ActorPoolStrategy(size=concurrency),
        num_cpus=num_cpus, num_gpus=num_gpus,
    )

