"""Coverage of GRADE's graph inputs: ``dialeval grade coverage [--json out.json]`` (:func:`coverage_report`).

For the 1,200 GRADE evaluation pairs (per corpus and overall) and for DailyDialog test (every window of two
context turns + response, unique pairs, as GRADE's training data), reports: keywords per context / response,
items without any keyword or without an edge (no context or no response keyword), the share of keywords aligned
to a graph concept, the share of (context keyword, response keyword) node pairs reachable within the BFS depth,
the hop histogram, and the featurisation time -- for the graph with reverse edges (the default tables) and for
the purely directed graph.

Keywords use the IDF fitted on all of DailyDialog (:meth:`KeywordExtractor.from_dailydialog`) for every corpus;
GRADE fitted the IDF of each evaluation corpus on that corpus (ConvAI2, EmpatheticDialogues), which are not in the
data directory.

Measured (ConceptNet-100K, default tables ``minilm-pca50-retrofit`` with reverse edges, BFS depth 4, max 16 nodes):

=====================  =====  ======  ======  ========  =========  ==========  ===========  =============
set                    pairs  kw/ctx  kw/rsp  no edge   aligned    aligned     reachable    reachable
                                                        (occur.)   (distinct)  (rev. edges) (directed)
=====================  =====  ======  ======  ========  =========  ==========  ===========  =============
GRADE eval, all         1200   5.60    2.13     78       86.0%      70.2%       64.4%        34.3%
 - convai2               600   5.92    2.49     21       86.8%      73.4%       65.3%        35.3%
 - dailydialog           300   4.93    1.74     40       83.6%      76.8%       57.3%        26.0%
 - empatheticdialogues   300   5.61    1.81     17       86.5%      77.1%       68.0%        38.7%
DailyDialog test        5705   4.53    2.28    482       80.4%      59.9%       51.1%        21.3%
=====================  =====  ======  ======  ========  =========  ==========  ===========  =============

No GRADE-eval pair is without keywords (6 DailyDialog-test windows are); "no edge" = no context or no response
keyword. Hop histogram over the 14,711 GRADE-eval (context, response) node pairs, reverse edges: hop 1: 448,
2: 457, 3: 2,731, 4: 3,918, 5: 1,919, unreachable (20): 5,238; 1,080 of 1,200 pairs have at least one reachable
node pair. Featurising the 1,200 pairs from scratch takes about 5 s (3 s of it spaCy), 0.1 s when cached.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from typing import Any, Callable, Sequence

import numpy as np

from .features import GraphFeaturizer
from .graph import DEFAULT_MAX_DEPTH, ConceptGraph
from .keywords import KeywordExtractor
from .node_embeddings import DEFAULT_EMBEDDING
from .tables import GraphTables

__all__ = ["grade_eval_pairs", "dailydialog_pairs", "coverage_stats", "coverage_report"]


def grade_eval_pairs(data_dir=None) -> tuple[list[list[str]], list[str], list[str]]:
    """(contexts, responses, subsets) of the GRADE evaluation sets."""
    from ...benchmarks import load_benchmark

    ds = load_benchmark("grade_eval", data_dir=data_dir)
    contexts = [[t["text"] for t in ctx] for ctx in ds["context"]]
    return contexts, list(ds["response"]), list(ds["subset"])


def dailydialog_pairs(data_dir=None, split: str = "test", context_turns: int = 2):
    """Unique (two context turns, response) windows of a DailyDialog split, in corpus order."""
    from ...benchmarks import load_benchmark

    seen: dict[tuple[tuple[str, ...], str], None] = {}
    for dialogue in load_benchmark("dailydialog", split=split, data_dir=data_dir)["utterances"]:
        for k in range(context_turns, len(dialogue)):
            seen.setdefault((tuple(dialogue[k - context_turns : k]), dialogue[k]), None)
    return [list(c) for c, _ in seen], [r for _, r in seen]


def coverage_stats(
    featurizer: GraphFeaturizer,
    contexts: Sequence[Sequence[str]],
    responses: Sequence[str],
    *,
    graphs: dict[str, ConceptGraph] | None = None,
) -> dict[str, Any]:
    """Statistics of one set of pairs (see the module docstring). ``graphs``: extra graphs (name -> graph) whose
    hop statistics are reported on the same nodes."""
    t0 = time.perf_counter()
    items = featurizer.featurize_batch(contexts, responses)
    seconds = time.perf_counter() - t0
    n = len(items)
    n_ctx = np.array([int(it["node_is_context"].sum()) for it in items])
    n_resp = np.array([int(it["n_nodes"]) for it in items]) - n_ctx
    n_kw = sum(it["n_keywords"] for it in items)
    n_al = sum(it["n_aligned"] for it in items)
    node_kws = [kw for it in items for kw in it["keywords"]]
    distinct = set(node_kws)
    out: dict[str, Any] = {
        "n_items": n,
        "featurize_seconds": round(seconds, 2),
        "keywords_per_context": round(float(n_ctx.mean()), 3) if n else 0.0,
        "keywords_per_response": round(float(n_resp.mean()), 3) if n else 0.0,
        "items_without_keywords": int(sum(it["n_nodes"] == 0 for it in items)),
        "items_without_edges": int(sum(it["edge_index"].shape[1] == 0 for it in items)),
        "keywords": n_kw,
        "aligned_share": round(n_al / n_kw, 4) if n_kw else 0.0,
        "distinct_keywords": len(distinct),
        "distinct_aligned_share": round(
            sum(featurizer.concept(k) is not None for k in distinct) / len(distinct), 4
        ) if distinct else 0.0,
        "hops": {},
    }
    graph_set = {"tables": featurizer.tables.graph, **(graphs or {})}
    for name, graph in graph_set.items():
        hist: Counter[int] = Counter()
        items_reach = 0
        for it in items:
            kws, is_ctx = it["keywords"], it["node_is_context"].numpy()
            ctx = [k for k, c in zip(kws, is_ctx) if c]
            resp = [k for k, c in zip(kws, is_ctx) if not c]
            if not ctx or not resp:
                continue
            if graph is featurizer.tables.graph:
                hops = it["hops"].numpy()
            else:
                hops = graph.hops([graph.lookup(k) for k in ctx], [graph.lookup(k) for k in resp],
                                  max_depth=featurizer.tables.max_depth, unlimited_hop=featurizer.unlimited_hop)
                for i, a in enumerate(ctx):
                    for j, b in enumerate(resp):
                        if a == b:
                            hops[i, j] = 1
            hist.update(hops.ravel().tolist())
            items_reach += bool((hops < featurizer.unlimited_hop).any())
        total = sum(hist.values())
        reach = total - hist.get(featurizer.unlimited_hop, 0)
        out["hops"][name] = {
            "pairs": total,
            "reachable_share": round(reach / total, 4) if total else 0.0,
            "items_with_reachable_pair": items_reach,
            "histogram": {str(k): hist[k] for k in sorted(hist)},
        }
    return out


def _table(name: str, stats: dict[str, Any]) -> str:
    lines = [
        f"== {name}: {stats['n_items']} pairs (featurised in {stats['featurize_seconds']:.2f} s)",
        f"   keywords/context {stats['keywords_per_context']:.2f}"
        f"   keywords/response {stats['keywords_per_response']:.2f}"
        f"   no keyword {stats['items_without_keywords']}   no edge {stats['items_without_edges']}",
        f"   aligned {stats['aligned_share']:.1%} of {stats['keywords']} keywords"
        f" ({stats['distinct_aligned_share']:.1%} of {stats['distinct_keywords']} distinct)",
    ]
    for g, h in stats["hops"].items():
        hist = " ".join(f"{k}:{v}" for k, v in h["histogram"].items())
        lines.append(
            f"   [{g}] ctx-resp pairs {h['pairs']}, reachable {h['reachable_share']:.1%}, "
            f"items with a reachable pair {h['items_with_reachable_pair']}; hops {hist}"
        )
    return "\n".join(lines)


def coverage_report(
    data_dir: str | os.PathLike | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    embedding: str = DEFAULT_EMBEDDING,
    max_depth: int = DEFAULT_MAX_DEPTH,
    directed: bool = True,
    dailydialog: bool = True,
    echo: Callable[[str], None] | None = print,
) -> dict[str, Any]:
    """The report of the module docstring: the settings, the timings and :func:`coverage_stats` of the GRADE
    evaluation pairs (all, then per corpus) and, with ``dailydialog``, of DailyDialog test. ``directed`` adds the
    purely directed graph's hop statistics; ``echo`` (when not None) receives each set's table as it is done."""
    say = echo or (lambda text: None)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    extractor = KeywordExtractor.from_dailydialog(data_dir, cache_dir=cache_dir)
    timings["keyword_idf_seconds"] = round(time.perf_counter() - t0, 2)
    t0 = time.perf_counter()
    tables = GraphTables.build(data_dir, embedding=embedding, cache_dir=cache_dir, max_depth=max_depth)
    timings["tables_seconds"] = round(time.perf_counter() - t0, 2)
    graphs = {"directed": ConceptGraph.from_cn100k(data_dir, reverse_edges=False)} if directed else {}
    featurizer = GraphFeaturizer(tables, extractor)

    report: dict[str, Any] = {
        "settings": {**featurizer.config(), "embedding": embedding,
                     "tables_reverse_edges": tables.graph.meta.get("reverse_edges")},
        "timings": timings,
        "sets": {},
    }
    contexts, responses, subsets = grade_eval_pairs(data_dir)
    report["sets"]["grade_eval"] = coverage_stats(featurizer, contexts, responses, graphs=graphs)
    say(_table("grade_eval (all)", report["sets"]["grade_eval"]))
    # warm run: everything cached
    t0 = time.perf_counter()
    featurizer.featurize_batch(contexts, responses)
    timings["grade_eval_featurize_warm_seconds"] = round(time.perf_counter() - t0, 2)
    for corpus in sorted({s.split("/")[0] for s in subsets}):
        keep = [i for i, s in enumerate(subsets) if s.split("/")[0] == corpus]
        stats = coverage_stats(featurizer, [contexts[i] for i in keep], [responses[i] for i in keep], graphs=graphs)
        report["sets"][f"grade_eval/{corpus}"] = stats
        say(_table(f"grade_eval/{corpus}", stats))
    if dailydialog:
        dd_ctx, dd_resp = dailydialog_pairs(data_dir)
        report["sets"]["dailydialog_test"] = coverage_stats(featurizer, dd_ctx, dd_resp, graphs=graphs)
        say(_table("dailydialog test", report["sets"]["dailydialog_test"]))
    say("timings: " + json.dumps(timings))
    return report
