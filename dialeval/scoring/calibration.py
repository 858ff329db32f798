"""A raw score mapped to [0, 1] by a fixed empirical CDF: :class:`EmpiricalCdf`.

Fitted once on one sample of a metric's scores and stored as ``points`` quantiles (probabilities
``0, 1/(points-1), ..., 1``). Two users: the ensemble maps each member's score with one before combining them
(fitted on its calibration sets, :mod:`dialeval.metrics.ensemble.sets`, stored in its checkpoint), and every metric's
calibrated scale (:mod:`dialeval.scoring.scales`) maps its score to its percentile among human replies. Applied item
by item:

* between two stored quantiles, linear interpolation of the probability (monotone, continuous);
* a value several quantiles share (a tie in the sample, e.g. lengths in words) maps to the middle of the
  probabilities they span, and the map runs linearly from one distinct quantile to the next;
* flat beyond the ends: a value below the smallest quantile maps to that quantile's probability, above the largest
  to the largest's.

An item's calibrated score depends on its raw score and the stored quantiles only, never on the other items of a
call. A member whose calibration sample is constant carries no information and is refused when fitting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError

__all__ = ["DEFAULT_POINTS", "CalibrationError", "EmpiricalCdf"]

#: stored quantiles per member (probabilities 0, 0.005, ..., 1)
DEFAULT_POINTS = 201


class CalibrationError(InputError):
    """A calibration that cannot be fitted or read (the message names the member and the problem)."""


@dataclass(frozen=True)
class EmpiricalCdf:
    """The stored quantiles of one member's calibration sample (see the module docstring)."""

    #: the ``points`` quantiles, non-decreasing
    quantiles: tuple[float, ...]
    #: what the quantiles were measured on (e.g. ``dailydialog/validation``), and how many scores
    source: str
    n: int

    def __post_init__(self) -> None:
        q = np.asarray(self.quantiles, dtype=np.float64)
        if q.ndim != 1 or len(q) < 3:
            raise CalibrationError(f"calibration of {self.source}: needs at least 3 quantiles, got {len(q)}")
        if not np.all(np.isfinite(q)):
            raise CalibrationError(f"calibration of {self.source}: a quantile is not finite")
        if np.any(np.diff(q) < 0):
            raise CalibrationError(f"calibration of {self.source}: the quantiles are not in increasing order")
        if q[0] == q[-1]:
            raise CalibrationError(f"calibration of {self.source}: every quantile is {q[0]}; a constant score "
                                   "carries nothing to combine")

    @classmethod
    def fit(cls, scores: Sequence[float] | np.ndarray, *, source: str, points: int = DEFAULT_POINTS,
            member: str = "member") -> EmpiricalCdf:
        """The ``points`` quantiles (linear interpolation between order statistics) of ``scores``; a non-finite
        score is an error naming its index, a constant sample an error naming ``member``."""
        values = np.asarray(scores, dtype=np.float64)
        if values.ndim != 1 or len(values) < 2:
            raise CalibrationError(f"calibrating {member} on {source}: needs at least 2 scores, got {values.size}")
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise CalibrationError(f"calibrating {member} on {source}: score {int(bad[0])} is {values[bad[0]]}")
        if points < 3:
            raise CalibrationError(f"calibrating {member}: points must be >= 3, got {points}")
        if values.min() == values.max():
            raise CalibrationError(f"calibrating {member} on {source}: all {len(values)} scores are {values[0]}; a "
                                   "constant score carries nothing to combine")
        quantiles = np.quantile(values, np.linspace(0.0, 1.0, points))
        return cls(quantiles=tuple(float(v) for v in quantiles), source=source, n=int(len(values)))

    @property
    def probabilities(self) -> np.ndarray:
        return np.linspace(0.0, 1.0, len(self.quantiles))

    def _knots(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct quantile values and the probability each maps to (the middle of the ones it spans)."""
        q = np.asarray(self.quantiles, dtype=np.float64)
        values, first, counts = np.unique(q, return_index=True, return_counts=True)
        p = self.probabilities
        return values, (p[first] + p[first + counts - 1]) / 2.0

    def __call__(self, raw: Sequence[float] | np.ndarray) -> np.ndarray:
        """Calibrated scores in [0, 1], one per raw score, each computed on its own."""
        x = np.asarray(raw, dtype=np.float64)
        values, probs = self._knots()
        return np.interp(x, values, probs)  # flat beyond the ends: np.interp clamps to the end probabilities

    def to_json(self) -> dict[str, Any]:
        return {"quantiles": list(self.quantiles), "source": self.source, "n": self.n}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, member: str) -> EmpiricalCdf:
        """Read what :meth:`to_json` wrote; a missing or malformed field is a :class:`CalibrationError` naming
        ``member`` and the field."""
        for key, kind in (("quantiles", list), ("source", str), ("n", int)):
            if key not in data:
                raise CalibrationError(f"calibration of {member}: no field {key!r}")
            if not isinstance(data[key], kind) or isinstance(data[key], bool):
                raise CalibrationError(f"calibration of {member}: field {key!r} has type {type(data[key]).__name__}")
        try:
            quantiles = tuple(float(v) for v in data["quantiles"])
        except (TypeError, ValueError):
            raise CalibrationError(f"calibration of {member}: field 'quantiles' holds a value that is not a "
                                   "number") from None
        try:
            return cls(quantiles=quantiles, source=data["source"], n=data["n"])
        except CalibrationError as err:
            raise CalibrationError(f"member {member}: {err}") from None
