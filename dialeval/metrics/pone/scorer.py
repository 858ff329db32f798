"""PONE on the shared scoring API: ``dialeval.load_scorer("pone")``.

PONE's score for reference-free use is its unreferenced score: the trained head's probability, in (0, 1), that the
response fits the context (the last ``context_turns`` turns). ``mode="hybrid"`` gives PONE's referenced variant
(min or max of the normalised unreferenced score and the response-reference cosine, as its ``hybird.py``; needs
references); see :mod:`dialeval.metrics.bert_ruber.scorer` for the normalisation and the determinism guarantees.
"""

from __future__ import annotations

from ..bert_ruber.scorer import RuberScorer


class PoneScorer(RuberScorer):
    """PONE (Lan et al., 2020): BERT-RUBER's unreferenced network trained with augmented positives, weighted
    negatives and a label filter."""

    name = "pone"
    checkpoint_dir = "pone"
    train_command = "dialeval train pone"
    default_mode = "unreferenced"
