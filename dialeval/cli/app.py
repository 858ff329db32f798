"""Command line: ``dialeval score``, ``dialeval benchmark``, ``dialeval list``."""

from __future__ import annotations

import csv
import inspect
import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Learned metrics for open-domain dialogue.")

ALL_BASELINES = "baselines"
ALL_BENCHMARKS = "all"


def _read_rows(path: Path, turn_separator: str | None) -> list[dict[str, Any]]:
    if not path.exists():
        raise typer.BadParameter(f"{path} does not exist", param_hint="--input")
    if path.suffix.lower() == ".csv":
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        for row in rows:
            for key in ("context", "dialogue"):
                if turn_separator and isinstance(row.get(key), str):
                    row[key] = row[key].split(turn_separator)
            if row.get("references"):
                row["references"] = row["references"].split(turn_separator) if turn_separator else [row["references"]]
        return rows
    rows = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise typer.BadParameter(f"{path}:{n} is not valid JSON ({err.msg})", param_hint="--input")
    return rows


def _column(rows: list[dict], key: str, *aliases: str) -> list | None:
    for k in (key, *aliases):
        if any(k in r for r in rows):
            missing = [i for i, r in enumerate(rows) if k not in r]
            if missing:
                raise typer.BadParameter(f"rows {missing[:10]} have no '{k}' field", param_hint="--input")
            return [r[k] for r in rows]
    return None


CHECKPOINT_HELP = "Learned metrics only: a checkpoint folder or training run folder (default: the shipped one)."
OPTION_HELP = ("A scorer setting KEY=VALUE, repeatable (e.g. turn_score=delta for dynaeval, hybrid=max for "
               "bert_ruber); VALUE is read as JSON when it parses (numbers, true, null), else as text.")


def _scorer_options(metric: str, options: list[str] | None, parameters: list[str]) -> dict:
    """``KEY=VALUE`` strings -> scorer keyword arguments, each key one of the scorer's ``parameters``."""
    settable = [p for p in parameters if p not in ("self", "device", "checkpoint")]
    parsed: dict = {}
    for option in options or []:
        key, sep, text = option.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{option!r} is not KEY=VALUE", param_hint="--option")
        if key not in settable:
            raise typer.BadParameter(f"metric '{metric}' has no setting {key!r}; settings: "
                                     f"{', '.join(settable) or '(none)'}", param_hint="--option")
        if key in parsed:
            raise typer.BadParameter(f"{key!r} is given twice", param_hint="--option")
        try:
            parsed[key] = json.loads(text)
        except json.JSONDecodeError:
            parsed[key] = text
    return parsed


def _load(metric: str, *, device: str | None, checkpoint: str | None, options: list[str] | None = None):
    from ..scoring.registry import load_scorer, scorer_class

    parameters = list(inspect.signature(scorer_class(metric).__init__).parameters)
    kwargs = _scorer_options(metric, options, parameters)
    if checkpoint is not None:
        if "checkpoint" not in parameters:
            raise typer.BadParameter(f"metric '{metric}' has no checkpoint to choose", param_hint="--checkpoint")
        kwargs["checkpoint"] = checkpoint
    try:
        return load_scorer(metric, device=device, **kwargs)
    except ValueError as err:
        if not options:
            raise
        raise typer.BadParameter(str(err), param_hint="--option") from None  # a setting the scorer refuses


@app.command()
def score(
    metric: Annotated[str, typer.Option(help="Metric name (see `dialeval list`).")],
    input: Annotated[Path, typer.Option("--input", "-i", help="JSONL or CSV: context/response[/references] or dialogue.")],
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write rows + score (.jsonl or .csv).")] = None,
    batch_size: Annotated[int, typer.Option(help="Items per batch.")] = 32,
    device: Annotated[Optional[str], typer.Option(help="cpu, cuda, cuda:1, mps... (default: Accelerate picks).")] = None,
    turn_separator: Annotated[Optional[str], typer.Option(help="CSV only: split context/dialogue cells into turns.")] = None,
    checkpoint: Annotated[Optional[str], typer.Option(help=CHECKPOINT_HELP)] = None,
    option: Annotated[Optional[list[str]], typer.Option(help=OPTION_HELP)] = None,
) -> None:
    """Score a file of context-response pairs (or whole dialogues) and print the system score."""
    from ..schema import InputError

    rows = _read_rows(input, turn_separator)
    scorer = _load(metric, device=device, checkpoint=checkpoint, options=option)
    try:
        dialogues = _column(rows, "dialogue")
        if dialogues is not None:
            out = scorer.score_dialogues(dialogues=dialogues, batch_size=batch_size)
        else:
            contexts = _column(rows, "context")
            responses = _column(rows, "response")
            if contexts is None or responses is None:
                raise typer.BadParameter("rows need 'context' and 'response' (or 'dialogue')", param_hint="--input")
            references = _column(rows, "references", "reference")
            out = scorer.score(contexts=contexts, responses=responses, references=references, batch_size=batch_size)
    except InputError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2)
    for row, value in zip(rows, out.scores):
        row["score"] = value
    if output is not None:
        _write_rows(rows, output)
    else:
        for row, value in zip(rows, out.scores):
            typer.echo(f"{row.get('id', '-')}\t{value:.4f}")
    typer.echo(f"{out.metadata['level']}s: {len(out)}  system score: {out.system_score:.4f}")
    typer.echo(f"signature: {out.signature}")


def _write_rows(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".csv":
        keys = list(dict.fromkeys(k for r in rows for k in r))
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=keys)
            writer.writeheader()
            for r in rows:
                writer.writerow({k: json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else v
                                 for k, v in r.items()})
    else:
        with open(path, "w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")


@app.command()
def benchmark(
    metric: Annotated[str, typer.Option(help=f"Metric name, comma-separated names, or '{ALL_BASELINES}'.")],
    benchmark: Annotated[str, typer.Option(help=f"Benchmark name, group (fed, usr, rade), comma list or '{ALL_BENCHMARKS}'.")],
    aspect: Annotated[Optional[str], typer.Option(help="Only this human aspect (default: every aspect).")] = None,
    split: Annotated[Optional[str], typer.Option(help="Benchmark split (default: test).")] = None,
    data_dir: Annotated[Optional[Path], typer.Option(help="Data directory (default: $DIALEVAL_DATA_DIR or ../shared/data).")] = None,
    output_dir: Annotated[Path, typer.Option(help="Where JSON, CSV and PNG go.")] = Path("runs/benchmark"),
    bootstrap: Annotated[int, typer.Option(help="Bootstrap resamples for confidence intervals.")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    batch_size: Annotated[int, typer.Option(help="Items per batch.")] = 32,
    device: Annotated[Optional[str], typer.Option(help="cpu, cuda, mps... (default: Accelerate picks).")] = None,
    plot: Annotated[bool, typer.Option(help="Save a metric-vs-human scatter plot per benchmark (its main aspect, or --aspect).")] = True,
    checkpoint: Annotated[Optional[str], typer.Option(help=CHECKPOINT_HELP)] = None,
    label: Annotated[Optional[str], typer.Option(help="Name the metric in tables and files (e.g. an ablation).")] = None,
    option: Annotated[Optional[list[str]], typer.Option(help=OPTION_HELP)] = None,
) -> None:
    """Correlate metrics with human judgements: prints a table, writes JSON, CSV and scatter plots."""
    from ..benchmarks import benchmark_info, benchmark_names, expand_benchmark
    from ..evaluation import MetricNotApplicable, format_table, run_benchmark, scatter_plot, write_csv, write_json
    from ..scoring.registry import BASELINES

    metrics = list(BASELINES) if metric == ALL_BASELINES else [m.strip() for m in metric.split(",") if m.strip()]
    if (checkpoint or label or option) and len(metrics) != 1:
        raise typer.BadParameter("--checkpoint, --label and --option need exactly one metric", param_hint="--metric")
    if benchmark == ALL_BENCHMARKS:
        names = [n for n in benchmark_names() if benchmark_info(n).kind != "corpus"]
    else:
        names = [n for b in benchmark.split(",") for n in expand_benchmark(b.strip())]
    output_dir.mkdir(parents=True, exist_ok=True)
    results, skipped, plot_files, not_plotted = [], [], [], []
    for m in metrics:
        scorer = _load(m, device=device, checkpoint=checkpoint, options=option)
        if label:
            scorer.name = label
        for name in names:
            try:
                res = run_benchmark(scorer, name, aspect=aspect, split=split, data_dir=data_dir,
                                    batch_size=batch_size, n_boot=bootstrap, seed=seed)
            except MetricNotApplicable as err:
                skipped.append(str(err))
                continue
            results.append(res)
            if plot:
                drawn = scatter_plot(res, output_dir / f"{label or m}__{name}.png", aspect=aspect)
                plot_files.extend(drawn.paths)
                not_plotted.extend([drawn.reason] if drawn.reason else [])
    rows = [r for res in results for r in res.rows]
    typer.echo(format_table([r for r in rows if "accuracy" not in r]))
    if any("accuracy" in r for r in rows):
        typer.echo("\n" + format_table([r for r in rows if "accuracy" in r]))
    for s in skipped:
        typer.echo(f"skipped: {s}")
    stem = "__".join([label or metric.replace(",", "+"), benchmark.replace(",", "+")] + ([aspect] if aspect else []))
    write_json(results, output_dir / f"{stem}.json")
    write_csv(results, output_dir / f"{stem}.csv")
    typer.echo(f"wrote {output_dir / stem}.json, {output_dir / stem}.csv")
    for path in plot_files:
        typer.echo(f"wrote {path}")
    for reason in not_plotted:
        typer.echo(f"no plot: {reason}")
    for name, sig in dict((res.metric, res.signature) for res in results).items():
        typer.echo(f"signature[{name}]: {sig}")


@app.command()
def report(
    results: Annotated[list[Path], typer.Argument(help="JSON files written by `dialeval benchmark` (rows are merged).")],
    by_corpus: Annotated[bool, typer.Option(help="Also print the mean of Pearson and Spearman per source corpus.")] = False,
    benchmark: Annotated[Optional[str], typer.Option(help="Only this benchmark's rows.")] = None,
    cells: Annotated[Optional[str], typer.Option(help=(
        "Instead of the overview: Pearson and Spearman with p-values and CIs in these cells, a named set "
        "(pone_paper) or comma-separated benchmark[:subset[:aspect]].")
    )] = None,
    relative_to: Annotated[Optional[str], typer.Option(help=(
        "With --cells: each metric's mean of (Pearson + Spearman) / 2 over the cells and its gain relative to "
        "this metric, with a paired bootstrap CI.")
    )] = None,
    bootstrap: Annotated[int, typer.Option(help="Bootstrap resamples for --relative-to.")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed for --relative-to.")] = 0,
) -> None:
    """Print Markdown tables (Pearson / Spearman per set) from benchmark JSON files."""
    from ..evaluation import corpus_summary, markdown_report

    loaded = [res for path in results for res in json.loads(path.read_text())
              if benchmark is None or res["benchmark"] == benchmark]
    rows = [row for res in loaded for row in res["rows"]]
    if not rows:
        raise typer.BadParameter(f"no rows{f' for benchmark {benchmark!r}' if benchmark else ''} in the given files")
    if relative_to and not cells:
        raise typer.BadParameter("--relative-to needs --cells (the sets the average runs over)")
    if cells:
        from ..evaluation.cells import detail_table, index_results, parse_cells, relative_gain_table

        try:
            chosen, index = parse_cells(cells), index_results(loaded)
            typer.echo(detail_table(index, chosen))
            if relative_to:
                typer.echo(relative_gain_table(index, chosen, relative_to, n_boot=bootstrap, seed=seed))
        except (KeyError, ValueError) as err:
            raise typer.BadParameter(str(err).strip("'\"")) from None
        return
    typer.echo(markdown_report(rows))
    if by_corpus:
        typer.echo(corpus_summary(rows))


@app.command()
def compare(
    metric_a: Annotated[str, typer.Option(help="First metric.")],
    metric_b: Annotated[str, typer.Option(help="Second metric.")],
    benchmark: Annotated[str, typer.Option(help="Benchmark name or group.")],
    aspect: Annotated[Optional[str], typer.Option(help="Human aspect (default: the benchmark's default).")] = None,
    method: Annotated[str, typer.Option(help="pearson, spearman or kendall.")] = "pearson",
    split: Annotated[Optional[str], typer.Option(help="Benchmark split (default: test).")] = None,
    data_dir: Annotated[Optional[Path], typer.Option(help="Data directory.")] = None,
    bootstrap: Annotated[int, typer.Option(help="Bootstrap resamples.")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    device: Annotated[Optional[str], typer.Option(help="cpu, cuda, mps...")] = None,
) -> None:
    """Paired significance test of two metrics on the same items (Williams test and paired bootstrap)."""
    import numpy as np

    from ..evaluation import stats
    from ..benchmarks import benchmark_info, expand_benchmark
    from ..evaluation import run_benchmark

    for name in expand_benchmark(benchmark):
        chosen = aspect or benchmark_info(name).default_aspect
        a, b = (run_benchmark(m, name, aspect=chosen, split=split, data_dir=data_dir, n_boot=0, seed=seed,
                              device=device) for m in (metric_a, metric_b))
        human = np.array([np.nan if v is None else v for v in a.human[chosen]])
        keep = np.isfinite(human)
        subsets = np.asarray(a.subsets)
        for subset in list(dict.fromkeys(a.subsets)) + ["pooled"]:
            sel = keep & ((subsets == subset) if subset != "pooled" else True)
            res = stats.compare_metrics(np.asarray(a.scores)[sel], np.asarray(b.scores)[sel], human[sel],
                                        method=method, n_boot=bootstrap, seed=seed)
            typer.echo(f"{name} {subset:<36} {chosen}: {method} {metric_a}={res['r_a']:.3f} {metric_b}={res['r_b']:.3f} "
                       f"diff={res['diff']:+.3f} [{res['ci_low']:+.3f}, {res['ci_high']:+.3f}] "
                       f"p_williams={res['williams_p'] if res['williams_p'] is None else format(res['williams_p'], '.3g')} "
                       f"p_bootstrap={res['p_bootstrap']:.3g}")


@app.command("list")
def list_() -> None:
    """List metrics and benchmarks."""
    from ..benchmarks import benchmark_info, benchmark_names
    from ..scoring.registry import available_metrics

    typer.echo("metrics: " + ", ".join(available_metrics()))
    for name in benchmark_names():
        info = benchmark_info(name)
        typer.echo(f"benchmark {name}: {info.kind}, level={info.level}, splits={','.join(info.splits)}, "
                   f"aspects={','.join(info.aspects) or '-'}")


from .train import train_app  # noqa: E402  (the `dialeval train ...` commands)

app.add_typer(train_app, name="train")
from .export import export_command  # noqa: E402  (`dialeval export`: a Hub-ready checkpoint folder)
app.command("export")(export_command)


def main() -> None:  # pragma: no cover - console entry point
    sys.exit(app())
