"""Metric names -> scorer classes, imported lazily so that loading one metric never imports the others."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from ..errors import UnknownNameError
from .base import Scorer

# name -> "module:Class". Learned metrics add themselves here as they land.
METRICS: dict[str, str] = {
    "bleu4": "dialeval.baselines.overlap:Bleu4Scorer",
    "rougeL": "dialeval.baselines.overlap:RougeLScorer",
    "embedding_average": "dialeval.baselines.glove:EmbeddingAverageScorer",
    "vector_extrema": "dialeval.baselines.glove:VectorExtremaScorer",
    "greedy_matching": "dialeval.baselines.glove:GreedyMatchingScorer",
    "bertscore": "dialeval.baselines.bertscore:BertScoreScorer",
    "context_cosine": "dialeval.baselines.cosine:ContextCosineScorer",
    "adjacent_cosine": "dialeval.baselines.cosine:AdjacentCosineScorer",
    "utterance_length": "dialeval.baselines.length:UtteranceLengthScorer",
}

BASELINES = tuple(METRICS)

METRICS.update({
    "grade": "dialeval.metrics.grade.scorer:GradeScorer",
    "dynaeval": "dialeval.metrics.dynaeval.scorer:DynaEvalScorer",
    "bert_ruber": "dialeval.metrics.bert_ruber.scorer:BertRuberScorer",
    "bert_ruber_unref": "dialeval.metrics.bert_ruber.scorer:BertRuberUnrefScorer",
    "pone": "dialeval.metrics.pone.scorer:PoneScorer",
    "rade": "dialeval.metrics.rade.scorer:RadeScorer",
    "amr_eval": "dialeval.metrics.amr_eval.scorer:AmrEvalScorer",
})


def available_metrics() -> list[str]:
    return sorted(METRICS)


def scorer_class(name: str) -> type[Scorer]:
    if name not in METRICS:
        raise UnknownNameError("metric", name, available_metrics())
    module, cls = METRICS[name].split(":")
    return getattr(import_module(module), cls)


def load_scorer(name: str, **kwargs: Any) -> Scorer:
    """Instantiate a metric by name once; reuse the returned scorer for many calls."""
    return scorer_class(name)(**kwargs)
