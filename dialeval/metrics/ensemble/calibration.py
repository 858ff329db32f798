"""Each member's raw score mapped to [0, 1] by a fixed empirical CDF: :class:`EmpiricalCdf`, which lives in
:mod:`dialeval.scoring.calibration` (every metric's calibrated scale uses the same class). The ensemble stores one
per member and level in its checkpoint (:mod:`.checkpoint`), fitted on the calibration sets of :mod:`.sets`.
"""

from ...scoring.calibration import DEFAULT_POINTS, CalibrationError, EmpiricalCdf

__all__ = ["DEFAULT_POINTS", "CalibrationError", "EmpiricalCdf"]
