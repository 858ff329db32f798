"""How often a positive scores above a negative: the one definition that the benchmarks' statistics
(:mod:`dialeval.evaluation.stats`) and the training recipes' validation share. A module of its own, below both, so
that a recipe needs neither the benchmark builders nor ``datasets`` to validate (a prepared run trains without
them)."""

from __future__ import annotations

import numpy as np
from scipy import stats as sps

__all__ = ["auc", "win_share"]


def win_share(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """The share of a comparison a positive wins against a negative, elementwise (broadcasting): 1 where
    ``pos > neg``, one half on ties, 0 otherwise. Its mean over pairs is a pairwise accuracy; over all pairs of two
    pooled sets it is their :func:`auc`."""
    return (np.asarray(pos) > np.asarray(neg)) + 0.5 * (np.asarray(pos) == np.asarray(neg))


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """P(a positive scores above a negative), ties 0.5: the mean :func:`win_share` over all (positive, negative)
    pairs, computed from the ranks of the pooled scores (Mann-Whitney U) in O(n log n) instead of O(n m)."""
    ranks = sps.rankdata(np.concatenate([pos, neg]))
    return float((ranks[: pos.size].sum() - pos.size * (pos.size + 1) / 2) / (pos.size * neg.size))
