"""GRADE graph experiments: build the graph tables, measure node-embedding substitutes.

Run as ``dialeval grade graph build|measure``:

* ``build``: build (or load from the cache) the graph tables (:meth:`.tables.GraphTables.build`) and report their
  sizes; ``--out DIR`` also saves them there.
* ``measure``: the intrinsic comparison of node-embedding substitutes (:func:`measure_embeddings`, printed by
  :func:`format_measurements`; the protocol and the measured table are in :mod:`.node_embeddings`).

Nothing used for scoring or training imports this module.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .conceptnet import CN100K_FOLDER, read_cn100k_file
from .graph import ConceptGraph
from .node_embeddings import (
    DEFAULT_EMBEDDING,
    minilm_name_embeddings,
    node_embeddings,
    pca_reduce,
    retrofit,
    unit_rows,
)
from .tables import GraphTables

__all__ = ["MEASURED_KINDS", "edge_auc", "format_measurements", "measure_embeddings"]

MEASURED_KINDS = (
    "glove-plain", "glove", "glove-retrofit", "minilm", "minilm-pca50", "minilm-pca32-retrofit",
    "minilm-pca50-retrofit", "minilm-pca64-retrofit", "minilm-retrofit",
)


def edge_auc(emb: np.ndarray, pos: np.ndarray, neg: np.ndarray) -> float:
    """ROC-AUC of cosine similarity separating ``pos`` pairs [P, 2] from ``neg`` pairs [Q, 2] (ties count half;
    a zero vector has cosine 0)."""
    from scipy.stats import rankdata

    unit = unit_rows(np.asarray(emb, dtype=np.float32))
    sp = np.einsum("ij,ij->i", unit[pos[:, 0]], unit[pos[:, 1]])
    sn = np.einsum("ij,ij->i", unit[neg[:, 0]], unit[neg[:, 1]])
    ranks = rankdata(np.concatenate([sp, sn]))
    n_p, n_n = len(sp), len(sn)
    return float((ranks[:n_p].sum() - n_p * (n_p + 1) / 2) / (n_p * n_n))


def measure_embeddings(
    data_dir: str | os.PathLike | None = None,
    kinds: Sequence[str] = MEASURED_KINDS,
    *,
    seed: int = 0,
    n_random: int = 20_000,
) -> dict[str, Any]:
    """The intrinsic test of the module docstring. Returns ``{kind: {auc_random, auc_shuffled, auc_corrupted,
    coverage, dim, seconds}}`` plus the counts under ``"_setup"``."""
    from ...paths import data_file

    folder = data_file(CN100K_FOLDER, data_dir)
    train, _ = read_cn100k_file(folder / "train.txt")
    held = read_cn100k_file(folder / "valid.txt")[0] + read_cn100k_file(folder / "test.txt")[0]
    corrupted = [t for f in ("dev1.txt", "dev2.txt") for t in read_cn100k_file(folder / f)[1]]
    names = {x for tr in (train, held, corrupted) for _, h, t in tr for x in (h, t)}
    graph = ConceptGraph.from_triples(train, extra_nodes=names)
    idx = graph.index
    train_pairs = {(idx[h], idx[t]) for _, h, t in train}
    pos = np.array(sorted({(idx[h], idx[t]) for _, h, t in held if h != t} - train_pairs), dtype=np.int64)
    rng = np.random.default_rng(seed)
    rand = rng.integers(0, graph.n_nodes, size=(n_random, 2))
    rand = rand[rand[:, 0] != rand[:, 1]]
    true_pairs = train_pairs | {tuple(p) for p in pos.tolist()}
    shuf = np.stack([pos[:, 0], pos[rng.permutation(len(pos)), 1]], axis=1)
    shuf = np.array([p for p in shuf.tolist() if p[0] != p[1] and tuple(p) not in true_pairs], dtype=np.int64)
    corr = np.array(sorted({(idx[h], idx[t]) for _, h, t in corrupted if h != t} - true_pairs), dtype=np.int64)
    out: dict[str, Any] = {
        "_setup": {
            "graph": "train.txt only", "n_nodes": graph.n_nodes, "n_edges": graph.n_edges,
            "n_heldout_pos": len(pos), "n_random": len(rand), "n_shuffled": len(shuf), "n_corrupted": len(corr),
            "seed": seed,
        }
    }
    cache: dict[str, np.ndarray] = {}
    for kind in kinds:
        t0 = time.perf_counter()
        base = kind.removesuffix("-retrofit")
        if base.startswith("minilm"):  # encode the names once for every MiniLM variant
            if "minilm" not in cache:
                cache["minilm"] = minilm_name_embeddings(graph.names)
            raw = cache["minilm"]
            emb = pca_reduce(raw, int(base[len("minilm-pca") :])) if base.startswith("minilm-pca") else raw
            covered = np.ones(graph.n_nodes, dtype=bool)
            if kind.endswith("-retrofit"):
                emb, covered = retrofit(emb, covered, graph)
            info = {"dim": emb.shape[1], "coverage": float(covered.mean())}
        else:
            emb, info = node_embeddings(graph, kind)
        emb16 = emb.astype(np.float16).astype(np.float32)
        out[kind] = {
            "dim": int(info["dim"]),
            "auc_random": round(edge_auc(emb16, pos, rand), 4),
            "auc_shuffled": round(edge_auc(emb16, pos, shuf), 4),
            "auc_corrupted": round(edge_auc(emb16, pos, corr), 4),
            "coverage": round(float((np.abs(emb16).sum(axis=1) > 0).mean()), 5),
            "seconds": round(time.perf_counter() - t0, 1),
        }
    return out


def format_measurements(result: dict[str, Any], kinds: Sequence[str]) -> str:
    """The setup line and the table of a :func:`measure_embeddings` result, one row per kind in ``kinds``."""
    lines = [json.dumps(result["_setup"]),
             f"{'kind':28s} {'dim':>4s} {'AUC rand':>9s} {'AUC shuf':>9s} {'AUC corr':>9s} {'coverage':>9s} {'s':>6s}"]
    for k in kinds:
        r = result[k]
        lines.append(f"{k:28s} {r['dim']:4d} {r['auc_random']:9.4f} {r['auc_shuffled']:9.4f} "
                     f"{r['auc_corrupted']:9.4f} {r['coverage']:9.5f} {r['seconds']:6.1f}")
    return "\n".join(lines)
