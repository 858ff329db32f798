"""Unreferenced context-response cosine similarity with the shared encoder backbone."""

from __future__ import annotations

import numpy as np

from ..schema import ScoringItem
from .common import EncoderScorer

__all__ = ["AdjacentCosineScorer", "ContextCosineScorer"]


class ContextCosineScorer(EncoderScorer):
    """Cosine between the mean-pooled embeddings of the context and of the response, in [-1, 1] (unreferenced).

    The context is its turns joined by a single space (:attr:`ScoringItem.context_text`); when it is longer than
    the encoder limit (512 tokens for the default MiniLM) it is truncated from the **left**, keeping the most
    recent turns. Responses are truncated on the right. Embeddings are the mean over all token positions
    (special tokens included, as in sentence-transformers' pooling for all-MiniLM-L6-v2) of the last hidden
    layer; the score is their cosine, computed in float64.

    Embeddings go through the encoder's cache, so a context repeated across items, systems or calls is encoded
    once. Metadata: ``truncated_texts`` (distinct contexts + responses of the call longer than the limit),
    ``truncated_contexts``, ``truncated_responses``.

    Departures: this is the common "semantic relevance" baseline rather than a published metric; with the
    default encoder it matches sentence-transformers' all-MiniLM-L6-v2 similarity except that
    sentence-transformers caps inputs at 256 tokens (here 512) and truncates contexts on the right.
    """

    name = "context_cosine"
    requires_references = False

    def _score_items(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        contexts = [it.context_text for it in items]
        responses = [it.response for it in items]
        n_ctx = self.count_truncated(contexts)
        n_rsp = self.count_truncated(responses)
        c = self.encoder.embed(contexts, batch_size=batch_size, side="left", progress_bar=progress_bar)
        r = self.encoder.embed(responses, batch_size=batch_size, side="right", progress_bar=progress_bar)
        c64, r64 = c.double().numpy(), r.double().numpy()
        norms = np.linalg.norm(c64, axis=1) * np.linalg.norm(r64, axis=1)
        dots = np.einsum("ij,ij->i", c64, r64)
        out = np.divide(dots, norms, out=np.zeros(len(items)), where=norms > 0)
        self._call_meta = {
            "context_truncation": "left (most recent turns kept)",
            "truncated_texts": n_ctx + n_rsp,
            "truncated_items": self.encoder.truncated_items([[c, r] for c, r in zip(contexts, responses)]),
            "truncated_contexts": n_ctx,
            "truncated_responses": n_rsp,
        }
        return np.clip(out, -1.0, 1.0)

    def truncation_rule(self) -> str:
        return (f"the encoder's {self.encoder.max_length} tokens per text: a context keeps its most recent tokens, a "
                "response its first")


class AdjacentCosineScorer(EncoderScorer):
    """Cosine between the mean-pooled embeddings of the last context turn and of the response, in [-1, 1].

    At dialogue level (the shared default: the mean of the turn scores of turns 2..n) this is the mean cosine of
    adjacent utterances, the trivial coherence baseline that DynaEval's paper compares against. Each text is
    truncated on the right at the encoder limit and embedded once per call through the encoder's cache.
    Metadata: ``truncated_texts`` (distinct turns longer than the limit).
    """

    name = "adjacent_cosine"
    requires_references = False

    def _score_items(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        previous = [it.context[-1].text for it in items]
        responses = [it.response for it in items]
        texts = list(dict.fromkeys(previous + responses))
        vectors = self.encoder.embed(texts, batch_size=batch_size, side="right", progress_bar=progress_bar)
        row = {t: i for i, t in enumerate(texts)}
        a = vectors[[row[t] for t in previous]].double().numpy()
        b = vectors[[row[t] for t in responses]].double().numpy()
        norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
        out = np.divide(np.einsum("ij,ij->i", a, b), norms, out=np.zeros(len(items)), where=norms > 0)
        self._call_meta = {"truncated_texts": self.count_truncated(texts),
                           "truncated_items": self.encoder.truncated_items([[p, r] for p, r in zip(previous, responses)])}
        return np.clip(out, -1.0, 1.0)
