"""dialeval: learned metrics for open-domain dialogue on the Hugging Face stack.

Quick use::

    import dialeval
    out = dialeval.score("bertscore", contexts=["Hi, how are you?"], responses=["Fine, thanks."],
                         references=["Good, and you?"])
    out.scores, out.system_score, out.signature

For many calls, load once: ``scorer = dialeval.load_scorer("bertscore")`` then ``scorer.score(...)``.
A user's mistake (bad input, an unknown name, a missing file or checkpoint) raises a :class:`DialevalError`
subclass whose message says what is wrong.
"""

from __future__ import annotations

from typing import Any

from . import errors
from .errors import *  # noqa: F403  (the error family: every name in errors.__all__)
from .scoring import ScoreOutput, Scorer
from .scoring.registry import available_metrics, load_scorer

__version__ = "0.1.0"

__all__ = [*errors.__all__, "ScoreOutput", "Scorer", "__version__", "available_metrics", "load_scorer", "score"]


def score(metric: str, /, **inputs: Any) -> ScoreOutput:
    """One-off scoring: load ``metric`` and score ``inputs`` (keyword arguments of :meth:`Scorer.score`).

    Pass ``dialogues=[...]`` instead of contexts/responses for dialogue-level scoring.
    """
    init = {k: inputs.pop(k) for k in ("device",) if k in inputs}
    scorer = load_scorer(metric, **init)
    if "dialogues" in inputs:
        return scorer.score_dialogues(**inputs)
    return scorer.score(**inputs)
