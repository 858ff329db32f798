"""The shared body of the `evaluate` modules ``metrics/<m>/<m>.py``.

``evaluate.load("metrics/grade", config_name=...)`` copies only ``metrics/grade/grade.py`` into its cache, so that
file holds what is particular to the metric (its card text, citation, input features, scorer name) and subclasses
:class:`DialevalMetric`, imported from the installed package. The base class loads the scorer once for the
module's ``config_name`` (a shipped checkpoint's name, ``"default"`` or ``"base"`` where the metric ships one, or
a checkpoint folder) and returns ``scores``, ``mean_score`` and
``signature``, on the scale ``compute(scale=...)`` names (``"raw"`` by default, or ``"calibrated"``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, ClassVar

import datasets
import evaluate

from ..scoring.registry import load_scorer

__all__ = ["About", "DialevalMetric", "dialogue_features", "response_features"]

_TEXT = datasets.Value("string")
_TEXTS = datasets.Sequence(datasets.Value("string"))
_MESSAGES = datasets.List({"role": _TEXT, "content": _TEXT})


def response_features(*, references: bool = False) -> tuple[datasets.Features, ...]:
    """The input forms of a context-response metric: ``predictions`` (one string each), ``contexts`` (a list of
    turns, or one string), and with ``references=True`` also ``references`` (a list of strings, or one string)."""
    columns = {"contexts": (_TEXTS, _TEXT)}
    if references:
        columns["references"] = (_TEXTS, _TEXT)
    return tuple(datasets.Features({"predictions": _TEXT, **dict(zip(columns, form, strict=True))})
                 for form in itertools.product(*columns.values()))


def dialogue_features() -> tuple[datasets.Features, ...]:
    """The input forms of a dialogue-level metric: each dialogue a list of strings or of role/content messages."""
    return datasets.Features({"dialogues": _TEXTS}), datasets.Features({"dialogues": _MESSAGES})


#: What every module's ``compute()`` takes besides its inputs and ``batch_size``, and what it returns.
_SHARED_ARGUMENTS = """\
    device (`str`, optional): "cpu", "cuda", "mps"... (default: Accelerate's choice).
    scale (`str`, optional): "raw" (default), the metric's own score, or "calibrated", its percentile among human
        replies of DailyDialog validation, in [0, 1] (fitted by `dialeval calibrate`; the signature then ends in
        `scale:calibrated`).
"""
_RETURNS = """\
    scores (`list` of `float`): one score per item (per dialogue for a dialogue-level metric), in input order.
    mean_score (`float`): the mean of `scores` (the system score).
    signature (`str`): metric, checkpoint hash, settings and package versions that produced the scores.
"""
_EXAMPLE_END = """\
    >>> sorted(out)
    ['mean_score', 'scores', 'signature']
"""


@dataclass(frozen=True)
class About:
    """What ``evaluate.MetricInfo`` says of a metric: its card text, citation, accepted input forms and links.

    ``arguments`` describes the metric's own ``compute()`` arguments (its inputs, ``batch_size``, any option) and
    ``example`` its example call; :attr:`inputs_description` adds what every module shares.
    """

    description: str
    citation: str
    arguments: str
    example: str
    features: tuple[datasets.Features, ...]
    homepage: str
    reference_urls: tuple[str, ...]

    @property
    def inputs_description(self) -> str:
        return (f"\nArgs:\n{self.arguments}{_SHARED_ARGUMENTS}Returns:\n{_RETURNS}"
                f"Examples:\n{self.example}{_EXAMPLE_END}")


class DialevalMetric(evaluate.Metric):
    """An `evaluate` module over one of dialeval's scorers.

    A subclass names its scorer (``class Grade(DialevalMetric, scorer_name="grade")``, a name of
    :func:`dialeval.load_scorer`) and sets ``about``. Its docstring is made from the description and the inputs
    description, as ``evaluate``'s own modules do.
    A metric whose ``compute()`` takes options beyond its inputs, ``batch_size`` and ``device`` overrides
    :meth:`configure_scorer`.
    """

    scorer_name: ClassVar[str]
    about: ClassVar[About]

    def __init_subclass__(cls, *, scorer_name: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if scorer_name is not None:
            cls.scorer_name = scorer_name
        if "about" in cls.__dict__:
            cls.__doc__ = cls.about.description + cls.about.inputs_description

    def _info(self) -> evaluate.MetricInfo:
        about = self.about
        return evaluate.MetricInfo(description=about.description, citation=about.citation,
                                   inputs_description=about.inputs_description, features=list(about.features),
                                   homepage=about.homepage, reference_urls=list(about.reference_urls))

    def _download_and_prepare(self, dl_manager) -> None:
        self._scorer = load_scorer(self.scorer_name, checkpoint=self.config_name)

    def configure_scorer(self, **options: Any) -> None:
        """Apply ``compute()`` options other than the inputs, ``batch_size`` and ``device`` (none by default)."""
        if options:
            raise TypeError(f"{type(self).__name__}.compute() got unexpected arguments: {', '.join(sorted(options))}")

    def _compute(self, *, batch_size: int = 32, device: str | None = None, scale: str = "raw",
                 **inputs_and_options: Any) -> dict[str, Any]:
        inputs = {name: inputs_and_options.pop(name) for name in self._feature_names()}
        self.configure_scorer(**inputs_and_options)
        if "dialogues" in inputs:
            out = self._scorer.score_dialogues(dialogues=inputs["dialogues"], batch_size=batch_size, device=device,
                                               scale=scale)
        else:
            out = self._scorer.score(contexts=inputs["contexts"], responses=inputs["predictions"],
                                     references=inputs.get("references"), batch_size=batch_size, device=device,
                                     scale=scale)
        return {"scores": out.scores, "mean_score": out.system_score, "signature": out.signature}
