"""Statistics for comparing metric scores with human judgements.

Conventions
-----------
* **Inputs** are equal-length 1-D sequences of finite numbers (one value per item). Malformed input raises
  :class:`~dialeval.schema.InputError` (a :class:`ValueError`) naming the argument and, where it applies, the
  index at fault: length mismatch, a NaN/inf at index ``i``, fewer than 3 items, not 1-D, not numeric.
* **Constant input is not an error.** A correlation with a constant vector is undefined, so its ``r``, ``p`` and
  CI are NaN and the result's ``"note"`` says which input is constant (``"note"`` is ``None`` otherwise).
* **Point estimates and p-values come from scipy.stats**: ``pearsonr``, ``spearmanr`` and ``kendalltau``
  (tau-b, which handles ties). Their p-values are two-sided (H0: no association).
* **Bootstrap**: items (or contexts, for :func:`discrimination_accuracy`) are resampled with replacement using
  ``numpy.random.default_rng(seed)``; one set of resample indices is shared by every statistic in a call, so
  the coefficients (or the two metrics in :func:`compare_metrics`) are compared on the same resamples.
  Intervals are percentile intervals at level ``confidence``. Resamples on which a statistic is undefined (a
  constant resampled vector) are skipped; ``"n_boot_used"`` reports how many were kept. ``n_boot=0`` skips the
  bootstrap (CIs are NaN). Same inputs and seed give identical output.
* **Directional tests are one-sided**: :func:`williams_test` and the bootstrap p-value of
  :func:`compare_metrics` test H1 "the first metric correlates more strongly (signed) with the humans than
  the second".
* **Output** is plain Python (``float``, ``int``, ``str``, ``None``, dicts), so it serialises to JSON
  (undefined values are ``float('nan')``; quantities that do not apply are ``None``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Literal

import numpy as np
from scipy import stats as sps

from ..ranking import auc, win_share
from ..schema import InputError

__all__ = [
    "METHODS",
    "correlate",
    "correlate_groups",
    "williams_test",
    "compare_metrics",
    "relative_average_gain",
    "discrimination_accuracy",
    "across_context_auc",
    "compare_discrimination",
]

Method = Literal["pearson", "spearman", "kendall"]
METHODS: tuple[Method, ...] = ("pearson", "spearman", "kendall")

_MIN_ITEMS = 3
# Resample indices are drawn in blocks of at most this many elements (~16 MB per float array), so memory stays
# bounded for large inputs. The block size depends only on n, so results stay deterministic.
_BLOCK_ELEMENTS = 1 << 21
_NAN = float("nan")

Statistic = Callable[..., np.ndarray]


# --------------------------------------------------------------------------------------------------- validation


def _as_scores(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be numeric: {exc}") from None
    if arr.ndim != 1:
        raise InputError(f"{name} must be 1-D, got shape {arr.shape}")
    _check_finite(arr, name)
    return arr


def _check_finite(arr: np.ndarray, name: str) -> None:
    bad = np.flatnonzero(~np.isfinite(arr.ravel()))
    if bad.size:
        where = np.unravel_index(bad[0], arr.shape)
        index = int(where[0]) if arr.ndim == 1 else tuple(int(i) for i in where)
        raise InputError(f"{name} has a non-finite value ({arr[where]}) at index {index}")


def _as_paired(**named: Sequence[float] | np.ndarray) -> list[np.ndarray]:
    """Validate equal-length 1-D score vectors (at least 3 items), given as keyword arguments."""
    arrays = {name: _as_scores(v, name) for name, v in named.items()}
    lengths = {name: len(a) for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise InputError("length mismatch: " + ", ".join(f"{k} has {v}" for k, v in lengths.items()))
    n = next(iter(lengths.values()))
    if n < _MIN_ITEMS:
        raise InputError(f"need at least {_MIN_ITEMS} items to correlate, got {n}")
    return list(arrays.values())


def _check_options(n_boot: int, confidence: float) -> None:
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 0:
        raise InputError(f"n_boot must be a non-negative integer, got {n_boot!r}")
    if not 0.0 < confidence < 1.0:
        raise InputError(f"confidence must be in (0, 1), got {confidence!r}")


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}, got {method!r}")


def _constant_note(**named: np.ndarray) -> str | None:
    constant = [name for name, a in named.items() if np.ptp(a) == 0]
    if not constant:
        return None
    verb = "is" if len(constant) == 1 else "are"
    return f"{' and '.join(constant)} {verb} constant; correlations are undefined (NaN)"


# --------------------------------------------------------------------------------------------------- bootstrap


def _bootstrap(arrays: Sequence[np.ndarray], statistic: Statistic, n_boot: int,
               seed: int | None | np.random.Generator) -> np.ndarray:
    """Replicates of ``statistic`` over ``n_boot`` resamples (with replacement) of the rows of ``arrays``.

    ``seed`` may be a ``numpy.random.Generator``, used as is, so that several calls draw from one stream.

    ``statistic`` receives each array resampled to shape ``(B, len, ...)`` (one resample per row, all arrays
    indexed alike) and returns shape ``(B, k)``, NaN where undefined. Returns shape ``(n_boot, k)``.
    """
    n = len(arrays[0])
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_ELEMENTS // n)
    sizes = [min(block, n_boot - start) for start in range(0, n_boot, block)] or [0]
    reps = []
    for size in sizes:
        idx = rng.integers(0, n, size=(size, n))
        reps.append(statistic(*(a[idx] for a in arrays)))
    return np.concatenate(reps)


def _valid_rows(reps: np.ndarray) -> np.ndarray:
    """Drop resamples on which any statistic is undefined."""
    return reps[np.isfinite(reps).all(axis=1)]


def _percentile_ci(values: np.ndarray, confidence: float) -> tuple[float, float]:
    if values.size == 0:
        return _NAN, _NAN
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [alpha, 1.0 - alpha])
    return float(low), float(high)


# ------------------------------------------------------------------------------------------ correlation kernels


def _scipy_corr(method: Method, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(coefficient, two-sided p) from scipy.stats; NaN for constant input."""
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return _NAN, _NAN
    if method == "pearson":
        res = sps.pearsonr(x, y)
    elif method == "spearman":
        res = sps.spearmanr(x, y)
    else:
        res = sps.kendalltau(x, y, variant="b")
    return float(res.statistic), float(res.pvalue)


def _constant_rows(x: np.ndarray) -> np.ndarray:
    return x.max(axis=1) == x.min(axis=1)


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each row pair of 2-D ``x`` and ``y``; NaN where a row is constant."""
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    undefined = _constant_rows(x) | _constant_rows(y)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (xc * yc).sum(axis=1) / np.sqrt((xc * xc).sum(axis=1) * (yc * yc).sum(axis=1))
    r = np.clip(r, -1.0, 1.0)
    r[undefined] = np.nan
    return r


def _spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman rho of each row pair: Pearson r of the within-row average ranks."""
    return _pearson_rows(sps.rankdata(x, axis=1), sps.rankdata(y, axis=1))


def _kendall_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall tau-b of each row pair (scipy per row; O(n log n) each); NaN where a row is constant."""
    undefined = _constant_rows(x) | _constant_rows(y)
    tau = np.full(len(x), np.nan)
    for i in np.flatnonzero(~undefined):
        tau[i] = sps.kendalltau(x[i], y[i], variant="b").statistic
    return tau


_ROWWISE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "pearson": _pearson_rows,
    "spearman": _spearman_rows,
    "kendall": _kendall_rows,
}


# ------------------------------------------------------------------------------------------------ correlation


def _correlate_arrays(
    x: np.ndarray, y: np.ndarray, n_boot: int, confidence: float, seed: int | None
) -> dict[str, Any]:
    note = _constant_note(metric_scores=x, human_scores=y)
    if note is None:

        def statistic(xb: np.ndarray, yb: np.ndarray) -> np.ndarray:
            return np.column_stack([_ROWWISE[m](xb, yb) for m in METHODS])

        reps = _valid_rows(_bootstrap([x, y], statistic, n_boot, seed))
    else:  # every resample of a constant vector is constant: nothing to bootstrap
        reps = np.empty((0, len(METHODS)))
    out: dict[str, Any] = {"n": len(x)}
    for j, method in enumerate(METHODS):
        r, p = _scipy_corr(method, x, y)
        low, high = _percentile_ci(reps[:, j], confidence)
        out[method] = {"r": r, "p": p, "ci_low": low, "ci_high": high}
    out.update(n_boot=int(n_boot), n_boot_used=len(reps), confidence=float(confidence), note=note)
    return out


def correlate(
    metric_scores: Sequence[float] | np.ndarray,
    human_scores: Sequence[float] | np.ndarray,
    *,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> dict[str, Any]:
    """Pearson, Spearman and Kendall (tau-b) correlation of metric scores with human scores.

    Returns ``{"n", "pearson", "spearman", "kendall", "n_boot", "n_boot_used", "confidence", "note"}`` where each
    coefficient is ``{"r", "p", "ci_low", "ci_high"}``: scipy's coefficient and two-sided p-value, and a
    percentile bootstrap interval over items (one shared set of resamples for all three coefficients).
    ``n_boot_used`` counts the resamples kept (a resample with a constant vector is skipped; it is undefined for
    all three coefficients alike). If either input is constant, every value is NaN and ``note`` says which.
    """
    _check_options(n_boot, confidence)
    x, y = _as_paired(metric_scores=metric_scores, human_scores=human_scores)
    return _correlate_arrays(x, y, n_boot, confidence, seed)


def _group_indices(groups: Sequence[Hashable], n: int) -> dict[str, np.ndarray]:
    labels = list(groups)
    if len(labels) != n:
        raise InputError(f"length mismatch: groups has {len(labels)}, scores have {n}")
    members: dict[Hashable, list[int]] = {}
    for i, label in enumerate(labels):
        try:
            members.setdefault(label, []).append(i)
        except TypeError:
            raise InputError(f"groups[{i}] is not hashable: {label!r}") from None
    out: dict[str, np.ndarray] = {}
    for label, idx in members.items():
        key = str(label)
        if key == "pooled" or key in out:
            raise InputError(f"group label {label!r} collides with another key ({key!r}) in the result")
        if len(idx) < _MIN_ITEMS:
            raise InputError(f"group {key!r} has {len(idx)} items; at least {_MIN_ITEMS} are needed")
        out[key] = np.asarray(idx)
    return out


def correlate_groups(
    metric_scores: Sequence[float] | np.ndarray,
    human_scores: Sequence[float] | np.ndarray,
    groups: Sequence[Hashable],
    *,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> dict[str, dict[str, Any]]:
    """:func:`correlate` per group (keys ``str(label)``, in first-appearance order) plus ``"pooled"`` (all items).

    The keyword options are those of :func:`correlate` and apply to every call; each group uses the same
    ``seed``, so a group's result equals ``correlate`` on that group's items alone. Every group needs at least
    3 items, and no label may be ``"pooled"``.
    """
    _check_options(n_boot, confidence)
    x, y = _as_paired(metric_scores=metric_scores, human_scores=human_scores)
    out = {
        key: _correlate_arrays(x[idx], y[idx], n_boot, confidence, seed)
        for key, idx in _group_indices(groups, len(x)).items()
    }
    out["pooled"] = _correlate_arrays(x, y, n_boot, confidence, seed)
    return out


# ------------------------------------------------------------------------------------------- metric comparison


def williams_test(r12: float, r13: float, r23: float, n: int) -> tuple[float, float]:
    """Williams' test for the difference between two dependent correlations sharing variable 1.

    Variable 1 is the human score, 2 and 3 are two metrics scored on the same ``n`` items; ``r23`` is the
    correlation between the metrics. This is the test used for MT metric evaluation by Graham & Baldwin (2014)
    (Williams 1959, in the form of Steiger 1980)::

        K = 1 - r12^2 - r13^2 - r23^2 + 2 r12 r13 r23
        t = (r12 - r13) sqrt((n - 1)(1 + r23)) / sqrt(2K (n - 1)/(n - 3) + (r12 + r13)^2 / 4 (1 - r23)^3)

    with ``n - 3`` degrees of freedom. Returns ``(t, p)`` with the **one-sided** p-value ``P(T >= t)`` for H1
    "metric 2 correlates more strongly with the humans than metric 3" (signed: ``r12 > r13``); the p-value for
    the opposite direction is ``1 - p``, the two-sided one ``2 * min(p, 1 - p)``.

    Any NaN correlation gives ``(nan, nan)``. Raises ValueError for ``n <= 3``, a correlation outside [-1, 1] or
    a set of correlations that no data can have (K < 0: the correlation matrix is not positive semi-definite).
    """
    if isinstance(n, bool) or not float(n).is_integer() or n <= 3:
        raise InputError(f"williams_test needs an integer n > 3, got {n!r}")
    rs = {"r12": r12, "r13": r13, "r23": r23}
    if any(math.isnan(r) for r in rs.values()):
        return _NAN, _NAN
    for name, r in rs.items():
        if not -1.0 <= r <= 1.0:
            raise InputError(f"{name} must be in [-1, 1], got {r!r}")
    k = 1.0 - r12**2 - r13**2 - r23**2 + 2.0 * r12 * r13 * r23
    if k < -1e-10:
        raise InputError(
            f"inconsistent correlations (r12={r12}, r13={r13}, r23={r23}): their determinant {k:.3g} is negative"
        )
    k = max(k, 0.0)
    num = (r12 - r13) * math.sqrt((n - 1) * (1.0 + r23))
    den = math.sqrt(2.0 * k * (n - 1) / (n - 3) + (r12 + r13) ** 2 / 4.0 * (1.0 - r23) ** 3)
    if num == 0.0:
        t = 0.0
    elif den == 0.0:  # perfectly dependent variables with different correlations
        t = math.copysign(math.inf, num)
    else:
        t = num / den
    return float(t), float(sps.t.sf(t, n - 3))


def compare_metrics(
    scores_a: Sequence[float] | np.ndarray,
    scores_b: Sequence[float] | np.ndarray,
    human: Sequence[float] | np.ndarray,
    *,
    method: Method = "pearson",
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> dict[str, Any]:
    """Paired comparison of two metrics scored on the same items against the same human scores.

    Returns ``{"method", "n", "r_a", "r_b", "r_ab", "diff", "ci_low", "ci_high", "p_bootstrap", "williams_t",
    "williams_p", "n_boot", "n_boot_used", "confidence", "note"}``:

    * ``r_a``, ``r_b``: each metric's correlation with ``human`` (scipy); ``r_ab`` between the metrics.
    * ``diff = r_a - r_b``, with a percentile bootstrap CI from paired resamples (the same item indices for both
      metrics); ``p_bootstrap`` is the share of kept resamples with difference ``<= 0``: a one-sided p-value
      for "a correlates more strongly than b" (0 means below ``1 / n_boot_used``).
    * ``williams_t``, ``williams_p``: :func:`williams_test` (one-sided, same direction) for ``pearson``, and for
      ``spearman`` applied to the ranks (Spearman's rho is Pearson's r of ranks). ``None`` for ``kendall``,
      which the test does not cover.
    """
    _check_method(method)
    _check_options(n_boot, confidence)
    a, b, h = _as_paired(scores_a=scores_a, scores_b=scores_b, human=human)
    note = _constant_note(scores_a=a, scores_b=b, human=h)
    r_a, r_b = _scipy_corr(method, a, h)[0], _scipy_corr(method, b, h)[0]
    r_ab = _scipy_corr(method, a, b)[0]

    rowwise = _ROWWISE[method]

    def statistic(ab: np.ndarray, bb: np.ndarray, hb: np.ndarray) -> np.ndarray:
        return (rowwise(ab, hb) - rowwise(bb, hb))[:, None]

    reps = _valid_rows(_bootstrap([a, b, h], statistic, n_boot, seed))
    diffs = reps[:, 0]
    low, high = _percentile_ci(diffs, confidence)
    p_boot = float(np.mean(diffs <= 0.0)) if diffs.size else _NAN

    if method == "kendall":
        w_t = w_p = None
        note = "; ".join(filter(None, [note, "Williams' test does not apply to Kendall's tau"]))
    else:
        w_t, w_p = williams_test(r_a, r_b, r_ab, len(h))
    return {
        "method": method,
        "n": len(h),
        "r_a": r_a,
        "r_b": r_b,
        "r_ab": r_ab,
        "diff": r_a - r_b,
        "ci_low": low,
        "ci_high": high,
        "p_bootstrap": p_boot,
        "williams_t": w_t,
        "williams_p": w_p,
        "n_boot": int(n_boot),
        "n_boot_used": len(diffs),
        "confidence": float(confidence),
        "note": note,
    }


def _mean_pearson_spearman(x: np.ndarray, y: np.ndarray) -> float:
    return (_scipy_corr("pearson", x, y)[0] + _scipy_corr("spearman", x, y)[0]) / 2.0


def _mean_pearson_spearman_rows(a: np.ndarray, b: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Per resample row: ``[(P + S) / 2 of a with h, (P + S) / 2 of b with h]``, shape ``(B, 2)``."""
    return np.stack([_pearson_rows(a, h) + _spearman_rows(a, h), _pearson_rows(b, h) + _spearman_rows(b, h)],
                    axis=1) / 2.0


def relative_average_gain(
    cells: Sequence[tuple[Sequence[float] | np.ndarray, Sequence[float] | np.ndarray, Sequence[float] | np.ndarray]],
    *,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> dict[str, Any]:
    """How much higher metric a's average correlation is than metric b's, relative to b's, over several sets.

    ``cells`` holds one ``(scores_a, scores_b, human)`` triple per evaluation set (the items of a set are shared by
    both metrics; sets may differ in size). A set's correlation is ``(Pearson + Spearman) / 2``; the average is
    the unweighted mean over the sets, ``difference = mean_a - mean_b`` (the gain in correlation points) and
    ``gain = difference / |mean_b|`` (relative; NaN when ``mean_b`` is 0).

    Returns ``{"n_cells", "mean_a", "mean_b", "difference", "difference_ci_low", "difference_ci_high", "gain",
    "ci_low", "ci_high", "p_bootstrap", "n_boot", "n_boot_used", "confidence", "cells"}``, ``cells`` listing
    ``{"n", "a", "b"}`` per set. The CIs are percentile intervals over paired resamples: each set's items are
    resampled (the same indices for both metrics) with one generator seeded by ``seed``, set after set;
    ``p_bootstrap`` is the share of resamples with ``difference <= 0``, a one-sided p-value for "a's average is
    higher".
    """
    _check_options(n_boot, confidence)
    if not cells:
        raise InputError("cells is empty: give at least one (scores_a, scores_b, human) set")
    rng = np.random.default_rng(seed)
    per_cell, reps_a, reps_b = [], [], []
    for i, cell in enumerate(cells):
        if len(cell) != 3:
            raise InputError(f"cells[{i}] must be (scores_a, scores_b, human), got {len(cell)} items")
        try:
            a, b, h = _as_paired(scores_a=cell[0], scores_b=cell[1], human=cell[2])
        except InputError as err:
            raise InputError(f"cells[{i}]: {err}") from None
        per_cell.append({"n": len(h), "a": _mean_pearson_spearman(a, h), "b": _mean_pearson_spearman(b, h)})
        reps = _bootstrap([a, b, h], _mean_pearson_spearman_rows, n_boot, rng)
        reps_a.append(reps[:, 0])
        reps_b.append(reps[:, 1])
    mean_a = float(np.mean([c["a"] for c in per_cell]))
    mean_b = float(np.mean([c["b"] for c in per_cell]))
    with np.errstate(invalid="ignore", divide="ignore"):
        gain = (mean_a - mean_b) / abs(mean_b) if mean_b != 0 else _NAN
        boot_a, boot_b = np.mean(reps_a, axis=0), np.mean(reps_b, axis=0)
        boot = (boot_a - boot_b) / np.abs(boot_b)
    difference = boot_a - boot_b
    difference = difference[np.isfinite(difference)]
    boot = boot[np.isfinite(boot)]
    low, high = _percentile_ci(boot, confidence)
    d_low, d_high = _percentile_ci(difference, confidence)
    return {
        "n_cells": len(per_cell),
        "mean_a": mean_a,
        "mean_b": mean_b,
        "difference": mean_a - mean_b,
        "difference_ci_low": d_low,
        "difference_ci_high": d_high,
        "gain": float(gain),
        "ci_low": low,
        "ci_high": high,
        "p_bootstrap": float(np.mean(difference <= 0.0)) if difference.size else _NAN,
        "n_boot": int(n_boot),
        "n_boot_used": int(boot.size),
        "confidence": float(confidence),
        "cells": per_cell,
    }


# ------------------------------------------------------------------------------------------------ discrimination


def _as_context_matrix(values: Sequence[Sequence[float]] | np.ndarray, name: str) -> np.ndarray:
    """(n_contexts, k) float matrix; a 1-D input is one score per context."""
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be a numeric (n_contexts, k) array: {exc}") from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.size == 0:
        raise InputError(f"{name} must be a non-empty (n_contexts, k) array, got shape {arr.shape}")
    _check_finite(arr, name)
    return arr


def _context_matrices(positive_scores, negative_scores, n_boot: int, confidence: float
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The checked ``(n_contexts, k)`` matrices of a discrimination statistic (same number of contexts)."""
    _check_options(n_boot, confidence)
    pos = _as_context_matrix(positive_scores, "positive_scores")
    neg = _as_context_matrix(negative_scores, "negative_scores")
    if len(pos) != len(neg):
        raise InputError(
            f"length mismatch: positive_scores has {len(pos)} contexts, negative_scores has {len(neg)}"
        )
    return pos, neg


def _context_accuracy(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """Per context, the share of its (positive, negative) pairs with the positive above (ties half)."""
    return win_share(pos[:, :, None], neg[:, None, :]).mean(axis=(1, 2))


def discrimination_accuracy(
    positive_scores: Sequence[Sequence[float]] | np.ndarray,
    negative_scores: Sequence[Sequence[float]] | np.ndarray,
    *,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> dict[str, Any]:
    """How often a metric scores a positive response above a negative one for the same context.

    ``positive_scores`` is ``(n_contexts, k_pos)``, ``negative_scores`` ``(n_contexts, k_neg)``; row ``c`` of each
    holds the scores of context ``c``'s responses (a 1-D input means one response per context). Returns:

    * ``accuracy``: share of all ``(pos, neg)`` pairs within a context with ``pos > neg`` (ties count 0.5), over
      ``n_pairs = n_contexts * k_pos * k_neg`` pairs; ``ci_low``/``ci_high`` a percentile bootstrap interval
      resampling contexts.
    * ``pairwise``: the same over index-paired ``(pos[c, i], neg[c, i])`` only (``n_pairwise`` pairs), with
      ``pairwise_ci_low``/``pairwise_ci_high`` from the same resamples; ``None`` when ``k_pos != k_neg``.
    """
    pos, neg = _context_matrices(positive_scores, negative_scores, n_boot, confidence)
    n_ctx, k_pos = pos.shape
    k_neg = neg.shape[1]
    paired = k_pos == k_neg

    # Per-context accuracies; every context has the same number of pairs, so overall accuracy is their mean.
    per_context = [_context_accuracy(pos, neg)]
    if paired:
        per_context.append(win_share(pos, neg).mean(axis=1))
    per_context_arr = np.column_stack(per_context)
    reps = _bootstrap([per_context_arr], lambda pc: pc.mean(axis=1), n_boot, seed)
    point = per_context_arr.mean(axis=0)

    acc_low, acc_high = _percentile_ci(reps[:, 0], confidence)
    out: dict[str, Any] = {
        "accuracy": float(point[0]),
        "ci_low": acc_low,
        "ci_high": acc_high,
        "n_pairs": n_ctx * k_pos * k_neg,
        "pairwise": None,
        "pairwise_ci_low": None,
        "pairwise_ci_high": None,
        "n_pairwise": n_ctx * k_pos if paired else 0,
        "n_contexts": n_ctx,
        "n_boot": int(n_boot),
        "confidence": float(confidence),
    }
    if paired:
        low, high = _percentile_ci(reps[:, 1], confidence)
        out.update(pairwise=float(point[1]), pairwise_ci_low=low, pairwise_ci_high=high)
    return out


def across_context_auc(
    positive_scores: Sequence[Sequence[float]] | np.ndarray,
    negative_scores: Sequence[Sequence[float]] | np.ndarray,
    *,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> dict[str, Any]:
    """How often a positive scores above a negative of *any* context (the AUC of the pooled scores).

    Same inputs and keys as :func:`discrimination_accuracy` (``accuracy`` is the AUC, ``n_pairs`` every
    positive-negative combination, the bootstrap resamples contexts). Within-context accuracy can be perfect while
    this is at chance: it measures whether the score has one level across contexts, which is what a correlation
    with ratings of many contexts needs.
    """
    pos, neg = _context_matrices(positive_scores, negative_scores, n_boot, confidence)
    rng = np.random.default_rng(seed)
    reps = np.asarray([auc(pos[idx].ravel(), neg[idx].ravel())
                       for idx in rng.integers(0, len(pos), size=(n_boot, len(pos)))])
    low, high = _percentile_ci(reps, confidence)
    return {"accuracy": auc(pos.ravel(), neg.ravel()), "ci_low": low, "ci_high": high,
            "n_pairs": pos.size * neg.size, "pairwise": None, "pairwise_ci_low": None, "pairwise_ci_high": None,
            "n_pairwise": 0, "n_contexts": len(pos), "n_boot": int(n_boot), "confidence": float(confidence)}


def compare_discrimination(
    positive_a: Sequence[Sequence[float]] | np.ndarray,
    negative_a: Sequence[Sequence[float]] | np.ndarray,
    positive_b: Sequence[Sequence[float]] | np.ndarray,
    negative_b: Sequence[Sequence[float]] | np.ndarray,
    *,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> dict[str, Any]:
    """Paired comparison of two metrics' discrimination on the same contexts and responses.

    Inputs are :func:`discrimination_accuracy`'s matrices for metric a and for metric b, of the same shapes (row
    ``c`` is context ``c`` for both). Returns ``{"n_contexts", "accuracy_a", "accuracy_b", "diff", "ci_low",
    "ci_high", "p_bootstrap", "auc_a", "auc_b", "auc_diff", "auc_ci_low", "auc_ci_high", "auc_p_bootstrap",
    "n_boot", "confidence"}``:

    * ``diff = accuracy_a - accuracy_b`` (within-context accuracy, ties 0.5) and ``auc_diff`` (the pooled AUC of
      :func:`across_context_auc`), each with a percentile bootstrap CI from paired resamples: both metrics see the
      same resampled contexts in every replicate;
    * ``p_bootstrap``, ``auc_p_bootstrap``: the share of replicates with a difference ``<= 0``, a one-sided
      p-value for "a discriminates better than b" (0 means below ``1 / n_boot``).
    """
    pos_a, neg_a = _context_matrices(positive_a, negative_a, n_boot, confidence)
    pos_b, neg_b = _context_matrices(positive_b, negative_b, n_boot, confidence)
    if pos_a.shape != pos_b.shape or neg_a.shape != neg_b.shape:
        raise InputError(f"the two metrics' matrices differ in shape: positives {pos_a.shape} vs {pos_b.shape}, "
                         f"negatives {neg_a.shape} vs {neg_b.shape}")
    per_context = np.column_stack([_context_accuracy(pos_a, neg_a), _context_accuracy(pos_b, neg_b)])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(pos_a), size=(n_boot, len(pos_a)))
    acc_diffs = per_context[idx, 0].mean(axis=1) - per_context[idx, 1].mean(axis=1)
    auc_diffs = np.asarray([auc(pos_a[i].ravel(), neg_a[i].ravel()) - auc(pos_b[i].ravel(), neg_b[i].ravel())
                            for i in idx])
    acc = per_context.mean(axis=0)
    auc_a, auc_b = auc(pos_a.ravel(), neg_a.ravel()), auc(pos_b.ravel(), neg_b.ravel())
    low, high = _percentile_ci(acc_diffs, confidence)
    auc_low, auc_high = _percentile_ci(auc_diffs, confidence)
    return {
        "n_contexts": len(pos_a),
        "accuracy_a": float(acc[0]),
        "accuracy_b": float(acc[1]),
        "diff": float(acc[0] - acc[1]),
        "ci_low": low,
        "ci_high": high,
        "p_bootstrap": float(np.mean(acc_diffs <= 0.0)),
        "auc_a": auc_a,
        "auc_b": auc_b,
        "auc_diff": auc_a - auc_b,
        "auc_ci_low": auc_low,
        "auc_ci_high": auc_high,
        "auc_p_bootstrap": float(np.mean(auc_diffs <= 0.0)),
        "n_boot": int(n_boot),
        "confidence": float(confidence),
    }
