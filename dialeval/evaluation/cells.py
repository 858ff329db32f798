"""Reports over chosen evaluation cells of ``dialeval benchmark`` results (what ``dialeval report --cells`` prints).

A *cell* is one correlation in a benchmark result: ``benchmark:subset:aspect``, e.g.
``grade_eval:dailydialog/transformer_ranker:coherence`` or ``fed_turn:pooled:Overall``. The subset defaults to
``pooled`` and the aspect to the benchmark's default aspect, so ``usr_topicalchat`` alone means its pooled
Overall rating. Named cell sets stand for the sets a paper states a claim on (:data:`CELL_SETS`).

Two reports:

* :func:`detail_table`: Pearson and Spearman with p-values and 95% bootstrap CIs for each metric in each cell (the
  numbers are those the benchmark wrote; nothing is recomputed).
* :func:`relative_gain_table`: each metric's average of ``(Pearson + Spearman) / 2`` over the cells and its gain
  over a baseline metric, in correlation points and relative, with paired bootstrap CIs
  (:func:`dialeval.evaluation.stats.relative_average_gain`), recomputed from the per-item scores the JSON files hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import stats
from ..benchmarks import benchmark_info

CELL_SETS: dict[str, tuple[str, ...]] = {
    # PONE (Lan et al.) states its gain over the GRADE DailyDialog sets, the USR sets and the FED turn set
    # (issue 5); each set's Overall (or only) rating.
    "pone_paper": (
        "grade_eval:dailydialog/transformer_generator",
        "grade_eval:dailydialog/transformer_ranker",
        "usr_topicalchat",
        "usr_personachat",
        "fed_turn",
    ),
}


@dataclass(frozen=True)
class Cell:
    benchmark: str
    subset: str
    aspect: str

    def __str__(self) -> str:
        return f"{self.benchmark}:{self.subset}:{self.aspect}"


def parse_cells(spec: str) -> list[Cell]:
    """A named cell set (see :data:`CELL_SETS`) or comma-separated ``benchmark[:subset[:aspect]]`` specs."""
    parts = CELL_SETS.get(spec) or [p.strip() for p in spec.split(",") if p.strip()]
    if not parts:
        raise ValueError(f"no cells in {spec!r}; give a named set ({', '.join(CELL_SETS)}) or benchmark:subset:aspect")
    cells = []
    for part in parts:
        fields = part.split(":")
        if len(fields) > 3 or not fields[0]:
            raise ValueError(f"cell {part!r}: expected benchmark[:subset[:aspect]]")
        info = benchmark_info(fields[0])
        if info.kind != "correlation":
            raise ValueError(f"cell {part!r}: {fields[0]} is a {info.kind} benchmark, not a correlation one")
        subset = fields[1] if len(fields) > 1 and fields[1] else "pooled"
        aspect = fields[2] if len(fields) > 2 and fields[2] else info.default_aspect
        if aspect not in info.aspects:
            raise ValueError(f"cell {part!r}: {fields[0]} has no aspect {aspect!r}; aspects: {', '.join(info.aspects)}")
        cells.append(Cell(fields[0], subset, aspect))
    return cells


Results = dict[tuple[str, str], dict[str, Any]]


def index_results(results: list[dict[str, Any]]) -> Results:
    """``(metric, benchmark) -> result``, in file order; two results of one metric on one benchmark are an error."""
    index: Results = {}
    for res in results:
        key = (res["metric"], res["benchmark"])
        if key in index:
            raise ValueError(f"metric {key[0]!r} has two results for {key[1]} in the given files; "
                             "pass one, or name the runs apart with `dialeval benchmark --label`")
        index[key] = res
    return index


def _metrics(index: Results) -> list[str]:
    return list(dict.fromkeys(metric for metric, _ in index))


def _row(index: Results, metric: str, cell: Cell) -> dict[str, Any] | None:
    rows = index[(metric, cell.benchmark)]["rows"] if (metric, cell.benchmark) in index else []
    return next((r for r in rows if r["subset"] == cell.subset and r["aspect"] == cell.aspect), None)


def cell_items(index: Results, metric: str, cell: Cell) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(item_ids, scores, human)`` of ``metric`` in ``cell``, items without a human rating left out."""
    res = index.get((metric, cell.benchmark))
    if res is None or cell.aspect not in res.get("human", {}):
        raise ValueError(f"cell {cell}: no result of metric {metric!r} with aspect {cell.aspect!r} in the given files")
    human = res["human"][cell.aspect]
    keep = [i for i, (s, h) in enumerate(zip(res["subsets"], human))
            if h is not None and (cell.subset == "pooled" or s == cell.subset)]
    if not keep:
        raise ValueError(f"cell {cell}: metric {metric!r} has no rated items in subset {cell.subset!r}")
    return ([res["item_ids"][i] for i in keep], np.asarray([res["scores"][i] for i in keep], dtype=float),
            np.asarray([human[i] for i in keep], dtype=float))


def _cell_fmt(r: dict[str, Any], coefficient: str) -> tuple[str, str]:
    value = f"{r[f'{coefficient}_r']:.3f} [{r[f'{coefficient}_ci_low']:.3f}, {r[f'{coefficient}_ci_high']:.3f}]"
    return value, f"{r[f'{coefficient}_p']:.1e}"


def detail_table(index: Results, cells: list[Cell]) -> str:
    """Markdown: one line per (cell, metric) with n, Pearson [95% CI], p, Spearman [95% CI], p."""
    lines = ["| set | metric | n | Pearson [95% CI] | p | Spearman [95% CI] | p |", "|---|---|---|---|---|---|---|"]
    for cell in cells:
        for metric in _metrics(index):
            r = _row(index, metric, cell)
            if r is None:
                continue
            (pv, pp), (sv, sp) = _cell_fmt(r, "pearson"), _cell_fmt(r, "spearman")
            lines.append(f"| {cell} | {metric} | {r['n']} | {pv} | {pp} | {sv} | {sp} |")
    if len(lines) == 2:
        raise ValueError("none of the cells " + ", ".join(map(str, cells)) + " is in the given files")
    return "\n".join(lines) + "\n"


def relative_gain_table(index: Results, cells: list[Cell], baseline: str, *,
                        n_boot: int = 1000, seed: int = 0) -> str:
    """Markdown: per metric, (Pearson + Spearman) / 2 in each cell, their mean, and the gain over ``baseline``.

    The baseline must have every cell (else an error naming the cell). Every other metric is compared on the
    same items as the baseline (checked by item id); a metric without a result for some cell gets a row that
    names the missing cells instead of an average over fewer sets.
    """
    base = {cell: cell_items(index, baseline, cell) for cell in cells}
    head = ["metric"] + [str(c) for c in cells] + ["mean", f"gain vs {baseline}, points [95% CI]", "relative [95% CI]",
                                                    "p (gain <= 0)"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---|" * (len(head) - 1)]
    for metric in _metrics(index):
        missing = [str(c) for c in cells if _row(index, metric, c) is None]
        if missing:
            blanks = " | ".join([""] * (len(head) - 2))
            lines.append(f"| {metric} | {blanks} | no result for {', '.join(missing)} |")
            continue
        triples = []
        for cell in cells:
            ids, scores, human = cell_items(index, metric, cell)
            base_ids, base_scores, _ = base[cell]
            if ids != base_ids:
                raise ValueError(f"cell {cell}: metric {metric!r} and baseline {baseline!r} were scored on "
                                 "different items")
            triples.append((scores, base_scores, human))
        res = stats.relative_average_gain(triples, n_boot=n_boot, seed=seed)
        if metric == baseline:
            gains = ["(baseline)", "", ""]
        else:
            gains = [f"{res['difference']:+.3f} [{res['difference_ci_low']:+.3f}, {res['difference_ci_high']:+.3f}]",
                     f"{res['gain']:+.1%} [{res['ci_low']:+.1%}, {res['ci_high']:+.1%}]", f"{res['p_bootstrap']:.3f}"]
        cells_text = [f"{c['a']:.3f}" for c in res["cells"]]
        lines.append(f"| {metric} | " + " | ".join(cells_text + [f"{res['mean_a']:.3f}", *gains]) + " |")
    return "\n".join(lines) + "\n"
