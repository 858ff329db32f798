"""Length as a metric: the control every learned metric should beat (humans often prefer longer replies)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..schema import Dialogue, ScoringItem
from ..scoring import Scorer

__all__ = ["UtteranceLengthScorer", "word_count"]


def word_count(text: str) -> int:
    """Words as whitespace-separated tokens (punctuation attached)."""
    return len(text.split())


class UtteranceLengthScorer(Scorer):
    """The number of words of the response (turn level), or the mean number of words per turn of the dialogue
    (dialogue level, every turn counted). No model, no context: it measures how much of a correlation length
    alone explains."""

    name = "utterance_length"
    requires_references = False

    def _score_items(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        return np.asarray([word_count(it.response) for it in items], dtype=np.float64)

    def _score_dialogues(self, dialogues: list[Dialogue], *, batch_size: int, progress_bar: bool | None
                         ) -> tuple[np.ndarray, dict[str, Any]]:
        scores = [np.mean([word_count(t.text) for t in d.turns]) for d in dialogues]
        return np.asarray(scores, dtype=np.float64), {"dialogue_aggregation": "mean words per turn (every turn)"}
