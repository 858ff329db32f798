"""Correlate a metric with human judgements on a benchmark (what ``dialeval benchmark`` runs).

For a correlation benchmark every item is scored once; then, for each aspect, Pearson, Spearman and Kendall
(with p-values and bootstrap confidence intervals) are computed per subset and pooled over all items. Items
without a numeric human score for an aspect are left out of that aspect's correlation and counted
(``n_missing_human``). For DailyDialog++ the result is discrimination accuracy (positive scored above negative)
against random and adversarial negatives: within each context (``positive>random``), and against the negatives of
every context (``positive>random any context``, the AUC of the pooled scores: a score whose level drifts from
context to context loses there, not within a context). For a sanity benchmark (:mod:`dialeval.benchmarks.sanity`) it
is, per source and perturbation, how often the original scores above its perturbed copy.
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..benchmarks import benchmark_info, load_benchmark
from ..errors import InputFileError
from ..scoring import Scorer
from ..scoring.registry import load_scorer
from . import stats
from .diagnostics import diagnose, mean_over_checks

COEFFICIENTS = ("pearson", "spearman", "kendall")


class MetricNotApplicable(ValueError):
    """The metric cannot run on this benchmark (e.g. it needs references the benchmark does not have)."""


@dataclass
class BenchmarkResult:
    metric: str
    benchmark: str
    split: str
    signature: str
    level: str | None
    rows: list[dict[str, Any]]
    scores: list[float] = field(default_factory=list)
    item_ids: list[str] = field(default_factory=list)
    human: dict[str, list[float | None]] = field(default_factory=dict)
    subsets: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)  # correlation and sanity benchmarks: see .diagnostics

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _result_metadata(out) -> dict[str, Any]:
    """A scoring call's metadata as a result keeps it: without the per-dialogue turn scores."""
    return {k: v for k, v in out.metadata.items() if k != "turn_scores"}


def _as_messages(context: list[dict]) -> list[dict[str, str]]:
    return [{"role": t["speaker"] or "", "content": t["text"]} for t in context]


def _score_correlation_set(scorer: Scorer, ds, *, level: str, batch_size: int, progress_bar: bool | None):
    contexts = [_as_messages(c) for c in ds["context"]]
    if level == "dialogue":
        return scorer.score_dialogues(dialogues=contexts, batch_size=batch_size, progress_bar=progress_bar)
    references = ds["references"] if scorer.requires_references else None
    return scorer.score(
        contexts=contexts,
        responses=ds["response"],
        references=references,
        batch_size=batch_size,
        progress_bar=progress_bar,
    )


def _correlation_rows(
    scores: np.ndarray, human: list[list[float | None]], aspects: list[str], subsets: list[str],
    *, n_boot: int, seed: int,
) -> list[dict[str, Any]]:
    rows = []
    for a, aspect in enumerate(aspects):
        values = [h[a] for h in human]
        keep = np.array([v is not None for v in values])
        y = np.array([v for v in values if v is not None], dtype=np.float64)
        groups = [s for s, k in zip(subsets, keep) if k]
        per_group = stats.correlate_groups(scores[keep], y, groups, n_boot=n_boot, seed=seed)
        for subset, res in per_group.items():
            row: dict[str, Any] = {"aspect": aspect, "subset": subset, "n": res["n"]}
            row["n_missing_human"] = int((~keep).sum()) if subset == "pooled" else int(
                sum(1 for s, k in zip(subsets, keep) if s == subset and not k)
            )
            for c in COEFFICIENTS:
                for key in ("r", "p", "ci_low", "ci_high"):
                    row[f"{c}_{key}"] = res[c][key]
            rows.append(row)
    return rows


def run_benchmark(
    metric: str | Scorer,
    benchmark: str,
    *,
    aspect: str | None = None,
    split: str | None = None,
    data_dir: str | os.PathLike | None = None,
    batch_size: int = 32,
    n_boot: int = 1000,
    seed: int = 0,
    device: str | None = None,
    progress_bar: bool | None = None,
) -> BenchmarkResult:
    """Score ``benchmark`` with ``metric`` and correlate with its human ratings."""
    info = benchmark_info(benchmark)
    scorer = load_scorer(metric, device=device) if isinstance(metric, str) else metric
    split = split or ("test" if "test" in info.splits else info.splits[0])
    ds = load_benchmark(benchmark, split=split, data_dir=data_dir)
    if info.kind == "discrimination":
        return _run_discrimination(scorer, benchmark, split, ds, batch_size=batch_size, n_boot=n_boot,
                                   seed=seed, progress_bar=progress_bar)
    if info.kind == "sanity":
        return _run_sanity(scorer, benchmark, split, ds, level=info.level, batch_size=batch_size, n_boot=n_boot,
                           seed=seed, progress_bar=progress_bar)
    if info.kind != "correlation":
        raise MetricNotApplicable(f"{benchmark} is a {info.kind}, not a human-judgement benchmark")
    if scorer.requires_references and not info.has_references:
        raise MetricNotApplicable(f"metric '{scorer.name}' needs references and {benchmark} has none")
    aspects = list(info.aspects)
    if aspect is not None and aspect not in aspects:
        raise KeyError(f"{benchmark} has no aspect {aspect!r}; aspects: {', '.join(aspects)}")
    out = _score_correlation_set(scorer, ds, level=info.level, batch_size=batch_size, progress_bar=progress_bar)
    scores = np.asarray(out.scores, dtype=np.float64)
    chosen = [aspect] if aspect else aspects
    idx = [aspects.index(a) for a in chosen]
    human = [[h[i] for i in idx] for h in ds["human"]]
    rows = _correlation_rows(scores, human, chosen, list(ds["subset"]), n_boot=n_boot, seed=seed)
    for r in rows:
        r.update(metric=scorer.name, benchmark=benchmark)
    turns = [[t["text"] for t in c] for c in ds["context"]]
    main = info.default_aspect if info.default_aspect in chosen else chosen[0]
    diagnostics = diagnose(scores, level=info.level, contexts=turns,
                           responses=None if info.level == "dialogue" else list(ds["response"]), rows=rows,
                           subsets=list(ds["subset"]), human=[h[chosen.index(main)] for h in human])
    return BenchmarkResult(
        metric=scorer.name, benchmark=benchmark, split=split, signature=out.signature, level=info.level,
        rows=rows, scores=out.scores, item_ids=list(ds["id"]),
        human={a: [h[j] for h in human] for j, a in enumerate(chosen)}, subsets=list(ds["subset"]),
        metadata=_result_metadata(out), diagnostics=diagnostics,
    )


DISCRIMINATION_FIELDS = {"positive": "positive_responses", "adversarial": "adversarial_negative_responses",
                         "random": "random_negative_responses"}
DISCRIMINATION_NEGATIVES = ("random", "adversarial")


def discrimination_items(ds) -> tuple[list[list[str]], list[str], np.ndarray, np.ndarray]:
    """``(contexts, responses, kinds, owner)``: the (context, response) items of a discrimination set in the order
    they are scored (per context: its positives, adversarial then random negatives), each item's kind and the index
    of its context."""
    contexts, responses, kinds, owner = [], [], [], []
    for i, row in enumerate(ds):
        for kind, column in DISCRIMINATION_FIELDS.items():
            for r in row[column]:
                contexts.append(row["context"])
                responses.append(r)
                kinds.append(kind)
                owner.append(i)
    return contexts, responses, np.asarray(kinds), np.asarray(owner)


def discrimination_matrices(scores, kinds: np.ndarray, owner: np.ndarray) -> dict[str, np.ndarray]:
    """Per kind, the ``(n_contexts, k)`` matrix of the scores of :func:`discrimination_items`' items."""
    scores = np.asarray(scores)
    if len(scores) != len(kinds):
        raise ValueError(f"{len(scores)} scores for {len(kinds)} items of the discrimination set")
    n = int(owner.max()) + 1 if len(owner) else 0
    return {kind: np.stack([scores[(kinds == kind) & (owner == i)] for i in range(n)])
            for kind in DISCRIMINATION_FIELDS}


def _run_discrimination(scorer, benchmark, split, ds, *, batch_size, n_boot, seed, progress_bar):
    contexts, responses, kinds, owner = discrimination_items(ds)
    if scorer.requires_references:
        raise MetricNotApplicable(f"metric '{scorer.name}' needs references and {benchmark} has none")
    out = scorer.score(contexts=contexts, responses=responses, batch_size=batch_size, progress_bar=progress_bar)
    matrix = discrimination_matrices(out.scores, kinds, owner)
    pos = matrix["positive"]
    rows = []
    for negative in DISCRIMINATION_NEGATIVES:
        res = stats.discrimination_accuracy(pos, matrix[negative], n_boot=n_boot, seed=seed)
        rows.append({"metric": scorer.name, "benchmark": benchmark, "aspect": f"positive>{negative}",
                     "subset": "pooled", **res})
        res = stats.across_context_auc(pos, matrix[negative], n_boot=n_boot, seed=seed)
        rows.append({"metric": scorer.name, "benchmark": benchmark, "aspect": f"positive>{negative} any context",
                     "subset": "pooled", **res})
    return BenchmarkResult(metric=scorer.name, benchmark=benchmark, split=split, signature=out.signature,
                           level="turn", rows=rows, scores=out.scores,
                           metadata=_result_metadata(out))


def _run_sanity(scorer, benchmark, split, ds, *, level, batch_size, n_boot, seed, progress_bar):
    """Each row's original against each of its perturbed copies: one accuracy row per (source, perturbation)."""
    if scorer.requires_references:
        raise MetricNotApplicable(f"metric '{scorer.name}' needs references and {benchmark} has none")
    n, kinds = len(ds), ds[0]["kinds"] if len(ds) else []
    for i, row in enumerate(ds):
        if row["kinds"] != kinds:
            raise ValueError(f"{benchmark} row {i}: perturbations {row['kinds']}, expected {kinds}")
    if level == "dialogue":
        dialogues = [_as_messages(d) for d in ds["dialogue"]]
        dialogues += [_as_messages(p) for perturbed in ds["perturbed"] for p in perturbed]
        out = scorer.score_dialogues(dialogues=dialogues, batch_size=batch_size, progress_bar=progress_bar)
    else:
        contexts = [_as_messages(c) for c in ds["context"]]
        out = scorer.score(contexts=contexts + [c for c in contexts for _ in kinds],
                           responses=list(ds["response"]) + [p for perturbed in ds["perturbed"] for p in perturbed],
                           batch_size=batch_size, progress_bar=progress_bar)
    scores = np.asarray(out.scores, dtype=np.float64)
    original, perturbed = scores[:n], scores[n:].reshape(n, len(kinds))
    sources = np.asarray(ds["source"])
    better = "original" if level == "dialogue" else "gold"
    rows = []
    for source in dict.fromkeys(ds["source"]):
        sel = sources == source
        for k, kind in enumerate(kinds):
            res = stats.discrimination_accuracy(original[sel], perturbed[sel, k], n_boot=n_boot, seed=seed)
            rows.append({"metric": scorer.name, "benchmark": benchmark, "aspect": f"{better}>{kind}",
                         "subset": source, **res})
    return BenchmarkResult(metric=scorer.name, benchmark=benchmark, split=split, signature=out.signature,
                           level=level, rows=rows, scores=out.scores, item_ids=list(ds["id"]),
                           metadata=_result_metadata(out),
                           diagnostics={"mean_over_checks": mean_over_checks(rows)})


def comparison(row: dict[str, Any]) -> str:
    """What a discrimination or sanity row compares, with its source when it is not the pooled set."""
    return row["aspect"] if row["subset"] == "pooled" else f"{row['subset']}: {row['aspect']}"


# -- reporting ----------------------------------------------------------------------------------------------------
def format_table(rows: list[dict[str, Any]]) -> str:
    """A fixed-width text table of correlation or discrimination rows."""
    if not rows:
        return "(no rows)"
    if "accuracy" in rows[0]:
        head = f"{'metric':<18} {'benchmark':<16} {'comparison':<40} {'accuracy':>8} {'95% CI':>17} {'pairs':>10}"
        lines = [head, "-" * len(head)]
        for r in rows:
            ci = f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
            lines.append(f"{r['metric']:<18} {r['benchmark']:<16} {comparison(r):<40} {r['accuracy']:>8.3f} "
                         f"{ci:>17} {r['n_pairs']:>10}")
        return "\n".join(lines)
    head = (f"{'metric':<18} {'benchmark':<16} {'subset':<36} {'aspect':<24} {'n':>5} "
            f"{'pearson (p) [CI]':>30} {'spearman (p) [CI]':>30} {'kendall (p)':>16}")
    lines = [head, "-" * len(head)]
    for r in rows:
        def cell(c: str, ci: bool = True) -> str:
            text = f"{r[f'{c}_r']:.3f} ({r[f'{c}_p']:.1e})"
            return text + (f" [{r[f'{c}_ci_low']:.2f},{r[f'{c}_ci_high']:.2f}]" if ci else "")
        lines.append(f"{r['metric']:<18} {r['benchmark']:<16} {r['subset']:<36} {r['aspect']:<24} {r['n']:>5} "
                     f"{cell('pearson'):>30} {cell('spearman'):>30} {cell('kendall', False):>16}")
    return "\n".join(lines)


def write_json(results: list[BenchmarkResult], path: Path) -> None:
    path.write_text(json.dumps([r.to_dict() for r in results], indent=1, allow_nan=True))


def read_results(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The results in a JSON file written by :func:`write_json` (``dialeval benchmark``); :class:`InputFileError`
    naming the file for anything else."""
    path = Path(path)
    if not path.is_file():
        raise InputFileError(f"{path} does not exist or is not a file")
    try:
        loaded = json.loads(path.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise InputFileError(f"{path} is not UTF-8 text") from None
    except json.JSONDecodeError as err:
        raise InputFileError(f"{path}:{err.lineno}: not valid JSON ({err.msg})") from None
    if not isinstance(loaded, list) or not all(isinstance(r, dict) and {"benchmark", "rows"} <= r.keys()
                                               for r in loaded):
        raise InputFileError(f"{path} is not a results file of `dialeval benchmark` (a JSON list of results, each "
                             "with 'benchmark' and 'rows')")
    return [rows_from_table(res, source=f"{path}: result {i}") for i, res in enumerate(loaded)]


def rows_as_table(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with its rows stored as one table: ``columns`` (the rows' keys, less the ``metric`` and
    ``benchmark`` the result itself names) and ``rows`` as lists of values. Rows whose keys differ stay as they are.
    :func:`read_results` turns the table back into the rows it came from (the result's ``metric`` and ``benchmark``
    as their last keys)."""
    rows = result["rows"]
    keys = {tuple(row) for row in rows}
    if len(keys) != 1:
        return result
    own = {k: result[k] for k in ("metric", "benchmark") if k in result}
    if not all(k in row and row[k] == v for row in rows for k, v in own.items()):
        return result
    columns = [k for k in next(iter(keys)) if k not in own]
    return {**{k: v for k, v in result.items() if k != "rows"}, "columns": columns,
            "rows": [[row[c] for c in columns] for row in rows]}


def rows_from_table(result: dict[str, Any], *, source: str) -> dict[str, Any]:
    """The inverse of :func:`rows_as_table` (a result without ``columns`` is returned as it is); a row whose length
    is not the columns' is an :class:`InputFileError` naming ``source`` and the row."""
    if "columns" not in result:
        return result
    columns, own = result["columns"], {}
    for i, row in enumerate(result["rows"]):
        if not isinstance(row, list) or len(row) != len(columns):
            raise InputFileError(f"{source}, row {i}: {len(row) if isinstance(row, list) else type(row).__name__} "
                                 f"values for {len(columns)} columns")
    for k in ("metric", "benchmark"):
        if k in result and k not in columns:
            own[k] = result[k]
    rows = [{**dict(zip(columns, row)), **own} for row in result["rows"]]
    return {**{k: v for k, v in result.items() if k != "columns"}, "rows": rows}


def write_csv(results: list[BenchmarkResult], path: Path) -> None:
    rows = [dict(r, signature=res.signature, split=res.split) for res in results for r in res.rows]
    if not rows:
        path.write_text("")
        return
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{value:.3f}"


def markdown_report(rows: list[dict[str, Any]]) -> str:
    """Markdown tables from benchmark rows (as written to JSON): one table per benchmark, metrics as rows.

    Correlation cells are ``Pearson / Spearman`` (a ``*`` marks p >= 0.05 for either); discrimination cells are
    accuracies. Every subset is shown for a benchmark with one aspect, the pooled set for benchmarks with several.
    """
    by_bench: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_bench.setdefault(r["benchmark"], []).append(r)
    out = []
    for bench, items in by_bench.items():
        metrics = list(dict.fromkeys(r["metric"] for r in items))
        if "accuracy" in items[0]:
            cols = list(dict.fromkeys(comparison(r) for r in items))
            cell = {(r["metric"], comparison(r)): _fmt(r["accuracy"]) for r in items}
        else:
            aspects = list(dict.fromkeys(r["aspect"] for r in items))
            if len(aspects) == 1:
                cols = list(dict.fromkeys(r["subset"] for r in items))
                key = lambda r: r["subset"]  # noqa: E731
            else:
                cols = aspects
                items = [r for r in items if r["subset"] == "pooled"]
                key = lambda r: r["aspect"]  # noqa: E731
            cell = {}
            for r in items:
                star = "*" if max(r["pearson_p"], r["spearman_p"]) >= 0.05 else ""
                cell[(r["metric"], key(r))] = f"{_fmt(r['pearson_r'])} / {_fmt(r['spearman_r'])}{star}"
        if "accuracy" in items[0]:
            size = f"{max(r['n_contexts'] for r in items)} contexts, {max(r['n_pairs'] for r in items)} pairs"
        else:
            size = f"n = {max(r['n'] for r in items if r['subset'] == 'pooled')}"
        out.append(f"**{bench}** ({size})\n")
        out.append("| metric | " + " | ".join(cols) + " |")
        out.append("|---|" + "---|" * len(cols))
        for m in metrics:
            out.append(f"| {m} | " + " | ".join(cell.get((m, c), "") for c in cols) + " |")
        out.append("")
    return "\n".join(out)


def corpus_summary(rows: list[dict[str, Any]]) -> str:
    """Markdown table per benchmark: the mean of (Pearson + Spearman) / 2 over the subsets of each source corpus.

    A subset ``corpus/system`` belongs to ``corpus``; the pooled row is shown as is. Discrimination rows and
    benchmarks whose subsets have no ``corpus/`` prefix are left out. This is the "mean of Pearson and Spearman"
    the GRADE goals are stated in.
    """
    out = []
    by_bench: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if "pearson_r" in r and ("/" in r["subset"] or r["subset"] == "pooled"):
            by_bench.setdefault(r["benchmark"], []).append(r)
    for bench, items in by_bench.items():
        corpora = list(dict.fromkeys(r["subset"].split("/")[0] for r in items if "/" in r["subset"]))
        if not corpora:
            continue
        metrics = list(dict.fromkeys(r["metric"] for r in items))
        subsets = {r["subset"] for r in items}
        n_sets = {c: sum(1 for s in subsets if s.startswith(c + "/")) for c in corpora}
        out.append(f"**{bench}**: mean of (Pearson + Spearman) / 2 per corpus\n")
        out.append("| metric | " + " | ".join(f"{c} ({n_sets[c]} sets)" for c in corpora) + " | pooled |")
        out.append("|---|" + "---|" * (len(corpora) + 1))
        for m in metrics:
            mine = [r for r in items if r["metric"] == m]
            cells = []
            for c in corpora:
                vals = [(r["pearson_r"] + r["spearman_r"]) / 2 for r in mine if r["subset"].startswith(c + "/")]
                cells.append(_fmt(float(np.mean(vals))) if vals else "")
            pooled = [r for r in mine if r["subset"] == "pooled"]
            cells.append(_fmt((pooled[0]["pearson_r"] + pooled[0]["spearman_r"]) / 2) if pooled else "")
            out.append(f"| {m} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def emit_measurements(result: dict[str, Any], json_path: str | os.PathLike | None, *, width: int = 26) -> None:
    """Print a speed benchmark's ``key: value`` lines and, when ``json_path`` is given, write them as JSON (its
    folder made if missing)."""
    for key, value in result.items():
        print(f"{key:>{width}}: {value}")
    if json_path:
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        with open(json_path, "w") as fh:
            json.dump(result, fh, indent=1)
