"""dialeval: learned metrics for open-domain dialogue on the Hugging Face stack.

Quick use::

    import dialeval
    out = dialeval.score("bertscore", contexts=["Hi, how are you?"], responses=["Fine, thanks."],
                         references=["Good, and you?"])
    out.scores, out.system_score, out.signature

For many calls, load once: ``scorer = dialeval.load_scorer("bertscore")`` then ``scorer.score(...)``.
"""

from __future__ import annotations

from typing import Any

from .scoring.registry import available_metrics, load_scorer
from .schema import InputError
from .scoring import Scorer, ScoreOutput

__version__ = "0.1.0"

__all__ = ["score", "load_scorer", "available_metrics", "Scorer", "ScoreOutput", "InputError", "__version__"]


def score(metric: str, /, **inputs: Any) -> ScoreOutput:
    """One-off scoring: load ``metric`` and score ``inputs`` (keyword arguments of :meth:`Scorer.score`).

    Pass ``dialogues=[...]`` instead of contexts/responses for dialogue-level scoring.
    """
    init = {k: inputs.pop(k) for k in ("device",) if k in inputs}
    scorer = load_scorer(metric, **init)
    if "dialogues" in inputs:
        return scorer.score_dialogues(**inputs)
    return scorer.score(**inputs)
