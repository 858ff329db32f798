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

Stored pairs (:class:`PairTable`, what ``dialeval train grade --prepare-only`` writes): every distinct text
(context turn or response) once, in ``pair_texts.json.gz`` with its keywords when the graph branch needs them, and
per split the pairs as index arrays into that list (``pairs.npz``: ``<split>_context`` [n, turns],
``<split>_positive``, ``<split>_negative`` [n] int32, ``<split>_kind`` [n] int8 into :data:`KINDS`).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ...baselines.length import word_count

# (more than this many hits, rank of the negative to take); fewer than 6 hits: the top hit.
_LEXICAL_RANKS = (
    (500_000, 299_995), (100_000, 69_995), (50_000, 29_995), (10_000, 6_995), (1_000, 695), (500, 195),
    (200, 95), (100, 45), (50, 15), (20, 10), (5, 0),
)


#: BM25 hits, from the mid rank on, that a length-matched lexical negative is chosen from.
LENGTH_WINDOW = 50


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


def closest_in_length(candidates: Sequence[str], target: int) -> int:
    """Position of the first candidate whose word count is nearest ``target``."""
    gaps = [abs(word_count(c) - target) for c in candidates]
    return gaps.index(min(gaps))


def lexical_negatives(queries: list[str], pool: list[str], *, length_window: int = 0,
                      show_progress: bool = False) -> list[str]:
    """For each query (a gold response) the mid-ranked BM25 hit in ``pool`` that is not the query itself; with
    ``length_window`` > 0, the hit nearest the query's length among that many hits from the mid rank on."""
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
        rank = min(lexical_rank(ranked.size), ranked.size - 1)
        if length_window > 0:
            window = [str(t) for t in pool_arr[ranked[rank:rank + length_window]]]
            rank += closest_in_length(window, word_count(query))
        out.append(str(pool_arr[ranked[rank]]))
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
    match_length: bool = False,
) -> list[str]:
    """For each query: draw ``n_candidates`` pool entries, keep the ``top_k`` most similar, take the first drawn
    (``match_length``: the one nearest the query's length, the first drawn on ties)."""
    rng = np.random.default_rng(seed)
    q = torch.nn.functional.normalize(query_emb.float(), dim=-1)
    p = torch.nn.functional.normalize(pool_emb.float(), dim=-1)
    out = []
    for i, query in enumerate(queries):
        drawn = rng.choice(len(pool), size=min(n_candidates, len(pool)), replace=False)
        drawn = np.asarray([j for j in drawn if pool[j] != query])
        sims = (p[torch.as_tensor(drawn)] @ q[i]).numpy()
        best = np.sort(np.argsort(-sims, kind="stable")[:top_k])  # positions in drawing order
        pick = closest_in_length([pool[int(drawn[b])] for b in best], word_count(query)) if match_length else 0
        out.append(pool[int(drawn[best[pick]])])
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
    length_matched: bool = False,
) -> list[GradePair]:
    """Two pairs (lexical, embedding negative) per sampled positive.

    ``length_matched``: each negative is chosen nearest the gold's length (lexical: among
    :data:`LENGTH_WINDOW` hits from the mid rank on; embedding: among the ``top_k`` most similar), so that reply
    length does not tell positives from negatives.

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
    lexical = lexical_negatives(golds, pool, length_window=LENGTH_WINDOW if length_matched else 0)
    emb_pool = pool
    if embedding_pool_size is not None and embedding_pool_size < len(pool):
        emb_pool = [pool[i] for i in np.sort(rng.choice(len(pool), size=embedding_pool_size, replace=False))]
    pool_emb = encoder.embed(emb_pool, batch_size=batch_size, progress_bar=True)
    gold_emb = encoder.embed(golds, batch_size=batch_size)
    embedded = embedding_negatives(golds, emb_pool, gold_emb, pool_emb, n_candidates=n_candidates, seed=seed,
                                   match_length=length_matched)
    pairs = []
    for (ctx, gold), lex, emb in zip(chosen, lexical, embedded):
        pairs.append(GradePair(ctx, gold, lex, "lexical"))
        pairs.append(GradePair(ctx, gold, emb, "embedding"))
    return pairs


def with_extra_negatives(arrays: Mapping[str, np.ndarray], kinds: Sequence[str], *, seed: int
                         ) -> dict[str, np.ndarray]:
    """``arrays`` (one split of a :class:`PairTable`) plus, for each kind in ``kinds``, one pair per distinct
    (context, positive) with a negative drawn with ``seed``:

    * ``context_copy``: one of the context's own utterances offered as the reply. It shares every word and topic
      with the context; without such negatives overlap can become a shortcut to a high score.
    * ``random``: the positive reply of another pair of the split (uniformly drawn, never the same text). The
      prepared negatives are chosen to be similar to the gold; random ones teach plain topical relevance.

    The added rows follow the original ones: per kind, in order of first appearance.
    """
    context, positive = np.asarray(arrays["context"]), np.asarray(arrays["positive"])
    _, first = np.unique(np.column_stack([context, positive]), axis=0, return_index=True)
    rows = np.sort(first)
    rng = np.random.default_rng(seed)
    out = {key: [np.asarray(arrays[key])] for key in ("context", "positive", "negative", "kind")}
    for kind in kinds:
        if kind == "context_copy":
            if context.shape[1] == 0:
                raise ValueError("context copies need contexts of at least one utterance")
            negative = context[rows, rng.integers(0, context.shape[1], size=rows.size)]
        elif kind == "random":
            pool = np.unique(positive)
            if pool.size < 2:
                raise ValueError("random negatives need at least two distinct positive replies")
            negative = pool[rng.integers(0, pool.size, size=rows.size)]
            clash = negative == positive[rows]
            while clash.any():  # redraw the few that hit their own gold reply
                negative[clash] = pool[rng.integers(0, pool.size, size=int(clash.sum()))]
                clash = negative == positive[rows]
        else:
            raise ValueError(f"unknown extra negative kind {kind!r} (known: context_copy, random)")
        out["context"].append(context[rows])
        out["positive"].append(positive[rows])
        out["negative"].append(negative.astype(np.int32))
        out["kind"].append(np.full(rows.size, KINDS.index(kind), dtype=np.int8))
    return {key: np.concatenate(parts) for key, parts in out.items()}


PAIRS_FILE = "pairs.npz"
TEXTS_FILE = "pair_texts.json.gz"
#: Negative kinds. Prepared tables hold the first two; ``context_copy`` and ``random`` pairs are added at train
#: time (:func:`with_extra_negatives`).
KINDS = ("lexical", "embedding", "context_copy", "random")
_TABLE_FORMAT = "dialeval-grade-pairs"
_TABLE_VERSION = 1


@dataclass
class PairTable:
    """The pairs of several splits with every distinct text stored once (see the module docstring).

    ``splits[split]`` holds ``context`` [n, turns], ``positive``, ``negative`` [n] (indices into ``texts``) and
    ``kind`` [n] (index into :data:`KINDS`); ``keywords[i]`` are the keywords of ``texts[i]`` (None: not extracted).
    """

    texts: list[str]
    splits: dict[str, dict[str, np.ndarray]]
    keywords: list[list[str]] | None = field(default=None)

    @classmethod
    def from_pairs(cls, splits: Mapping[str, Sequence[GradePair]]) -> PairTable:
        index: dict[str, int] = {}

        def ids(texts: Iterable[str]) -> list[int]:
            return [index.setdefault(t, len(index)) for t in texts]

        arrays = {}
        for split, pairs in splits.items():
            turns = {len(p.context) for p in pairs}
            if len(turns) > 1:
                raise ValueError(f"{split} pairs have contexts of {sorted(turns)} turns; a PairTable stores one "
                                 "context length per split")
            width = turns.pop() if turns else 0
            unknown = sorted({p.kind for p in pairs} - set(KINDS))
            if unknown:
                raise ValueError(f"{split} pairs have unknown kinds {unknown} (known: {', '.join(KINDS)})")
            arrays[split] = {
                "context": np.asarray([ids(p.context) for p in pairs], dtype=np.int32).reshape(len(pairs), width),
                "positive": np.asarray(ids(p.positive for p in pairs), dtype=np.int32),
                "negative": np.asarray(ids(p.negative for p in pairs), dtype=np.int32),
                "kind": np.asarray([KINDS.index(p.kind) for p in pairs], dtype=np.int8),
            }
        return cls(list(index), arrays)

    def __len__(self) -> int:
        return sum(len(a["positive"]) for a in self.splits.values())

    def pair(self, split: str, i: int) -> GradePair:
        a, t = self.splits[split], self.texts
        return GradePair(tuple(t[j] for j in a["context"][i]), t[a["positive"][i]], t[a["negative"][i]],
                         KINDS[a["kind"][i]])

    def pairs(self, split: str) -> list[GradePair]:
        return [self.pair(split, i) for i in range(len(self.splits[split]["positive"]))]

    def keyword_map(self) -> dict[str, list[str]]:
        """text -> keywords (for :class:`~dialeval.metrics.grade.features.GraphFeaturizer`'s ``keywords``)."""
        if self.keywords is None:
            raise ValueError("this pair table holds no keywords (prepared without the graph branch)")
        return dict(zip(self.texts, self.keywords))

    def save(self, folder: str | Path) -> list[str]:
        """Write :data:`TEXTS_FILE` and :data:`PAIRS_FILE` into ``folder``; returns their names."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        doc = {"format": _TABLE_FORMAT, "version": _TABLE_VERSION, "kinds": list(KINDS), "splits": list(self.splits),
               "texts": self.texts, "keywords": self.keywords}
        raw = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        # mtime 0: the same table gives the same bytes
        with open(folder / TEXTS_FILE, "wb") as fh, gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0) as gz:
            gz.write(raw)
        np.savez_compressed(folder / PAIRS_FILE, **{f"{split}_{key}": arr for split, a in self.splits.items()
                                                     for key, arr in a.items()})
        return [TEXTS_FILE, PAIRS_FILE]

    @classmethod
    def load(cls, folder: str | Path) -> PairTable:
        folder = Path(folder)
        with gzip.open(folder / TEXTS_FILE, "rb") as fh:
            doc = json.loads(fh.read().decode("utf-8"))
        if doc.get("format") != _TABLE_FORMAT or doc.get("version") != _TABLE_VERSION:
            raise ValueError(f"{folder / TEXTS_FILE} is not a GRADE pair table of version {_TABLE_VERSION} "
                             f"(format={doc.get('format')!r}, version={doc.get('version')!r})")
        if tuple(doc["kinds"]) != KINDS[:len(doc["kinds"])]:
            raise ValueError(f"{folder / TEXTS_FILE}: pair kinds {doc['kinds']} (this code reads {list(KINDS)})")
        texts, keywords = doc["texts"], doc["keywords"]
        if keywords is not None and len(keywords) != len(texts):
            raise ValueError(f"{folder / TEXTS_FILE}: {len(keywords)} keyword lists for {len(texts)} texts")
        with np.load(folder / PAIRS_FILE) as npz:
            splits = {split: {key: npz[f"{split}_{key}"] for key in ("context", "positive", "negative", "kind")}
                      for split in doc["splits"]}
        for split, a in splits.items():
            for key in ("context", "positive", "negative"):
                if a[key].size and (a[key].min() < 0 or a[key].max() >= len(texts)):
                    raise ValueError(f"{folder / PAIRS_FILE}: {split}_{key} points outside the {len(texts)} texts")
        return cls(texts, splits, keywords)
