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

import inspect
from collections.abc import Callable
from typing import Any

from . import errors
from .errors import *  # noqa: F403  (the error family: every name in errors.__all__)
from .errors import UnknownNameError
from .scoring import ScoreOutput, Scorer
from .scoring.registry import available_metrics, load_scorer, scorer_class

__version__ = "0.1.0"

__all__ = [*errors.__all__, "ScoreOutput", "Scorer", "__version__", "available_metrics", "load_scorer", "score"]


def _keywords(function: Callable) -> tuple[list[str], bool]:
    """The names ``function`` accepts as keyword arguments (``self`` and positional-only ones left out), and whether
    it also takes ``**kwargs``."""
    names, any_key = [], False
    for name, p in inspect.signature(function).parameters.items():
        if p.kind is p.VAR_KEYWORD:
            any_key = True
        elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and name != "self":
            names.append(name)
    return names, any_key


def score(metric: str, /, **options: Any) -> ScoreOutput:
    """One-off scoring: load ``metric`` and score with it, every option of both steps in one call.

    Each keyword goes where it is declared: the scorer's constructor (``load_scorer``'s options for this metric:
    ``checkpoint``, ``device``, ``max_length``, ``pseudo_references`` ...) or :meth:`Scorer.score` (``contexts``,
    ``responses``, ``references``, ``batch_size`` ...); ``device``, taken by both, loads the model there. Pass
    ``dialogues=[...]`` instead of contexts/responses for dialogue-level scoring (:meth:`Scorer.score_dialogues`).
    A key neither takes goes to a constructor that accepts ``**kwargs``, else raises
    :class:`~dialeval.errors.UnknownNameError` naming the key, the metric and the accepted keys.
    """
    cls = scorer_class(metric)
    method = cls.score_dialogues if "dialogues" in options else cls.score
    init_names, init_any = _keywords(cls.__init__)
    call_names, _ = _keywords(method)
    init, call = {}, {}
    for key, value in options.items():
        if key in init_names or (init_any and key not in call_names):
            init[key] = value
        elif key in call_names:
            call[key] = value
        else:
            accepted = list(dict.fromkeys([*init_names, *call_names]))
            raise UnknownNameError(f"{metric!r} option", key, accepted,
                                   extra=f"; those of load_scorer({metric!r}) and of Scorer.{method.__name__}")
    scorer = load_scorer(metric, **init)
    return getattr(scorer, method.__name__)(**call)
