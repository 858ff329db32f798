"""Seeded perturbations of replies and dialogues: the sanity checks a metric must pass
(:mod:`dialeval.benchmarks.sanity`), and DynaEval's neighbour swaps. A leaf module (numpy; ``bm25s`` only when
:class:`SimilarTexts` is built), so training code can use it without importing the benchmark builders.

Every function takes the text (or the turn texts) and a ``numpy`` generator and returns the perturbed copy, or
``None`` when the input cannot be perturbed in that way (too short, nothing that would change). A perturbed copy
always differs from its input. Words are whitespace-separated tokens, punctuation attached, as a reader sees them.

:class:`SimilarTexts` finds the text of a pool most similar to a query by BM25 (``bm25s``, Lucene variant), leaving
out texts of the query's own dialogue and texts the caller names: a hard negative that shares the words of the
gold reply (or of the utterance it replaces) but comes from another conversation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

#: Share of the words that ``drop_words`` removes (at least one word; at least two words are kept).
DROP_SHARE = 0.4
#: Draws before a shuffle that changes nothing is given up.
_ATTEMPTS = 16


def same_text(a: str, b: str) -> bool:
    """Equal once case and surrounding space are ignored."""
    return a.strip().lower() == b.strip().lower()


def _reordered(items: list, rng: np.random.Generator) -> list | None:
    """``items`` in a random order that differs from theirs; None with fewer than two distinct items (or when
    :data:`_ATTEMPTS` draws all gave the same order back)."""
    if len(set(items)) < 2:
        return None
    for _ in range(_ATTEMPTS):
        out = [items[i] for i in rng.permutation(len(items))]
        if out != items:
            return out
    return None


def shuffle_words(text: str, rng: np.random.Generator) -> str | None:
    """The words of ``text`` in a random order; None with fewer than two distinct words."""
    out = _reordered(text.split(), rng)
    return None if out is None else " ".join(out)


def drop_words(text: str, rng: np.random.Generator, share: float = DROP_SHARE) -> str | None:
    """``text`` without ``round(share * n)`` (at least one) of its ``n`` words, chosen at random, order kept; None
    when fewer than two words would be left."""
    words = text.split()
    k = max(1, round(share * len(words)))
    if len(words) - k < 2:
        return None
    dropped = set(rng.choice(len(words), size=k, replace=False).tolist())
    return " ".join(w for i, w in enumerate(words) if i not in dropped)


def truncate_words(text: str) -> str | None:
    """The first half of the words of ``text`` (rounded down); None with fewer than four words."""
    words = text.split()
    if len(words) < 4:
        return None
    return " ".join(words[: len(words) // 2])


def shuffle_turns(turns: Sequence[str], rng: np.random.Generator) -> list[str] | None:
    """The turn texts in a random order (speakers stay with positions); None when no order changes the texts."""
    return _reordered(list(turns), rng)


def swap_adjacent(turns: Sequence, rng: np.random.Generator, key: Callable[[Any], str] | None = None) -> list | None:
    """Two neighbouring turns with different texts swapped, at a random place; None when every neighbour is equal.
    ``key`` maps a turn to its text when the turns are not texts themselves (e.g. ids into a text table)."""
    text = key or (lambda t: t)
    places = [i for i in range(len(turns) - 1) if text(turns[i]) != text(turns[i + 1])]
    if not places:
        return None
    i = places[int(rng.integers(len(places)))]
    out = list(turns)
    out[i], out[i + 1] = out[i + 1], out[i]
    return out


def repeat_speaker(turns: Sequence[str], speakers: Sequence[int]) -> list[str] | None:
    """Every turn of the speaker of the second turn replaced by that speaker's first turn (a system stuck repeating
    itself); None when the dialogue has fewer than two turns or that speaker never says anything else."""
    if len(turns) != len(speakers):
        raise ValueError(f"{len(turns)} turns but {len(speakers)} speakers")
    if len(turns) < 2:
        return None
    who = speakers[1]
    positions = [i for i, s in enumerate(speakers) if s == who]
    first = turns[positions[0]]
    if all(turns[i] == first for i in positions):
        return None
    out = list(turns)
    for i in positions:
        out[i] = first
    return out


class SimilarTexts:
    """BM25 over a pool of texts, each owned by a dialogue; :meth:`most_similar` returns the best-scoring text of
    another dialogue that equals none of the excluded texts (case and surrounding space ignored)."""

    def __init__(self, pool: Sequence[str], owners: Sequence[int]) -> None:
        import bm25s

        if len(pool) != len(owners):
            raise ValueError(f"{len(pool)} texts but {len(owners)} owners")
        self.pool = list(pool)
        self.owners = np.asarray(owners)
        self._bm25s = bm25s
        self._retriever = bm25s.BM25(method="lucene")
        self._retriever.index(bm25s.tokenize(self.pool, stopwords="en", show_progress=False), show_progress=False)

    def ranked(self, query: str, *, owner: int | None = None) -> np.ndarray:
        """Pool indices of the texts that share a term with ``query`` (and are not ``owner``'s), best first; ties
        by pool order, so the ranking is deterministic."""
        tokens = self._bm25s.tokenize([query], stopwords="en", show_progress=False, return_ids=False)[0]
        if not tokens:
            return np.zeros(0, dtype=np.int64)
        scores = self._retriever.get_scores(tokens)
        keep = scores > 0 if owner is None else (scores > 0) & (self.owners != owner)
        hits = np.flatnonzero(keep)
        return hits[np.lexsort((hits, -scores[hits]))]

    def most_similar(self, query: str, *, owner: int, exclude: Sequence[str] = ()) -> str | None:
        for k in self.ranked(query, owner=owner):
            text = self.pool[int(k)]
            if not any(same_text(text, e) for e in (query, *exclude)):
                return text
        return None
