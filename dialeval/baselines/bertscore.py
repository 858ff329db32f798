"""BERTScore F1 with the shared encoder backbone."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from ..schema import ScoringItem
from .common import EncoderScorer

__all__ = ["BertScoreScorer", "bertscore_f1"]


def bertscore_f1(candidate: torch.Tensor, reference: torch.Tensor) -> tuple[float, float, float]:
    """(P, R, F1) from L2-normalised token embeddings [n_c, d] and [n_r, d] by greedy cosine matching."""
    sim = candidate @ reference.T  # [n_c, n_r] cosines
    precision = float(sim.max(dim=1).values.mean())
    recall = float(sim.max(dim=0).values.mean())
    denom = precision + recall
    f1 = 2.0 * precision * recall / denom if denom != 0.0 else 0.0
    return precision, recall, f1 if math.isfinite(f1) else 0.0


class BertScoreScorer(EncoderScorer):
    """BERTScore F1 (Zhang et al. 2020) of the response against its reference(s), in [0, 1] in practice.

    Both texts are encoded by the encoder (default: the bundled all-MiniLM-L6-v2) and the **last-layer**
    contextual token embeddings are taken, **special tokens excluded** ([CLS]/[SEP]), each L2-normalised.
    With S the token cosine-similarity matrix (response tokens x reference tokens):
    P = mean over response tokens of the row max of S, R = mean over reference tokens of the column max of S,
    F1 = 2PR / (P + R) (0.0 if P + R = 0, as bert_score does for NaN), not clipped. F1 lies in [0, 1] whenever
    P, R >= 0, which holds in practice (MiniLM token cosines of best matches are positive; unrelated pairs score
    about 0.1-0.3); an identical pair scores 1.0 up to float32 round-off.

    Several references: the maximum F1 over the single-reference scores (bert_score's own multi-reference mode
    also takes the max F over references).

    Departures from the ``bert_score`` package defaults (documented, deliberate):

    * model: all-MiniLM-L6-v2 last layer (bert_score defaults to roberta-large, layer 17) -- offline, small;
    * **no IDF weighting** (bert_score's default ``idf=False`` too, but its paper's recommended setting uses IDF
      over the reference corpus; per-item scores would otherwise depend on the rest of the batch);
    * **no baseline rescaling** (``rescale_with_baseline=False``): no published baseline exists for MiniLM, so
      scores are raw cosines-based F1 and are not comparable with rescaled numbers in papers;
    * texts longer than the encoder limit (512 tokens) are truncated on the right; the number of distinct texts
      cut this way is reported in the metadata (``truncated_texts``). A text with no non-special token (only
      characters the tokenizer drops) scores 0.0 and is counted in ``n_empty_after_tokenization``.

    Each distinct string among the responses and references of a call is encoded once; batches are
    padding-free, so scores do not depend on ``batch_size``.
    """

    name = "bertscore"
    requires_references = True

    def _score_items(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        texts = list(dict.fromkeys([it.response for it in items] + [r for it in items for r in it.references]))
        index = {t: i for i, t in enumerate(texts)}
        truncated = self.count_truncated(texts)
        embeddings = self.encoder.token_embeddings(texts, batch_size=batch_size, progress_bar=progress_bar)
        normed = [F.normalize(e.float(), dim=-1) for e in embeddings]
        out = np.empty(len(items), dtype=np.float64)
        empty: list[int] = []
        with torch.inference_mode():
            for k, item in enumerate(items):
                cand = normed[index[item.response]]
                best = -math.inf
                for ref in item.references:
                    other = normed[index[ref]]
                    if cand.shape[0] == 0 or other.shape[0] == 0:
                        value = 0.0
                        if not empty or empty[-1] != k:
                            empty.append(k)
                    else:
                        value = bertscore_f1(cand, other)[2]
                    best = max(best, value)
                out[k] = best
        self._call_meta = {
            "multi_reference": "max F1 over references",
            "idf": False,
            "rescale_with_baseline": False,
            "layer": "last",
            "n_texts_encoded": len(texts),
            "truncated_texts": truncated,
            "truncated_items": self.encoder.truncated_items([[it.response, *it.references] for it in items]),
            "n_empty_after_tokenization": len(empty),
        }
        return out
