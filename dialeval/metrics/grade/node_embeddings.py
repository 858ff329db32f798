"""Vectors for the concepts of GRADE's graph: name embeddings (GloVe, MiniLM), PCA, retrofitting, Numberbatch.

Substitutes for GRADE's Numberbatch vectors (not available here), measured with
:func:`.graph_experiments.measure_embeddings` (``dialeval grade graph measure``): the
graph is built from ``train.txt`` only (97,891 edges); held-out true pairs = ``valid.txt`` + ``test.txt`` minus
train pairs (1,956 distinct); ROC-AUC of cosine(head, tail) of held-out pairs against (a) 20,000 uniformly random
node pairs, (b) held-out heads with shuffled held-out tails (1,904, degree-preserving) and (c) the corrupted
triples of dev1/dev2 (772 distinct, not true); coverage = share of the 78,334 nodes with a non-zero vector. Seed 0,
vectors rounded to fp16 as shipped; 2-core CPU.

=====================================  ====  ========  ========  =========  ========  =========
kind                                   dims  AUC rand  AUC shuf  AUC corr.  coverage  build (s)
=====================================  ====  ========  ========  =========  ========  =========
glove-plain (all words, not centred)    50   0.574     0.776     0.744      0.9795       4
glove (no stop words, centred)          50   0.840     0.839     0.840      0.9795       4
glove-retrofit                          50   0.906     0.901     0.901      0.9994       6
minilm (384-d name embedding)          384   0.971     0.872     0.887      1.0         75
minilm-retrofit (not centred)          384   0.977     0.915     0.922      1.0         77
minilm-pca50                            50   0.934     0.889     0.903      1.0         77
minilm-pca32-retrofit                   32   0.964     0.929     0.939      1.0         78
**minilm-pca50-retrofit** (default)     50   0.968     0.936     0.945      1.0         78
minilm-pca64-retrofit                   64   0.969     0.937     0.945      1.0         78
=====================================  ====  ========  ========  =========  ========  =========

``glove``: mean GloVe-6B-50d vector of the name's words without stop words, centred (the plain mean scores 0.57
on random pairs: long phrases share the stop-word direction). ``minilm``: :class:`dialeval.backbone.Encoder`
(all-MiniLM-L6-v2, mean pooling) on the concept name; ``-pcaK``: centred PCA to K dims. ``-retrofit``: Faruqui et
al. (2015) retrofitting on the undirected graph, alpha 1, 10 iterations -- how Numberbatch itself is made; it
also gives the nodes without a word vector the mean of their neighbours. (alpha 0.5 scores higher still, 0.92 for
GloVe, but smooths away the concept's own identity; not used.) Retrofitting gains 0.03-0.07 AUC, MiniLM beats
GloVe by 0.03-0.06. **Default: ``minilm-pca50-retrofit``**: 50-d, 100% coverage (measured above on fp16-rounded
vectors; the tables store int8 rows with a scale each since their version 2: 4.2 MB for ConceptNet-100K);
building it encodes the 78k names once (about 80 s on 2 CPU cores, cached). ``glove-retrofit`` builds in seconds
and is the fallback when time matters. Build the tables with ``dialeval grade graph build [--embedding KIND]
[--out DIR]``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .cache import sha256_file
from .conceptnet import read_numberbatch
from .graph import ConceptGraph

__all__ = [
    "DEFAULT_EMBEDDING",
    "EMBEDDING_KINDS",
    "glove_name_embeddings",
    "minilm_name_embeddings",
    "node_embeddings",
    "pca_reduce",
    "retrofit",
    "unit_rows",
]

DEFAULT_EMBEDDING = "minilm-pca50-retrofit"
EMBEDDING_KINDS = (
    "glove", "glove-retrofit", "glove-plain", "minilm", "minilm-retrofit", "minilm-pca<K>", "minilm-pca<K>-retrofit",
    "numberbatch:<path>", "numberbatch:<path>-retrofit",
)


def glove_name_embeddings(
    names: Sequence[str], *, centre: bool = True, drop_stop_words: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """GloVe-6B-50d vector of each name: ([N, 50] float32, covered bool).

    Mean of the vectors of the name's in-vocabulary words without stop words (spaCy's English list; all words
    when every word is a stop word), then, with ``centre``, minus the mean over the covered names (raw means of
    short phrases share a large common component that makes unrelated phrases look similar). Tokens as
    :func:`dialeval.baselines.glove.tokenize`.
    """
    from spacy.lang.en.stop_words import STOP_WORDS

    from ...backbone.glove import load_glove, tokenize

    glove = load_glove()
    out = np.zeros((len(names), glove.dim), dtype=np.float32)
    covered = np.zeros(len(names), dtype=bool)
    for i, name in enumerate(names):
        words = [t for t in tokenize(name, glove.vocab) if t in glove.vocab]
        if drop_stop_words:
            words = [t for t in words if t not in STOP_WORDS] or words
        if words:
            rows = np.asarray([glove.vocab[t] for t in words])
            out[i] = np.asarray(glove.vectors[rows], dtype=np.float64).mean(axis=0)
            covered[i] = True
    if centre and covered.any():
        out[covered] -= out[covered].mean(axis=0, dtype=np.float64).astype(np.float32)
    return out, covered


def minilm_name_embeddings(names: Sequence[str], *, encoder=None, batch_size: int = 256) -> np.ndarray:
    """Mean-pooled MiniLM embedding of each name ([N, 384] float32) via :class:`dialeval.backbone.Encoder`."""
    if encoder is None:
        from ...backbone import Encoder

        encoder = Encoder(cache_size=0)
    return encoder.embed(list(names), batch_size=batch_size).numpy().astype(np.float32)


def pca_reduce(x: np.ndarray, dim: int) -> np.ndarray:
    """Project onto the top ``dim`` principal components (centred; sign fixed: largest loading positive)."""
    x = np.asarray(x, dtype=np.float64)
    centred = x - x.mean(axis=0, keepdims=True)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    comps = vt[:dim]
    signs = np.sign(comps[np.arange(comps.shape[0]), np.abs(comps).argmax(axis=1)])
    comps = comps * signs[:, None]
    return (centred @ comps.T).astype(np.float32)


def retrofit(
    emb: np.ndarray, covered: np.ndarray, graph: ConceptGraph, *, iterations: int = 10, alpha: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Retrofitting (Faruqui et al. 2015) on the undirected graph: ``q_i <- (alpha q^_i + mean_nbrs q_j) /
    (alpha + 1)`` for covered nodes and ``q_i <- mean_nbrs q_j`` for uncovered ones (``iterations`` Jacobi
    steps). Returns the new vectors and the new coverage (non-zero rows)."""
    import scipy.sparse as sp

    a = graph.csr()
    sym = ((a + a.T) > 0).astype(np.float32).tocsr()
    deg = np.asarray(sym.sum(axis=1)).ravel()
    inv = np.where(deg > 0, 1.0 / np.maximum(deg, 1), 0.0).astype(np.float32)
    w = sp.diags(inv) @ sym
    base = np.asarray(emb, dtype=np.float32) * covered[:, None]
    a_i = np.where(covered, alpha, 0.0).astype(np.float32)[:, None]
    has_nb = (deg > 0)[:, None]
    q = base.copy()
    for _ in range(iterations):
        nb = np.asarray(w @ q, dtype=np.float32)
        q = np.where(has_nb, (a_i * base + nb) / (a_i + 1.0), base)
    return q.astype(np.float32), np.abs(q).sum(axis=1) > 0


def node_embeddings(
    graph: ConceptGraph, kind: str = DEFAULT_EMBEDDING, *, encoder=None
) -> tuple[np.ndarray, dict[str, Any]]:
    """Vectors for every node of ``graph`` by ``kind`` (see :data:`EMBEDDING_KINDS`) and a description."""
    t0 = time.perf_counter()
    names = graph.names
    retro = kind.endswith("-retrofit")
    base = kind[: -len("-retrofit")] if retro else kind
    extra: dict[str, Any] = {}
    if base == "glove":
        emb, covered = glove_name_embeddings(names)
    elif base == "glove-plain":  # measured for comparison: all words, not centred
        emb, covered = glove_name_embeddings(names, centre=False, drop_stop_words=False)
    elif base in ("minilm",) or base.startswith("minilm-pca"):
        emb = minilm_name_embeddings(names, encoder=encoder)
        covered = np.ones(len(names), dtype=bool)
        if base.startswith("minilm-pca"):
            emb = pca_reduce(emb, int(base[len("minilm-pca") :]))
    elif base.startswith("numberbatch:"):
        path = base.split(":", 1)[1]
        emb, covered = read_numberbatch(path, names)
        extra["numberbatch_sha256"] = sha256_file(path)
    else:
        raise ValueError(f"unknown embedding kind {kind!r}; expected one of {EMBEDDING_KINDS}")
    base_coverage = float(covered.mean()) if len(names) else 0.0
    if retro:
        emb, covered = retrofit(emb, covered, graph)
    info = {
        "kind": kind,
        "dim": int(emb.shape[1]),
        "coverage": float(covered.mean()) if len(names) else 0.0,
        "base_coverage": base_coverage,
        "seconds": round(time.perf_counter() - t0, 2),
        **extra,
    }
    return emb.astype(np.float32), info


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
