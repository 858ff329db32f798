"""Command line (``dialeval --help`` lists every command): scoring and evaluation (``score``, ``calibrate``,
``benchmark``, ``report``, ``compare``, ``scale-benchmark``, ``bench ...``, ``amr-smatch``, ``grade ...``,
``ensemble ...``, ``list``), encoders (``encoders ...``: the named encoders, their install), training (``train ...``,
``train-speed``, ``runs``, ``checkpoint ...``) and publishing (``export``, ``cards ...``, ``release``,
``evaluate-modules``).

A user's mistake (a :class:`~dialeval.errors.DialevalError`: bad input, an unknown name, a missing file, folder or
checkpoint) is printed as one line, ``error: ...``, on stderr with exit status 2, whatever the subcommand;
``dialeval --debug ...`` shows the traceback instead. Usage errors are reported by typer, also with status 2.
Progress bars and the closing summary line go to stderr; results go to stdout.
"""

from __future__ import annotations

import inspect
import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from typer import rich_utils
from typer.core import TyperGroup

from ..errors import DialevalError, UnknownNameError
from ..scale.stream import DEFAULT_CHUNK_ROWS, ON_ERROR_POLICIES
from ..schema import EMPTY_TURN_POLICIES
from ..scoring.scales import DEFAULT_ITEMS, LEVELS, SCALES, with_scale

ALL_BASELINES = "baselines"
ALL_BENCHMARKS = "all"
ERROR_EXIT_CODE = 2
# Width of typer's rich output (help panels) when stdout is not a terminal: rich would otherwise fall back to 80
# columns there and cut long option names with an ellipsis. TERMINAL_WIDTH (typer's own setting) still wins.
PIPED_WIDTH = 160


def _is_terminal(stream: Any) -> bool:
    """Whether ``stream`` (e.g. ``sys.stdout``, which may be None or closed) is a terminal."""
    try:
        return stream is not None and stream.isatty()
    except ValueError:  # a closed stream
        return False


class DialevalGroup(TyperGroup):
    """The ``dialeval`` command group: the one place that turns a :class:`DialevalError` into ``error: ...``, and
    that widens help panels written to a pipe or a file."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run the command line; while stdout is not a terminal and TERMINAL_WIDTH is unset, typer's rich output is
        :data:`PIPED_WIDTH` columns wide instead of rich's 80-column fallback (so piped ``--help`` is not cut)."""
        if rich_utils.MAX_WIDTH is not None or _is_terminal(sys.stdout):
            return super().main(*args, **kwargs)
        rich_utils.MAX_WIDTH = PIPED_WIDTH
        try:
            return super().main(*args, **kwargs)
        finally:
            rich_utils.MAX_WIDTH = None

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except DialevalError as err:
            if ctx.params.get("debug"):
                raise
            message = " ".join(str(err).split())  # one line, whatever the message holds
            typer.echo(f"error: {message}", err=True)
            raise typer.Exit(ERROR_EXIT_CODE) from None


app = typer.Typer(cls=DialevalGroup, add_completion=False, no_args_is_help=True,
                  help="Learned metrics for open-domain dialogue.")


@app.callback()
def _global_options(
    debug: Annotated[bool, typer.Option("--debug", help="Show the full traceback of an error.")] = False,
) -> None:
    """Learned metrics for open-domain dialogue."""


CHECKPOINT_HELP = ("Learned metrics only: a shipped checkpoint's name (default, the MiniLM one; base, on "
                   "all-mpnet-base-v2, where the metric ships one: `dialeval checkpoint list`), a checkpoint folder or a "
                   "training run folder (default: default).")
OPTION_HELP = ("A scorer setting KEY=VALUE, repeatable (e.g. turn_score=delta for dynaeval, hybrid=max for "
               "bert_ruber); VALUE is read as JSON when it parses (numbers, true, null), else as text.")


def _scorer_options(metric: str, options: list[str] | None, parameters: list[str], *,
                    passes_on: str | None = None) -> dict:
    """``KEY=VALUE`` strings -> scorer keyword arguments, each key one of the scorer's ``parameters``; any key when
    the scorer takes ``**kwargs`` (``passes_on``, their name), which then decides what it accepts."""
    settable = [p for p in parameters if p not in ("self", "device", "checkpoint")]
    parsed: dict = {}
    for option in options or []:
        key, sep, text = option.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{option!r} is not KEY=VALUE", param_hint="--option")
        if key not in settable and passes_on is None:
            raise typer.BadParameter(f"metric '{metric}' has no setting {key!r}; settings: "
                                     f"{', '.join(settable) or '(none)'}", param_hint="--option")
        if key in parsed:
            raise typer.BadParameter(f"{key!r} is given twice", param_hint="--option")
        try:
            parsed[key] = json.loads(text)
        except json.JSONDecodeError:
            parsed[key] = text
    return parsed


def _reads_data_dir(metric: str) -> bool:
    """Whether ``metric``'s scorer takes a data directory (RADE's and the ensemble's pseudo-references)."""
    from ..scoring.registry import scorer_class

    return "data_dir" in inspect.signature(scorer_class(metric).__init__).parameters


def _load(metric: str, *, device: str | None, checkpoint: str | None, options: list[str] | None = None,
          data_dir: Path | None = None):
    from ..scoring.registry import load_scorer, scorer_class

    signature = inspect.signature(scorer_class(metric).__init__).parameters
    parameters = [n for n, p in signature.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    passes_on = next((n for n, p in signature.items() if p.kind is p.VAR_KEYWORD), None)
    kwargs = _scorer_options(metric, options, parameters, passes_on=passes_on)
    if checkpoint is not None:
        if "checkpoint" not in parameters:
            raise typer.BadParameter(f"metric '{metric}' has no checkpoint to choose", param_hint="--checkpoint")
        kwargs["checkpoint"] = checkpoint
    if data_dir is not None:
        if not _reads_data_dir(metric):
            raise typer.BadParameter(f"metric '{metric}' reads nothing from a data directory",
                                     param_hint="--data-dir")
        if "data_dir" in kwargs:
            raise typer.BadParameter("the data directory is given twice (--data-dir and --option data_dir=...)",
                                     param_hint="--data-dir")
        kwargs["data_dir"] = str(data_dir)
    try:
        return load_scorer(metric, device=device, **kwargs)
    except ValueError as err:
        if not options:
            raise
        raise typer.BadParameter(str(err), param_hint="--option") from None  # a setting the scorer refuses


THREADS_HELP = ("torch's intra-op CPU threads (default: torch's own count). Scores are bit-identical for the same "
                "count; another count changes the last float32 bits, so the signature records it (cpu_threads).")
BATCH_SIZE_HELP = "Items per batch (at least 1; scores do not depend on it)."
SCORE_DATA_DIR_HELP = ("Data directory of a scorer that reads one: rade (and ensemble with use_references=true) with "
                       "--option pseudo_references=dailydialog reads DailyDialog's training dialogues there "
                       "(default: $DIALEVAL_DATA_DIR or ../shared/data).")
QUIET_HELP = "No progress bars (by default one appears on stderr for any job longer than about two seconds)."
EMPTY_TURNS_HELP = ("What to do with an item that has an empty turn, response or reference: error (name it and stop) "
                    "or skip (write it back with score null and a skipped_reason; the system score is the mean "
                    "over the scored items).")
EmptyTurns = Enum("EmptyTurns", {policy: policy for policy in EMPTY_TURN_POLICIES}, type=str)
# The metadata key in which every scorer that cuts its input lists the items it cut (a call's metadata), and the
# count of them in a chunk's compact metadata (dialeval.scale.stream).
TRUNCATION_KEY = "truncated_items"
TRUNCATION_COUNT_KEY = "n_truncated_items"


def truncated_items(metadata: dict[str, Any]) -> int | None:
    """How many items a scoring call (or a chunk of a run) cut; None when its metric does not say."""
    if TRUNCATION_COUNT_KEY in metadata:
        return int(metadata[TRUNCATION_COUNT_KEY])
    return len(metadata[TRUNCATION_KEY]) if TRUNCATION_KEY in metadata else None


def truncation_note(scorer: Any, metadata: list[dict[str, Any]]) -> str | None:
    """The one line a command prints about what ``scorer``'s calls behind it cut (None when nothing was); the calls'
    own warnings are held back (:func:`~dialeval.scoring.base.quiet_truncation`), so that a run says it once."""
    cut = sum(truncated_items(m) or 0 for m in metadata)
    if not cut:
        return None
    from ..scoring.base import truncation_message

    message = truncation_message(scorer.name, cut, sum(m["n_items"] for m in metadata), scorer.truncation_rule())
    return f"note: {message}; each is scored on what was kept"


def summary_line(metadata: list[dict[str, Any]]) -> str:
    """One line about the scoring calls behind a command: items (skipped), truncated items (the items each call
    cut, added up; the metrics that do not say are named), graphs (the AMR evaluator: utterances, seconds, parsed
    anew and their rate), seconds, device."""
    items = sum(m["n_items"] for m in metadata)
    skipped = sum(m.get("n_skipped", len(m.get("skipped", ()))) for m in metadata)
    counted = [m for m in metadata if truncated_items(m) is not None]
    uncounted = [m["metric"] for m in metadata if truncated_items(m) is None]
    parts = [f"{items} items" + (f" ({skipped} skipped)" if skipped else "")]
    if counted:
        cut = sum(truncated_items(m) for m in counted)
        parts.append(f"{cut} truncated item{'' if cut == 1 else 's'}")
    if uncounted:
        parts.append(f"truncation not reported by {', '.join(dict.fromkeys(uncounted))}")
    graphs = [m for m in metadata if "graph_utterances" in m]
    if graphs:  # the AMR evaluator: where its graphs came from, and how fast
        parsed = sum(m.get("graphs_parsed", 0) for m in graphs)
        graph_seconds = sum(m["graph_seconds"] for m in graphs)
        parts.append(f"graphs of {sum(m['graph_utterances'] for m in graphs)} utterances in {graph_seconds:.1f} s "
                     f"({parsed} parsed" + (f", {parsed / graph_seconds:.0f}/s" if parsed and graph_seconds else "")
                     + ")")
    seconds = sum(m["seconds"] for m in metadata)
    devices = ", ".join(dict.fromkeys(str(m["device"]) for m in metadata))
    return f"summary: {', '.join(parts)}; {seconds:.1f} s scoring on {devices}"


SCALE_HELP = ("raw: the metric's own number (default); calibrated: its percentile among human replies of DailyDialog "
              "validation, in [0, 1] (0.5: as good as the median human reply; fitted by `dialeval calibrate`).")
Scale = Enum("Scale", {name: name for name in SCALES}, type=str)
Level = Enum("Level", {name: name for name in LEVELS}, type=str)
ON_ERROR_HELP = ("What to do with a row that cannot be read or validated: stop (name it by file:line and field, "
                 "after writing every row before it) or skip (write it with score null and the reason in 'error').")
OnError = Enum("OnError", {policy: policy for policy in ON_ERROR_POLICIES}, type=str)
#: What the closing line of ``score`` calls the rows it scored, by level.
ROW_NOUNS = {"turn": "pairs", "dialogue": "dialogues"}


@app.command()
def score(
    metric: Annotated[str, typer.Option(help="Metric name (see `dialeval list`).")],
    input: Annotated[Path, typer.Option("--input", "-i", help=(
        "JSONL, CSV or Parquet, one item per row: context and response (and references), or dialogue. Read "
        "lazily: any size."))],
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help=(
        "Write rows + score (.jsonl or .csv) chunk by chunk; a stopped run, started again with the same arguments, "
        "goes on where it stopped (progress and signature in OUTPUT.dialeval.json)."))] = None,
    batch_size: Annotated[int, typer.Option(min=1, help=BATCH_SIZE_HELP)] = 32,
    chunk_size: Annotated[int, typer.Option(min=1, help=(
        "Rows read, scored and written at a time (memory grows with it)."))] = DEFAULT_CHUNK_ROWS,
    device: Annotated[Optional[str], typer.Option(help="cpu, cuda, cuda:1, mps... (default: Accelerate picks).")] = None,
    turn_separator: Annotated[Optional[str], typer.Option(help=(
        "CSV only: split context/dialogue/references cells into turns (cells holding a JSON list are read as "
        "that list)."))] = None,
    checkpoint: Annotated[Optional[str], typer.Option(help=CHECKPOINT_HELP)] = None,
    option: Annotated[Optional[list[str]], typer.Option(help=OPTION_HELP)] = None,
    data_dir: Annotated[Optional[Path], typer.Option(help=SCORE_DATA_DIR_HELP)] = None,
    empty_turns: Annotated[EmptyTurns, typer.Option(help=EMPTY_TURNS_HELP)] = EmptyTurns.error,
    on_error: Annotated[OnError, typer.Option(help=ON_ERROR_HELP)] = OnError.stop,
    overwrite: Annotated[bool, typer.Option("--overwrite", help=(
        "Score everything again into OUTPUT, replacing it, instead of going on where a stopped run left off."))
                         ] = False,
    scale: Annotated[Scale, typer.Option(help=SCALE_HELP)] = Scale.raw,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help=QUIET_HELP)] = False,
    threads: Annotated[Optional[int], typer.Option(min=1, help=THREADS_HELP)] = None,
) -> None:
    """Score a file of context-response pairs (or whole dialogues) and print the system score.

    A metric that needs references (rade, bert_ruber, the overlap baselines) needs them in every row, except rade
    with --option pseudo_references=dailydialog, which retrieves one for each row without one from DailyDialog's
    training dialogues in the data directory (--data-dir).

    Under `accelerate launch -m dialeval score ...` (or torchrun) the rows are shared among the processes and
    gathered back in input order; the main process writes.
    """
    from ..backbone.device import process_state, set_torch_threads
    from ..scale import iter_scored, open_source, score_stream
    from ..scale.output import Totals
    from ..scoring.registry import scorer_class

    set_torch_threads(threads)
    scorer_class(metric)  # an unknown metric is named (with the known ones) before the input is opened
    source = open_source(input, turn_separator=turn_separator)  # a missing or unreadable file fails before loading
    main = process_state().is_main_process  # before the model loads, so that each process gets its device
    scorer = _load(metric, device=device, checkpoint=checkpoint, options=option, data_dir=data_dir)
    settings = {"chunk_size": chunk_size, "batch_size": batch_size, "empty_turns": empty_turns.value,
                "on_error": on_error.value, "scale": scale.value}
    if output is not None:
        result = score_stream(scorer, source, output, overwrite=overwrite,
                              progress_bar=False if quiet else None, **settings)
        totals, metadata, level = result.totals, result.metadata, result.level
        if result.resumed_from and main:
            typer.echo(f"resumed: {result.resumed_from} rows were already in {output}", err=True)
    else:
        totals, metadata, level = Totals(), [], None
        for chunk in iter_scored(scorer, source, progress_bar=False if quiet else None, **settings):
            level = level or chunk.level
            for row in chunk.rows:
                totals.add(row)
                if main:
                    value = row["score"]
                    why = row.get("error") or row.get("skipped_reason")
                    typer.echo(f"{row.get('id', '-')}\t" + (f"{value:.4f}" if value is not None else
                                                            f"{'failed' if 'error' in row else 'skipped'}: {why}"))
            metadata.extend(chunk.metadata)
    if not main:
        return
    notes = [f"{n} {what}" for n, what in ((totals.skipped, "skipped"), (totals.failed, "failed")) if n]
    system = f"{totals.system_score:.4f}" if totals.scored else "none (no item was scored)"
    typer.echo(f"{ROW_NOUNS.get(level, 'rows')}: {totals.rows}" + (f" ({', '.join(notes)})" if notes else "")
               + f"  system score: {system}")
    typer.echo(f"signature: {with_scale(scorer.signature, scale.value)}")
    if metadata:
        note = truncation_note(scorer, metadata)  # once per run, whatever the number of chunks and processes
        if note:
            typer.echo(note, err=True)
        typer.echo(summary_line(metadata), err=True)


@app.command()
def calibrate(
    metric: Annotated[str, typer.Option(help="Metric name (see `dialeval list`).")],
    level: Annotated[Level, typer.Option(help=(
        "turn: human replies to their contexts; dialogue: whole human dialogues (the map of score_dialogues)."))
                     ] = Level.turn,
    n: Annotated[int, typer.Option("--n", min=2, help=(
        "Items scored (default: every DailyDialog validation dialogue once)."))] = DEFAULT_ITEMS,
    seed: Annotated[int, typer.Option(help="Seed of the reply drawn from each dialogue.")] = 0,
    data_dir: Annotated[Optional[Path], typer.Option(help="Data directory (default: $DIALEVAL_DATA_DIR or ../shared/data).")] = None,
    batch_size: Annotated[int, typer.Option(help="Items per batch.")] = 32,
    device: Annotated[Optional[str], typer.Option(help="cpu, cuda, mps... (default: Accelerate picks).")] = None,
    checkpoint: Annotated[Optional[str], typer.Option(help=CHECKPOINT_HELP)] = None,
    option: Annotated[Optional[list[str]], typer.Option(help=OPTION_HELP)] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help=QUIET_HELP)] = False,
    threads: Annotated[Optional[int], typer.Option(min=1, help=THREADS_HELP)] = None,
) -> None:
    """Fit a metric's calibrated scale (`--scale calibrated`): score human replies of DailyDialog validation and store
    their distribution under the scorer's checkpoint hash and settings: in the package's scales file for a shipped
    checkpoint, in the user's ($DIALEVAL_SCALES_FILE, else dialeval's cache) for any other --checkpoint
    (dialeval.evaluation.calibrate says which replies)."""
    from ..backbone.device import set_torch_threads
    from ..evaluation.calibrate import fit_scale
    from ..scoring.registry import scorer_class
    from ..scoring.scales import calibrate_command, scales_file_for

    set_torch_threads(threads)
    scorer_class(metric)
    scorer = _load(metric, device=device, checkpoint=checkpoint, options=option)
    command = " ".join([calibrate_command(scorer.name, level.value)]
                       + ([f"--n {n}"] if n != DEFAULT_ITEMS else []) + ([f"--seed {seed}"] if seed else [])
                       + ([f"--checkpoint {checkpoint}"] if checkpoint else [])
                       + [f"--option {o}" for o in option or []])
    cdf = fit_scale(scorer, level.value, data_dir=data_dir, n=n, seed=seed, batch_size=batch_size, command=command,
                    progress_bar=False if quiet else None)
    q = cdf.quantiles
    at = ", ".join(f"{p:.0%} {q[round(p * (len(q) - 1))]:.4g}" for p in (0.05, 0.5, 0.95))
    typer.echo(f"{scorer.name} {level.value}: {cdf.n} items of {cdf.source}; raw quantiles {at}; written to "
               f"{scales_file_for(scorer.fingerprint())}")


@app.command()
def benchmark(
    metric: Annotated[str, typer.Option(help=f"Metric name, comma-separated names, or '{ALL_BASELINES}'.")],
    benchmark: Annotated[str, typer.Option(help=f"Benchmark name, group (fed, usr, rade), comma list or '{ALL_BENCHMARKS}'.")],
    aspect: Annotated[Optional[str], typer.Option(help="Only this human aspect (default: every aspect).")] = None,
    split: Annotated[Optional[str], typer.Option(help="Benchmark split (default: test).")] = None,
    data_dir: Annotated[Optional[Path], typer.Option(help=(
        "Data directory of the benchmarks, and of a scorer that reads one (rade's --option "
        "pseudo_references=dailydialog) (default: $DIALEVAL_DATA_DIR or ../shared/data)."))] = None,
    output_dir: Annotated[Path, typer.Option(help="Where JSON, CSV and PNG go.")] = Path("runs/benchmark"),
    bootstrap: Annotated[int, typer.Option(help="Bootstrap resamples for confidence intervals.")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    batch_size: Annotated[int, typer.Option(min=1, help=BATCH_SIZE_HELP)] = 32,
    device: Annotated[Optional[str], typer.Option(help="cpu, cuda, mps... (default: Accelerate picks).")] = None,
    plot: Annotated[bool, typer.Option(help="Save a metric-vs-human scatter plot per benchmark (its main aspect, or --aspect).")] = True,
    checkpoint: Annotated[Optional[str], typer.Option(help=CHECKPOINT_HELP)] = None,
    label: Annotated[Optional[str], typer.Option(help="Name the metric in tables and files (e.g. an ablation).")] = None,
    option: Annotated[Optional[list[str]], typer.Option(help=OPTION_HELP)] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help=QUIET_HELP)] = False,
    threads: Annotated[Optional[int], typer.Option(min=1, help=THREADS_HELP)] = None,
) -> None:
    """Correlate metrics with human judgements: prints a table, writes JSON, CSV and scatter plots."""
    from ..backbone.device import set_torch_threads
    from ..benchmarks import benchmark_info, benchmark_names
    from ..evaluation import (
        MetricNotApplicable,
        format_diagnostics,
        format_table,
        run_benchmark,
        scatter_plot,
        write_csv,
        write_json,
    )
    from ..scoring.base import quiet_truncation
    from ..scoring.registry import baseline_names, scorer_class

    set_torch_threads(threads)
    metrics = baseline_names() if metric == ALL_BASELINES else [m.strip() for m in metric.split(",") if m.strip()]
    for m in metrics:
        scorer_class(m)  # every name checked before the first (long) run
    if (checkpoint or label or option) and len(metrics) != 1:
        raise typer.BadParameter("--checkpoint, --label and --option need exactly one metric", param_hint="--metric")
    if benchmark == ALL_BENCHMARKS:
        names = [n for n in benchmark_names() if benchmark_info(n).kind != "corpus"]
    else:
        names = _benchmark_list(benchmark)
    _check_aspect_and_split(names, aspect, split)
    if quiet:
        from datasets.utils.logging import disable_progress_bar

        disable_progress_bar()
    output_dir.mkdir(parents=True, exist_ok=True)
    results, skipped, plot_files, not_plotted, notes = [], [], [], [], []
    for m in metrics:
        scorer = _load(m, device=device, checkpoint=checkpoint, options=option,
                       data_dir=data_dir if _reads_data_dir(m) else None)
        if label:
            scorer.name = label
        first = len(results)
        for name in names:
            try:
                with quiet_truncation():  # said once per metric, below
                    res = run_benchmark(scorer, name, aspect=aspect, split=split, data_dir=data_dir,
                                        batch_size=batch_size, n_boot=bootstrap, seed=seed,
                                        progress_bar=False if quiet else None)
            except MetricNotApplicable as err:
                skipped.append(str(err))
                continue
            results.append(res)
            if plot:
                drawn = scatter_plot(res, output_dir / f"{label or m}__{name}.png", aspect=aspect)
                plot_files.extend(drawn.paths)
                not_plotted.extend([drawn.reason] if drawn.reason else [])
        notes.append(truncation_note(scorer, [res.metadata for res in results[first:]]))
    rows = [r for res in results for r in res.rows]
    correlations, accuracies = [r for r in rows if "accuracy" not in r], [r for r in rows if "accuracy" in r]
    typer.echo("\n\n".join(format_table(part) for part in (correlations, accuracies) if part) or format_table([]))
    diagnosed = [format_diagnostics(res.metric, res.benchmark, res.diagnostics) for res in results if res.diagnostics]
    if diagnosed:
        typer.echo("\n" + "\n".join(diagnosed))
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
    for note in filter(None, notes):
        typer.echo(note, err=True)
    if results:
        typer.echo(summary_line([res.metadata for res in results]), err=True)


def _check_aspect_and_split(names: list[str], aspect: str | None, split: str | None) -> None:
    """Unknown ``aspect`` or ``split`` of any of the benchmarks ``names``: an error before anything runs."""
    from ..benchmarks import benchmark_info

    for name in names:
        info = benchmark_info(name)
        if aspect is not None and info.kind == "correlation" and aspect not in info.aspects:
            raise UnknownNameError(f"{name} aspect", aspect, info.aspects)
        if split is not None and split not in info.splits:
            raise UnknownNameError(f"{name} split", split, info.splits)


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
    from ..evaluation import corpus_summary, markdown_report, read_results

    loaded = [res for path in results for res in read_results(path)
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
    metric_a: Annotated[Optional[str], typer.Option(
        help="First metric (scored now; with --results, the metric to take from the first file).")] = None,
    metric_b: Annotated[Optional[str], typer.Option(
        help="Second metric (scored now; with --results, the metric to take from the second file).")] = None,
    benchmark: Annotated[Optional[str], typer.Option(
        help="Benchmark names or groups, comma-separated (with --metric-a/-b; with --results, which of the "
             "files' benchmarks to compare).")] = None,
    results: Annotated[Optional[list[Path]], typer.Option(
        help="Instead of two metrics: two JSON files written by `dialeval benchmark` (e.g. two checkpoints, "
             "--label'ed); the benchmark splits both hold are compared from their saved scores, nothing is scored "
             "again.")] = None,
    aspect: Annotated[Optional[str], typer.Option(help="Human aspect (default: the benchmark's default).")] = None,
    method: Annotated[str, typer.Option(help="pearson, spearman or kendall.")] = "pearson",
    split: Annotated[Optional[str], typer.Option(help="Benchmark split (default: test).")] = None,
    data_dir: Annotated[Optional[Path], typer.Option(help="Data directory.")] = None,
    bootstrap: Annotated[int, typer.Option(help="Bootstrap resamples.")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    device: Annotated[Optional[str], typer.Option(help="cpu, cuda, mps...")] = None,
) -> None:
    """Paired significance test of two metrics on the same items: for correlation benchmarks Williams' test and a
    paired bootstrap of the difference in correlation, for DailyDialog++ a paired bootstrap over contexts of the
    difference in accuracy and in AUC."""
    from ..evaluation import run_benchmark
    from ..evaluation.paired import ResultsMismatch, compare_results
    from ..scoring.registry import scorer_class

    if results:
        if split:
            raise typer.BadParameter("--results compares the splits the files hold: no --split",
                                     param_hint="--results")
        if len(results) != 2:
            raise typer.BadParameter(f"needs exactly two files, got {len(results)}", param_hint="--results")
        first, second = (_results_of(path, metric) for path, metric in zip(results, (metric_a, metric_b)))
        pairs = [(r, second[key]) for key, r in first.items() if key in second]
        if not pairs:
            raise typer.BadParameter(f"{results[0]} and {results[1]} share no benchmark split", param_hint="--results")
        pairs = _compared_pairs(pairs, benchmark, results)
    else:
        if not (metric_a and metric_b and benchmark):
            raise typer.BadParameter("needs --metric-a, --metric-b and --benchmark (or two --results files)",
                                     param_hint="--metric-a")
        for m in (metric_a, metric_b):
            scorer_class(m)
        names = _benchmark_list(benchmark)
        _check_aspect_and_split(names, aspect, split)
        pairs = [tuple(run_benchmark(m, name, aspect=aspect, split=split, data_dir=data_dir, n_boot=0, seed=seed,
                                     device=device).to_dict() for m in (metric_a, metric_b)) for name in names]
    for a, b in pairs:
        try:
            rows = compare_results(a, b, aspect=aspect, method=method, n_boot=bootstrap, seed=seed, data_dir=data_dir)
        except ResultsMismatch as err:
            raise typer.BadParameter(str(err), param_hint="--results") from None
        for r in rows:
            typer.echo(_comparison_line(r, method))


def _benchmark_list(benchmark: str) -> list[str]:
    """``--benchmark``: comma-separated names or groups, each group expanded to its benchmarks."""
    from ..benchmarks import expand_benchmark

    return [n for b in benchmark.split(",") if b.strip() for n in expand_benchmark(b.strip())]


def _compared_pairs(pairs: list[tuple[dict, dict]], benchmark: str | None, results: list[Path]
                    ) -> list[tuple[dict, dict]]:
    """The pairs of results that ``compare --results`` compares: those of ``--benchmark`` (names or groups) where
    given, each of which both files must hold; every pair a benchmark compare covers (correlation or discrimination),
    checked before anything is printed."""
    from ..benchmarks import benchmark_info

    if benchmark:
        names = _benchmark_list(benchmark)
        held = {a["benchmark"] for a, _ in pairs}
        missing = [n for n in names if n not in held]
        if missing:
            raise typer.BadParameter(f"{results[0]} and {results[1]} do not both hold {', '.join(missing)}; "
                                     f"they share {', '.join(sorted(held))}", param_hint="--benchmark")
        pairs = [(a, b) for a, b in pairs if a["benchmark"] in names]
    others = sorted({a["benchmark"] for a, _ in pairs
                     if benchmark_info(a["benchmark"]).kind not in ("correlation", "discrimination")})
    if others:
        covered = sorted({a["benchmark"] for a, _ in pairs} - set(others))
        raise typer.BadParameter(f"{', '.join(others)}: compare covers correlation and discrimination benchmarks, "
                                 f"not these; choose the others with --benchmark {','.join(covered) or '...'}",
                                 param_hint="--results")
    return pairs


def _results_of(path: Path, metric: str | None) -> dict[tuple[str, str], dict]:
    """The results in ``path`` by (benchmark, split): those of ``metric``, which must be given when the file holds
    several metrics on one split."""
    from ..evaluation import read_results

    found = [r for r in read_results(path) if metric is None or r["metric"] == metric]
    if not found:
        raise typer.BadParameter(f"{path} holds no result of {metric!r}", param_hint="--results")
    by_split: dict[tuple[str, str], dict] = {}
    for r in found:
        key = (r["benchmark"], r["split"])
        if key in by_split:
            raise typer.BadParameter(f"{path} holds {by_split[key]['metric']} and {r['metric']} on {key[0]} "
                                     f"({key[1]}): pick one with --metric-a / --metric-b", param_hint="--results")
        by_split[key] = r
    return by_split


def _comparison_line(r: dict, method: str) -> str:
    """One printed line of ``dialeval compare``."""
    head = f"{r['benchmark']} {r['subset']:<36} {r['aspect']}:"
    if "auc_diff" in r:  # discrimination
        return (f"{head} accuracy {r['metric_a']}={r['accuracy_a']:.3f} {r['metric_b']}={r['accuracy_b']:.3f} "
                f"diff={r['diff']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}] p_bootstrap={r['p_bootstrap']:.3g}; "
                f"any-context AUC {r['auc_a']:.3f} vs {r['auc_b']:.3f} diff={r['auc_diff']:+.3f} "
                f"[{r['auc_ci_low']:+.3f}, {r['auc_ci_high']:+.3f}] p_bootstrap={r['auc_p_bootstrap']:.3g} "
                f"({r['n_contexts']} contexts)")
    williams = r["williams_p"] if r["williams_p"] is None else format(r["williams_p"], ".3g")
    return (f"{head} {method} {r['metric_a']}={r['r_a']:.3f} {r['metric_b']}={r['r_b']:.3f} "
            f"diff={r['diff']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}] "
            f"p_williams={williams} p_bootstrap={r['p_bootstrap']:.3g}")


@app.command("scale-benchmark")
def scale_benchmark(
    metric: Annotated[Optional[str], typer.Option(help=(
        "Comma-separated metric names (default: every metric with an evaluate module, i.e. the learned ones)."))
                      ] = None,
    sizes: Annotated[str, typer.Option(help="Comma-separated numbers of rows.")] = "1000,10000,100000,1000000",
    processes: Annotated[str, typer.Option(help=(
        "Comma-separated process counts (more than 1: accelerate launch; on a GPU machine, at most its GPUs)."))
                         ] = "1,2",
    work_dir: Annotated[Path, typer.Option(help="Where the synthetic rows, scores and results.json go.")
                        ] = Path("runs/scale_benchmark"),
    data_dir: Annotated[Optional[Path], typer.Option(help="Data directory (default: $DIALEVAL_DATA_DIR or ../shared/data).")] = None,
    batch_size: Annotated[int, typer.Option(min=1, help=BATCH_SIZE_HELP)] = 32,
    chunk_size: Annotated[int, typer.Option(help="Rows per chunk.")] = DEFAULT_CHUNK_ROWS,
    device: Annotated[Optional[str], typer.Option(help="cpu, cuda... (default: Accelerate picks).")] = None,
    bare_encoder: Annotated[bool, typer.Option(help=(
        "Also time the bare encoder on the same rows (the reference of the throughput ratio)."))] = True,
) -> None:
    """Items/s and peak RSS of `dialeval score` at growing sizes, 1 vs several processes, against the bare encoder
    on the same rows (see dialeval.scale.benchmark). A command to run, not a test: 10^6 rows take hours on a CPU."""
    from ..scale.benchmark import run_scale_benchmark, to_json
    from ..scoring.registry import all_specs, scorer_class

    names = ([s.name for s in all_specs() if s.evaluate_module] if metric is None
             else [m.strip() for m in metric.split(",") if m.strip()])
    for name in names:
        scorer_class(name)  # every name checked before the first run
    try:
        counts = [int(x) for x in sizes.split(",")]
        procs = [int(x) for x in processes.split(",")]
    except ValueError:
        raise typer.BadParameter("--sizes and --processes take comma-separated integers") from None
    runs = run_scale_benchmark(names, counts, procs, work_dir, data_dir=data_dir, batch_size=batch_size,
                               chunk_size=chunk_size, device=device, bare_encoder=bare_encoder, echo=typer.echo)
    to_json(runs, work_dir / "results.json", {"metrics": names, "sizes": counts, "processes": procs,
                                              "batch_size": batch_size, "chunk_size": chunk_size, "device": device,
                                              "bare_encoder": bare_encoder})
    typer.echo(f"wrote {work_dir / 'results.json'}")


@app.command("amr-smatch")
def amr_smatch(
    graph_source: Annotated[str, typer.Option(help=(
        "The graphs measured: dependency (the spaCy stand-in), parser (the shipped parser, or --model-dir: a "
        "`dialeval train amr-parser` run or its best/), amrlib (--model-dir: an amrlib parse model)."))] = "dependency",
    model_dir: Annotated[Optional[Path], typer.Option(help="The parser or amrlib model folder.")] = None,
    corpora: Annotated[str, typer.Option(help="Comma-separated gold AMR corpora: little_prince, massive_amr, bio."
                                         )] = "little_prince,massive_amr",
    split: Annotated[str, typer.Option(help="The corpora's split (bio has dev and test only).")] = "test",
    data_dir: Annotated[Optional[Path], typer.Option(help="Data directory (default: $DIALEVAL_DATA_DIR or ../shared/data).")] = None,
    output: Annotated[Optional[Path], typer.Option(help="Also write the figures to this JSON file.")] = None,
) -> None:
    """Smatch of a graph source's simplified graphs against the simplified gold AMR of the data directory, per corpus
    and pooled, with its parse speed (dialeval.metrics.amr_eval.parser.source_smatch)."""
    from ..metrics.amr_eval.graph_sources import load_graph_source
    from ..metrics.amr_eval.parser import source_smatch

    options = {} if model_dir is None else {"model_dir": model_dir}
    source = load_graph_source(graph_source, **options)
    names = [c.strip() for c in corpora.split(",") if c.strip()]
    report = source_smatch(source, names, split, data_dir)
    for name, r in report.items():
        speed = f", {r['sentences_per_second']} sentences/s" if "sentences_per_second" in r else ""
        typer.echo(f"{source.name} on {name} {split}: Smatch P {r['precision']:.3f} R {r['recall']:.3f} "
                   f"F1 {r['f1']:.3f} (n={r['n']}{speed})")
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps({"graph_source": source.signature(), "split": split, "report": report},
                                     indent=1))


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


@app.command("evaluate-modules")
def evaluate_modules() -> None:
    """Register the metrics' `evaluate` modules, so that evaluate.load("dialeval/<metric>") works offline."""
    from ..interfaces.evaluate_cache import NAMESPACE, register

    for name, path in register().items():
        typer.echo(f"evaluate.load(\"{NAMESPACE}/{name}\"): {path}")


from .train import train_app  # noqa: E402  (the `dialeval train ...` commands)

app.add_typer(train_app, name="train")
from .train import speed_app  # noqa: E402  (`dialeval train-speed ...`: a recipe's training speed)

app.add_typer(speed_app, name="train-speed")
from .runs import runs_command  # noqa: E402  (`dialeval runs`: the training runs and their progress)

app.command("runs")(runs_command)
from .export import export_command  # noqa: E402  (`dialeval export`: a Hub-ready checkpoint folder)
app.command("export")(export_command)
from .hub import cards_app, release_command  # noqa: E402  (`dialeval cards ...`, `dialeval release`)

app.add_typer(cards_app, name="cards")
app.command("release")(release_command)
from .ensemble import ensemble_app  # noqa: E402  (`dialeval ensemble loo`: the ensemble's leave-one-out table)

app.add_typer(ensemble_app, name="ensemble")
from .encoders import encoders_app  # noqa: E402  (`dialeval encoders list|install`)

app.add_typer(encoders_app, name="encoders")
from .tools import register as register_tools  # noqa: E402  (`dialeval bench|checkpoint|grade ...`)

register_tools(app)


def main() -> None:  # pragma: no cover - console entry point
    sys.exit(app())
