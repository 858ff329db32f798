"""Normalisation of the RUBER-style hybrid score: ranges fixed at training time, stored in the checkpoint, and the
map that applies them item by item.

The hybrid score (BERT-RUBER, PONE's ``mode="hybrid"``) combines the unreferenced score (the head's probability) and
the referenced score (response-reference cosine) after mapping each onto a common scale. The original min-max
normalised both over the test set, so an item's score depended on the other items. Here each score is mapped with a
range ``[low, high]`` fixed once, on a calibration set (:mod:`.calibration`), and stored in the checkpoint's
``config.json`` (``hybrid_unreferenced_range``, ``hybrid_referenced_range``, ``hybrid_calibration``), so every item
is scored on its own.

**The map** (:func:`rescale`). With ``t = (score - low) / (high - low)``::

    t                              for 0 <= t <= 1   (the calibrated range: linear, onto [0, 1])
    t / (1 - t / TAIL)             for t < 0          (below the range: onto (-TAIL, 0))
    1 + u / (1 + u / TAIL)         for t > 1, u = t - 1   (above the range: onto (1, 1 + TAIL))

It is strictly increasing everywhere, continuous with slope 1 at both ends of the range, and bounded by
``(-TAIL, 1 + TAIL)``: two different scores never share a normalised score, so rankings (Spearman, pairwise
comparisons) survive outside the range. An earlier version clipped to [0, 1], which tied every score beyond the
range at exactly 0 or 1 (issue 36); inside the range the two versions give the same numbers.

Why the tails lie outside [0, 1] rather than the range being shrunk into [0, 1]: a map that stays in [0, 1] and
is strictly increasing must send ``low`` to some ``c > 0``, and then a score just above ``low`` lands at ``c`` plus
a tiny amount, which float64 rounds back to ``c``. PONE's stored unreferenced range starts at 3e-43, and its head
scores some replies in (3e-43, 1e-16): they would round to ``c`` and tie, where with this map they are distinct.
The rational tails (not tanh, which reaches -1 in float64) keep a resolvable slope far from the range, and near it
they equal ``t`` to relative precision, so small negative ``t`` keep their digits. What float64 cannot separate is
``score - low`` itself: two scores below ``low`` that differ by less than one rounding step of ``low`` (for PONE's
range, probabilities under about 7e-59) still get the same ``t`` and tie.

``minmax_over_call`` is the original behaviour (min-max over the items of one call), kept as a named option.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import DialevalError
from ...schema import InputError

RANGE_FIELDS = ("hybrid_unreferenced_range", "hybrid_referenced_range")
CALIBRATION_FIELD = "hybrid_calibration"
#: How far beyond [0, 1] the map sends the scores outside the calibrated range (each side).
TAIL = 0.05
#: The command that adds the ranges to a checkpoint made before they existed (named in :class:`MissingCalibration`).
CALIBRATE_COMMAND = "dialeval checkpoint calibrate"


class MissingCalibration(DialevalError, ValueError):
    """A checkpoint without hybrid normalisation ranges (made before they existed) was asked for a hybrid score;
    the message names the command that adds them."""


@dataclass(frozen=True)
class HybridRanges:
    """The fixed [low, high] of the unreferenced score and of the referenced cosine, and what they were fitted on."""

    unreferenced: tuple[float, float]
    referenced: tuple[float, float]
    calibration: str

    @classmethod
    def from_config(cls, config, checkpoint: str | Path = "the checkpoint") -> HybridRanges:
        """The ranges stored in a model config; :class:`MissingCalibration` when it has none."""
        unref, ref = (getattr(config, name, None) for name in RANGE_FIELDS)
        if unref is None or ref is None:
            raise MissingCalibration(
                f"{checkpoint} has no hybrid normalisation ranges ({', '.join(RANGE_FIELDS)} in config.json; "
                f"checkpoints trained before they existed lack them): add them with `{CALIBRATE_COMMAND} "
                f"--checkpoint {checkpoint}`, or pass normalization='minmax_over_call' (min-max over the items of "
                "each call, batch-dependent)")
        return cls(tuple(unref), tuple(ref), getattr(config, CALIBRATION_FIELD, ""))

    def config_fields(self) -> dict:
        """The ``config.json`` entries that store these ranges."""
        return {RANGE_FIELDS[0]: list(self.unreferenced), RANGE_FIELDS[1]: list(self.referenced),
                CALIBRATION_FIELD: self.calibration}


def fit_range(values: np.ndarray, what: str) -> tuple[float, float]:
    """(minimum, maximum) of a calibration score array; they must be finite and differ."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError(f"the {what} calibration scores must be a non-empty array of finite numbers")
    low, high = float(values.min()), float(values.max())
    if not high > low:
        raise ValueError(f"the {what} calibration scores are all {low:.6g}: no range to normalise with")
    return low, high


def rescale(values: np.ndarray, value_range: Sequence[float]) -> np.ndarray:
    """Map scores with a fixed range, item by item: linear onto [0, 1] inside ``value_range``, strictly increasing
    rational tails onto (-TAIL, 0) below it and (1, 1 + TAIL) above it (the module docstring has the formula)."""
    low, high = value_range
    t = (np.asarray(values, dtype=np.float64) - low) / (high - low)
    below, above = np.minimum(t, 0.0), np.maximum(t - 1.0, 0.0)
    return np.where(t < 0.0, below / (1.0 - below / TAIL),
                    np.where(t > 1.0, 1.0 + above / (1.0 + above / TAIL), t))


def minmax_over_call(values: np.ndarray, what: str) -> np.ndarray:
    """The original normalisation: min-max over the items scored together (an item depends on the others)."""
    low, high = float(values.min()), float(values.max())
    if not high > low:
        raise InputError(
            f"normalization='minmax_over_call' rescales the {what} scores over the items of one call and needs at "
            f"least two items with different values (got {values.size} item(s), all {low:.6g}); score more items "
            "together or use the default normalization='calibrated'")
    return (values - low) / (high - low)


def row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of each row of ``a`` with the same row of ``b``, in float64 (0 for a zero vector), in [-1, 1]."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    denom = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    dots = np.einsum("ij,ij->i", a, b)
    return np.where(denom > 0, np.clip(dots / np.where(denom > 0, denom, 1.0), -1.0, 1.0), 0.0)
