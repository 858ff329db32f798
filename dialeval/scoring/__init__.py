"""The scoring API every metric shares: the :class:`Scorer` base class, its output, checkpoint lookup and the
registry of metric names."""

from .base import Scorer, ScoreOutput, package_versions

__all__ = ["Scorer", "ScoreOutput", "package_versions"]
