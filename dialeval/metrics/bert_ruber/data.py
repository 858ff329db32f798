"""Training data of the RUBER-style heads: (context, response) pairs from DailyDialog and random negatives.

A *pair* is a response turn of a dialogue with the ``context_turns`` turns before it (every turn after the first
gives one pair; duplicate pairs are kept once, in corpus order). The context is read as one text: the turns joined
with a space (:func:`context_text`, the same function the scorers use).

Negatives are responses of *other* pairs: responses are identified by their text (one id per distinct text), and a
sampler never returns the gold response's id, so a negative is never the gold text itself.

A prepared run stores its pairs in one gzip JSON file (:func:`save_pairs`): every distinct turn text once, and each
pair as the ids of its context turns followed by its response's id.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Pair:
    context: tuple[str, ...]
    response: str


def context_text(turns: Sequence[str], context_turns: int) -> str:
    """The last ``context_turns`` turns joined with a space (what the encoder reads as the context)."""
    if context_turns < 1:
        raise ValueError(f"context_turns must be >= 1, got {context_turns}")
    if not turns:
        raise ValueError("a context needs at least one turn")
    return " ".join(turns[-context_turns:])


def dialogue_pairs(dialogues: Sequence[Sequence[str]], context_turns: int) -> list[Pair]:
    """Every (previous ``context_turns`` turns, turn) pair of the dialogues, duplicates removed, in corpus order."""
    seen: dict[Pair, None] = {}
    for turns in dialogues:
        turns = [t.strip() for t in turns]
        for t in range(1, len(turns)):
            if not turns[t] or not any(turns[max(0, t - context_turns):t]):
                continue
            pair = Pair(tuple(turns[max(0, t - context_turns):t]), turns[t])
            seen.setdefault(pair, None)
    return list(seen)


def subsample(pairs: list[Pair], limit: int | None, seed: int) -> list[Pair]:
    """At most ``limit`` pairs chosen with ``seed``, kept in corpus order (all of them when ``limit`` is None)."""
    if limit is None or limit >= len(pairs):
        return list(pairs)
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    keep = np.sort(np.random.default_rng(seed).choice(len(pairs), size=limit, replace=False))
    return [pairs[i] for i in keep]


def dailydialog_pairs(split: str, *, context_turns: int, limit: int | None, seed: int,
                      data_dir: str | None = None) -> list[Pair]:
    """The pairs of a DailyDialog split (reads the data directory; imports ``datasets``)."""
    from ...benchmarks import load_benchmark

    dialogues = load_benchmark("dailydialog", split=split, data_dir=data_dir)["utterances"]
    return subsample(dialogue_pairs(dialogues, context_turns), limit, seed)


def save_pairs(path: str | Path, splits: Mapping[str, Sequence[Pair]]) -> None:
    """Write the pairs of each split into one gzip JSON file: ``{"texts": [...], "pairs": {split: [[context ids...,
    response id], ...]}}`` (texts stored once; the bytes depend only on the pairs)."""
    table: dict[str, int] = {}
    body = {split: [[table.setdefault(t, len(table)) for t in (*p.context, p.response)] for p in pairs]
            for split, pairs in splits.items()}
    text = json.dumps({"texts": list(table), "pairs": body}, ensure_ascii=False, separators=(",", ":"))
    with open(path, "wb") as fh, gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0) as gz:
        gz.write(text.encode("utf-8"))


def read_pairs(path: str | Path) -> dict[str, list[Pair]]:
    """The pairs of each split written by :func:`save_pairs`."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    texts = data["texts"]
    return {split: [Pair(tuple(texts[i] for i in ids[:-1]), texts[ids[-1]]) for ids in rows]
            for split, rows in data["pairs"].items()}


def response_ids(pairs: Sequence[Pair]) -> tuple[np.ndarray, list[str]]:
    """(id of each pair's response, the distinct response texts in first-seen order)."""
    ids: dict[str, int] = {}
    out = np.fromiter((ids.setdefault(p.response, len(ids)) for p in pairs), dtype=np.int64, count=len(pairs))
    return out, list(ids)


def uniform_negatives(gold_ids: np.ndarray, pool_size: int, rng: np.random.Generator) -> np.ndarray:
    """One response id per gold id, uniform over the pool without the gold id itself."""
    if pool_size < 2:
        raise ValueError(f"a negative pool needs at least 2 distinct responses, got {pool_size}")
    draw = rng.integers(0, pool_size - 1, size=len(gold_ids))
    return draw + (draw >= gold_ids)  # skip the gold id
