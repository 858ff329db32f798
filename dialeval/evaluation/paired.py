"""Paired comparison of two metrics' results on the same benchmark items (``dialeval compare``).

:func:`compare_results` takes two results of one benchmark split, fresh from :func:`~.runner.run_benchmark`
(``.to_dict()``) or read back from the JSON that ``dialeval benchmark`` writes (so a comparison needs no second
scoring run), and returns one row per comparison:

* a correlation benchmark: per subset and pooled, :func:`.stats.compare_metrics` of the two metrics' scores against
  the human ratings of one aspect (Williams' test and a paired bootstrap);
* a discrimination benchmark (DailyDialog++): per negative kind, :func:`.stats.compare_discrimination` (within-
  context accuracy and pooled AUC, paired bootstrap over contexts). The saved result holds the scores only; which
  score belongs to which context and kind is rebuilt from the benchmark's rows
  (:func:`~.runner.discrimination_items`), so the data directory must hold the same set.

Two results that do not cover the same items (another benchmark or split, another number of items, other item
ids) are refused with the reason.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import stats
from .runner import DISCRIMINATION_NEGATIVES, discrimination_items, discrimination_matrices

__all__ = ["ResultsMismatch", "compare_results"]


class ResultsMismatch(ValueError):
    """The two results do not score the same items."""


def compare_results(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    *,
    aspect: str | None = None,
    method: stats.Method = "pearson",
    n_boot: int = 1000,
    seed: int = 0,
    data_dir: str | os.PathLike | None = None,
) -> list[dict[str, Any]]:
    """Rows comparing result ``a`` with result ``b`` (dicts as :func:`~.runner.read_results` gives, or
    ``BenchmarkResult.to_dict()``; see the module docstring); ``aspect`` defaults to the benchmark's default aspect
    (correlation benchmarks only)."""
    from ..benchmarks import benchmark_info, load_benchmark

    benchmark, split = a["benchmark"], a["split"]
    if (b["benchmark"], b["split"]) != (benchmark, split):
        raise ResultsMismatch(f"{a['metric']} is on {benchmark} ({split}), {b['metric']} on "
                              f"{b['benchmark']} ({b['split']}): compare results of one split")
    scores_a, scores_b = np.asarray(a["scores"], float), np.asarray(b["scores"], float)
    if scores_a.shape != scores_b.shape:
        raise ResultsMismatch(f"{benchmark} ({split}): {len(scores_a)} scores for {a['metric']}, "
                              f"{len(scores_b)} for {b['metric']}")
    info = benchmark_info(benchmark)
    base = {"benchmark": benchmark, "split": split, "metric_a": a["metric"], "metric_b": b["metric"]}
    if info.kind == "discrimination":
        ds = load_benchmark(benchmark, split=split, data_dir=data_dir)
        _, _, kinds, owner = discrimination_items(ds)
        ma, mb = discrimination_matrices(scores_a, kinds, owner), discrimination_matrices(scores_b, kinds, owner)
        return [{**base, "aspect": f"positive>{negative}", "subset": "pooled",
                 **stats.compare_discrimination(ma["positive"], ma[negative], mb["positive"], mb[negative],
                                                n_boot=n_boot, seed=seed)}
                for negative in DISCRIMINATION_NEGATIVES]
    if info.kind != "correlation":
        raise ResultsMismatch(f"{benchmark} is a {info.kind} benchmark: compare covers correlation and "
                              "discrimination benchmarks")
    if list(a["item_ids"]) != list(b["item_ids"]):
        raise ResultsMismatch(f"{benchmark} ({split}): the two results list other items (item_ids differ)")
    chosen = aspect or info.default_aspect
    human_by_aspect = a["human"]
    if chosen not in human_by_aspect:
        raise ResultsMismatch(f"{benchmark} ({split}): no human ratings of {chosen!r} in the result of "
                              f"{a['metric']}; aspects: {', '.join(human_by_aspect)}")
    human = np.array([np.nan if v is None else v for v in human_by_aspect[chosen]], dtype=float)
    keep = np.isfinite(human)
    subsets = np.asarray(a["subsets"])
    rows = []
    for subset in [*dict.fromkeys(subsets.tolist()), "pooled"]:
        sel = keep & ((subsets == subset) if subset != "pooled" else True)
        res = stats.compare_metrics(scores_a[sel], scores_b[sel], human[sel], method=method, n_boot=n_boot, seed=seed)
        rows.append({**base, "aspect": chosen, "subset": subset, **res})
    return rows
