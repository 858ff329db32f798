"""GRADE training data: context-response pairs from DailyDialog with a lexical and an embedding negative each.

What the original does (see the shared notes) and what we do:
* positives: every window of two context utterances + the next utterance, unique (context, response) pairs in
  corpus order. Same here; ``max_positives`` subsamples them with a seeded generator (the run says how many).
* lexical negative: the original queried a Lucene index of the split's unique responses with the gold response and
  took the hit at a rank that grows with the number of hits (``_LEXICAL_RANKS``; the "mid-ranked" hit). We use
  BM25 from ``bm25s`` (Lucene's scoring variant) over the same index, count hits as documents with a positive
  score, and take the hit at the same rank. Departure: a hit whose text equals the gold response is skipped (the
  original could return the gold itself as its own negative when a query had few hits).
* embedding negative: the original encoded responses with BERT, drew 1,000 random responses of the split, and
  took the first (in drawing order) of the 5 most similar ones. We do the same with the mean-pooled MiniLM
  embeddings of the default encoder (texts equal to the gold are excluded).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

# (more than this many hits, rank of the negative to take); fewer than 6 hits: the top hit.
_LEXICAL_RANKS = (
    (500_000, 299_995), (100_000, 69_995), (50_000, 29_995), (10_000, 6_995), (1_000, 695), (500, 195),
    (200, 95), (100, 45), (50, 15), (20, 10), (5, 0),
)


@dataclass(frozen=True)
class GradePair:
    """One training pair: the positive response must score above the negative for the same context."""

    context: tuple[str, ...]
    positive: str
    negative: str
    kind: str  # "lexical" | "embedding"


def context_windows(dialogues: Iterable[list[str]], context_turns: int = 2) -> list[tuple[tuple[str, ...], str]]:
    """Unique (context, response) windows, ``context_turns`` utterances of context each, in corpus order."""
    seen: dict[tuple[tuple[str, ...], str], None] = {}
    for utterances in dialogues:
        turns = [u.strip() for u in utterances]
        for end in range(context_turns, len(turns)):
            ctx, resp = tuple(turns[end - context_turns:end]), turns[end]
            if resp and all(ctx):
                seen.setdefault((ctx, resp), None)
    return list(seen)


def lexical_rank(n_hits: int) -> int:
    """The rank (0-based) of the lexical negative among ``n_hits`` BM25 hits, as the original's schedule."""
    for threshold, rank in _LEXICAL_RANKS:
        if n_hits > threshold:
            return rank
    return 0


def lexical_negatives(queries: list[str], pool: list[str], *, show_progress: bool = False) -> list[str]:
    """For each query (a gold response) the mid-ranked BM25 hit in ``pool`` that is not the query itself."""
    import bm25s

    retriever = bm25s.BM25(method="lucene")
    retriever.index(bm25s.tokenize(pool, stopwords=None, show_progress=False), show_progress=False)
    query_tokens = bm25s.tokenize(queries, stopwords=None, show_progress=False, return_ids=False)
    pool_arr = np.asarray(pool, dtype=object)
    out = []
    for query, tokens in zip(queries, query_tokens):
        scores = retriever.get_scores(tokens) if tokens else np.zeros(len(pool))
        hits = np.flatnonzero(scores > 0)
        ranked = hits[np.lexsort((hits, -scores[hits]))]  # by score, ties by index: deterministic
        ranked = ranked[pool_arr[ranked] != query]
        if ranked.size == 0:  # no lexical overlap at all: any other response is a lexical negative
            ranked = np.flatnonzero(pool_arr != query)[:1]
        out.append(str(pool_arr[ranked[min(lexical_rank(ranked.size), ranked.size - 1)]]))
    return out


def embedding_negatives(
    queries: list[str],
    pool: list[str],
    query_emb: torch.Tensor,
    pool_emb: torch.Tensor,
    *,
    n_candidates: int = 1000,
    top_k: int = 5,
    seed: int = 0,
) -> list[str]:
    """For each query: draw ``n_candidates`` pool entries, keep the ``top_k`` most similar, take the first drawn."""
    rng = np.random.default_rng(seed)
    q = torch.nn.functional.normalize(query_emb.float(), dim=-1)
    p = torch.nn.functional.normalize(pool_emb.float(), dim=-1)
    out = []
    for i, query in enumerate(queries):
        drawn = rng.choice(len(pool), size=min(n_candidates, len(pool)), replace=False)
        drawn = np.asarray([j for j in drawn if pool[j] != query])
        sims = (p[torch.as_tensor(drawn)] @ q[i]).numpy()
        best = np.sort(np.argsort(-sims, kind="stable")[:top_k])  # positions in drawing order
        out.append(pool[int(drawn[best[0]])])
    return out


def build_pairs(
    windows: list[tuple[tuple[str, ...], str]],
    *,
    encoder,
    max_positives: int | None,
    seed: int = 0,
    n_candidates: int = 1000,
    embedding_pool_size: int | None = 20_000,
    batch_size: int = 64,
) -> list[GradePair]:
    """Two pairs (lexical, embedding negative) per sampled positive.

    The lexical index holds every unique response of the windows. Embedding candidates are drawn from a seeded
    sample of ``embedding_pool_size`` of them (``None``: all), so that only that many responses are encoded;
    drawing 1,000 candidates from a 20,000-response sample is distributed as drawing them from the whole split.
    """
    rng = np.random.default_rng(seed)
    chosen = windows
    if max_positives is not None and max_positives < len(windows):
        idx = np.sort(rng.choice(len(windows), size=max_positives, replace=False))
        chosen = [windows[i] for i in idx]
    pool = list(dict.fromkeys(r for _, r in windows))
    golds = [r for _, r in chosen]
    lexical = lexical_negatives(golds, pool)
    emb_pool = pool
    if embedding_pool_size is not None and embedding_pool_size < len(pool):
        emb_pool = [pool[i] for i in np.sort(rng.choice(len(pool), size=embedding_pool_size, replace=False))]
    pool_emb = encoder.embed(emb_pool, batch_size=batch_size, progress_bar=True)
    gold_emb = encoder.embed(golds, batch_size=batch_size)
    embedded = embedding_negatives(golds, emb_pool, gold_emb, pool_emb, n_candidates=n_candidates, seed=seed)
    pairs = []
    for (ctx, gold), lex, emb in zip(chosen, lexical, embedded):
        pairs.append(GradePair(ctx, gold, lex, "lexical"))
        pairs.append(GradePair(ctx, gold, emb, "embedding"))
    return pairs


def save_pairs(pairs: list[GradePair], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for p in pairs:
            fh.write(json.dumps(asdict(p), ensure_ascii=False) + "\n")


def load_pairs(path: Path) -> list[GradePair]:
    with open(path, encoding="utf-8") as fh:
        return [GradePair(tuple(d["context"]), d["positive"], d["negative"], d["kind"]) for d in map(json.loads, fh)]
