"""PONE's weighted negative sampling (Lan et al., 2020, Section 4.2; ``get_batch`` in the released code).

For each positive, ``candidates`` (the paper's h) responses are drawn uniformly at random (with replacement, as the
original) from the pool of distinct training responses *other than the gold one*; one of them is then chosen with
probability

    p_i = softmax_i( cos(gold, candidate_i) / temperature )

so negatives that resemble the gold response (hard negatives) are picked more often; a low temperature concentrates
the choice on the most similar candidate, a high one tends to uniform sampling. The sampled negative enters the
loss with the same weight as any other (binary cross-entropy): the weighting is in the sampling, as in the original.
"""

from __future__ import annotations

import numpy as np

from ..bert_ruber.data import uniform_negatives


class WeightedNegativeSampler:
    """Samples one negative response id per gold response id from a pool of response embeddings."""

    def __init__(self, pool: np.ndarray, *, candidates: int = 200, temperature: float = 0.05) -> None:
        if pool.ndim != 2 or len(pool) < 2:
            raise ValueError(f"the pool needs at least 2 response embeddings [n, d], got shape {pool.shape}")
        if candidates < 1:
            raise ValueError(f"candidates (h) must be >= 1, got {candidates}")
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        norms = np.linalg.norm(pool, axis=1, keepdims=True)
        if np.any(norms == 0):
            raise ValueError("the pool holds a zero embedding; its cosine similarity is undefined")
        self.unit = (pool / norms).astype(np.float32)
        self.candidates = int(candidates)
        self.temperature = float(temperature)

    def __len__(self) -> int:
        return len(self.unit)

    def draw_candidates(self, gold_ids: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """[B, h] candidate ids, uniform over the pool without each row's gold id."""
        gold_ids = np.asarray(gold_ids, dtype=np.int64)
        draw = rng.integers(0, len(self) - 1, size=(len(gold_ids), self.candidates))
        return draw + (draw >= gold_ids[:, None])

    def probabilities(self, gold_ids: np.ndarray, candidate_ids: np.ndarray) -> np.ndarray:
        """[B, h] sampling probabilities: softmax of cosine(gold, candidate) / temperature (float64)."""
        gold = self.unit[np.asarray(gold_ids, dtype=np.int64)]  # [B, d]
        cand = self.unit[candidate_ids]  # [B, h, d]
        logits = np.einsum("bd,bhd->bh", gold.astype(np.float64), cand.astype(np.float64)) / self.temperature
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True)

    def sample(self, gold_ids: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One weighted negative id per gold id (never the gold id)."""
        cand = self.draw_candidates(gold_ids, rng)
        cdf = np.cumsum(self.probabilities(gold_ids, cand), axis=1)
        u = rng.random(len(cand))[:, None] * cdf[:, -1:]
        choice = np.minimum((cdf < u).sum(axis=1), self.candidates - 1)
        return cand[np.arange(len(cand)), choice]

    def uniform(self, gold_ids: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One uniformly random negative id per gold id (never the gold id)."""
        return uniform_negatives(np.asarray(gold_ids, dtype=np.int64), len(self), rng)
