"""The classic baselines' declarations (:class:`~dialeval.scoring.spec.MetricSpec`): no training, no checkpoint."""

from __future__ import annotations

from ..scoring.spec import MetricSpec

SPECS = tuple(MetricSpec(name=name, scorer=f"dialeval.baselines.{where}", kind="baseline") for name, where in (
    ("bleu4", "overlap:Bleu4Scorer"),
    ("rougeL", "overlap:RougeLScorer"),
    ("embedding_average", "glove:EmbeddingAverageScorer"),
    ("vector_extrema", "glove:VectorExtremaScorer"),
    ("greedy_matching", "glove:GreedyMatchingScorer"),
    ("bertscore", "bertscore:BertScoreScorer"),
    ("context_cosine", "cosine:ContextCosineScorer"),
    ("adjacent_cosine", "cosine:AdjacentCosineScorer"),
    ("utterance_length", "length:UtteranceLengthScorer"),
))
