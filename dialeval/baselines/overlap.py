"""Word-overlap baselines: sentence-level BLEU-4 (sacrebleu) and ROUGE-L (rouge-score)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backbone.batching import progress
from ..schema import ScoringItem
from ..scoring import Scorer
from .common import dist_version

__all__ = ["Bleu4Scorer", "RougeLScorer"]


class Bleu4Scorer(Scorer):
    """Sentence-level BLEU-4 of the response against its reference(s), in [0, 1].

    Computed exactly as ``sacrebleu.metrics.BLEU(lowercase=True, tokenize="13a", smooth_method="exp",
    effective_order=True).sentence_score(response, references).score / 100`` (clipped to 1.0 against float
    round-off), i.e. the geometric mean of the clipped 1- to 4-gram precisions times the brevity penalty.

    Decisions:

    * **Tokenisation** is sacrebleu's default ``13a`` (mteval-v13a: punctuation split off) with
      ``lowercase=True``: several dialogue corpora (DailyDialog, the GRADE sets) are distributed lower-cased
      and pre-tokenised in places, so case is not evidence of quality.
    * **Smoothing** is sacrebleu's default ``exp`` (Chen & Cherry 2014 method 3, the NIST mteval smoothing): an
      n-gram order with no match gets precision ``1 / (2^k * total_n)`` for the k-th such order. A pair with no
      matching n-gram at all scores exactly 0.0 (sacrebleu stops early), an identical pair 1.0.
    * **effective_order=True**: orders longer than the response are left out of the geometric mean, so a
      one- or two-word response is not zeroed by missing 3-/4-grams (sacrebleu's recommendation for
      sentence-level BLEU).
    * **Several references** use sacrebleu's native multi-reference BLEU (n-gram counts clipped by the maximum
      count over references, brevity penalty against the reference length closest to the response), *not* the
      maximum of single-reference scores.

    Departures from the reference implementation: none beyond choosing the settings above (sacrebleu's default
    is case-sensitive).
    """

    name = "bleu4"
    requires_references = True

    def __init__(self, *, device=None) -> None:
        super().__init__(device=device)
        from sacrebleu.metrics import BLEU

        self._bleu = BLEU(lowercase=True, tokenize="13a", smooth_method="exp", effective_order=True)

    def fingerprint(self) -> dict[str, str]:
        return {"tok": "13a", "case": "lc", "smooth": "exp", "eff_order": "yes", "sacrebleu": dist_version("sacrebleu")}

    def _score_items(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        out = np.empty(len(items), dtype=np.float64)
        for k, item in enumerate(progress(items, total=len(items), enabled=progress_bar, desc="bleu4")):
            score = self._bleu.sentence_score(item.response, list(item.references)).score / 100.0
            out[k] = min(max(score, 0.0), 1.0)
        return out


class RougeLScorer(Scorer):
    """ROUGE-L F-measure (F1, beta = 1) of the response against its reference(s), in [0, 1].

    Computed with ``rouge_score.rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)`` as
    ``score(target=reference, prediction=response)["rougeL"].fmeasure``: the longest common subsequence of the
    two token lists, P = LCS / len(response), R = LCS / len(reference), F = 2PR / (P + R).

    * **Tokenisation** is rouge-score's default: lower-cased, every character outside ``[a-z0-9]`` is a
      separator, no stemming. Text without any ASCII letter or digit (e.g. Chinese) therefore has no tokens and
      scores 0.0; such items are counted in the metadata (``n_without_tokens``), never silently.
    * **Several references**: the maximum F over the single-reference scores.

    Departures: pycocoevalcap / nlg-eval ROUGE-L (often quoted in dialogue papers) uses F with beta = 1.2 and
    takes the max precision and max recall over references separately; this is plain rouge-score F1 with a max
    over references.
    """

    name = "rougeL"
    requires_references = True

    def __init__(self, *, device=None) -> None:
        super().__init__(device=device)
        from rouge_score import rouge_scorer, tokenizers

        self._tokenizer = tokenizers.DefaultTokenizer(use_stemmer=False)
        self._rouge = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False, tokenizer=self._tokenizer)
        self._call_meta: dict[str, Any] = {}

    def fingerprint(self) -> dict[str, str]:
        return {"tok": "rouge_score-default", "stemmer": "no", "rouge_score": dist_version("rouge-score")}

    def _score_items(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        out = np.empty(len(items), dtype=np.float64)
        has_tokens: dict[str, bool] = {}
        without: list[int] = []
        for k, item in enumerate(progress(items, total=len(items), enabled=progress_bar, desc="rougeL")):
            out[k] = max(self._rouge.score(ref, item.response)["rougeL"].fmeasure for ref in item.references)
            for text in (item.response, *item.references):
                if text not in has_tokens:
                    has_tokens[text] = bool(self._tokenizer.tokenize(text))
            if not all(has_tokens[t] for t in (item.response, *item.references)):
                without.append(k)
        self._call_meta = {
            "multi_reference": "max over references",
            "n_without_tokens": len(without),
            "without_tokens_items": without[:100],
        }
        return out

    def _metadata(self) -> dict[str, Any]:
        return dict(self._call_meta)
