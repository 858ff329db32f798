"""The commands beside scoring and training: ``dialeval bench ...`` (speed benchmarks), ``dialeval checkpoint ...``
(the shipped checkpoints; changes to an existing checkpoint) and ``dialeval grade ...`` (GRADE's graph: coverage
report, tables, node-embedding experiments).

Each command parses its options and calls the library function that does the work (named in its help); the heavy
modules are imported when a command runs, not when the command line starts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import CheckpointNotFoundError
from ..metrics.grade.graph import DEFAULT_MAX_DEPTH
from ..metrics.grade.node_embeddings import DEFAULT_EMBEDDING

bench_app = typer.Typer(no_args_is_help=True, help=(
    "Speed benchmarks (commands to run, not tests): a scorer against the bare encoder on the same pairs. "
    "Correlations with human judgements: `dialeval benchmark`; items/s at 10^3..10^6 rows: "
    "`dialeval scale-benchmark`."))
checkpoint_app = typer.Typer(no_args_is_help=True, help=(
    "The shipped checkpoints (`list`: each metric's, by name), and work on a checkpoint folder in place: store it in "
    "float16 or int8 rows, share another checkpoint's tables, add calibration ranges, record how it was trained."))
grade_app = typer.Typer(no_args_is_help=True, help=(
    "GRADE's commonsense graph: coverage of its inputs, the graph tables, node-embedding experiments."))
graph_app = typer.Typer(no_args_is_help=True, help=(
    "Build GRADE's graph tables, compare node-embedding substitutes (dialeval.metrics.grade.graph_experiments)."))
grade_app.add_typer(graph_app, name="graph")

DATA_DIR_HELP = "Data directory (default: $DIALEVAL_DATA_DIR or ../shared/data)."


def register(app: typer.Typer) -> None:
    """Add ``bench``, ``checkpoint`` and ``grade`` to the ``dialeval`` command ``app``."""
    app.add_typer(bench_app, name="bench")
    app.add_typer(checkpoint_app, name="checkpoint")
    app.add_typer(grade_app, name="grade")


def _write_json(data: dict, path: Path, *, indent: int = 1) -> None:
    """Write ``data`` as indented JSON to ``path``, creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=indent) + "\n", encoding="utf-8")


# -- dialeval bench ... ------------------------------------------------------------------------------------------


@bench_app.command("bertscore")
def bench_bertscore(
    n: Annotated[int, typer.Option("--n", help="Number of context/response/reference triples.")] = 2000,
    batch_size: Annotated[int, typer.Option(help="Texts per batch.")] = 32,
    device: Annotated[Optional[str], typer.Option(help="cpu, cuda, ... (default: Accelerate's choice).")] = None,
    threads: Annotated[Optional[int], typer.Option(help="torch.set_num_threads (default: torch's).")] = None,
    data_dir: Annotated[Optional[Path], typer.Option(help=(
        "Dialeval data directory (default: resolved as usual; without one, a synthetic set)."))] = None,
    repeats: Annotated[int, typer.Option(help="Repeat each measure and keep the fastest.")] = 1,
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Also write the results as JSON here.")] = None,
) -> None:
    """BERTScore through the scoring API vs the raw encoder forward pass, in pairs/s (dialeval.evaluation.throughput;
    the measures are described there and in docs/baselines.md)."""
    from ..evaluation.throughput import format_table, run

    result = run(n, batch_size, device, data_dir, threads, repeats)
    typer.echo(format_table(result))
    if json_path:
        _write_json(result, json_path, indent=2)
        typer.echo(f"wrote {json_path}")


@bench_app.command("grade")
def bench_grade(
    checkpoint: Annotated[Optional[str], typer.Option(help="Checkpoint folder (default: the shipped one).")] = None,
    batch_size: Annotated[int, typer.Option(help="Pairs per batch.")] = 32,
    data_dir: Annotated[Optional[Path], typer.Option(help=DATA_DIR_HELP)] = None,
    large: Annotated[int, typer.Option(help="Pairs for the large run.")] = 10_000,
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Also write the results here.")] = None,
) -> None:
    """GRADE speed on CPU: the 1,200 GRADE evaluation pairs against the bare encoder, then --large DailyDialog pairs
    (dialeval.metrics.grade.bench). Needs the data directory."""
    from ..evaluation import emit_measurements
    from ..metrics.grade.bench import run

    emit_measurements(run(checkpoint, batch_size, data_dir, large), json_path, width=26)


@bench_app.command("dynaeval")
def bench_dynaeval(
    checkpoint: Annotated[Optional[str], typer.Option(help=(
        "Checkpoint or run folder (default: the shipped one)."))] = None,
    batch_size: Annotated[int, typer.Option(help="Utterances per encoder batch.")] = 32,
    data_dir: Annotated[Optional[Path], typer.Option(help=DATA_DIR_HELP)] = None,
    threads: Annotated[Optional[int], typer.Option(help="Torch CPU threads (default: torch's).")] = None,
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Also write the results here.")] = None,
) -> None:
    """DynaEval speed on CPU over the 125 FED dialogues: cold, cached and batched (dialeval.metrics.dynaeval.bench).
    Needs the data directory."""
    from ..backbone.device import set_torch_threads
    from ..evaluation import emit_measurements
    from ..metrics.dynaeval.bench import run

    set_torch_threads(threads)
    emit_measurements(run(checkpoint, batch_size, data_dir), json_path, width=30)


@bench_app.command("ensemble")
def bench_ensemble(
    member_set: Annotated[Optional[list[str]], typer.Option(help=(
        "Member set to time (repeatable; default: full and fast)."))] = None,
    batch_size: Annotated[int, typer.Option(help="Pairs per scoring batch and texts per encoder batch.")] = 32,
    data_dir: Annotated[Optional[Path], typer.Option(help=DATA_DIR_HELP)] = None,
    threads: Annotated[Optional[int], typer.Option(help="Torch CPU threads (default: torch's).")] = None,
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Also write the results here.")] = None,
) -> None:
    """The ensemble's speed on CPU: the 1,200 GRADE evaluation pairs scored by each member set, against the bare
    encoder over their distinct texts (dialeval.metrics.ensemble.bench). Needs the data directory."""
    from ..backbone.device import set_torch_threads
    from ..evaluation import emit_measurements
    from ..metrics.ensemble.bench import run

    set_torch_threads(threads)
    emit_measurements(run(member_set or ["full", "fast"], batch_size, data_dir), json_path, width=30)


# -- dialeval checkpoint ... -------------------------------------------------------------------------------------


@checkpoint_app.command("list")
def checkpoint_list() -> None:
    """Each metric's shipped checkpoints, by the name that --checkpoint takes (default, base): the encoders each
    records and whether they are installed, its size on disk (files it shares with another checkpoint are counted
    there, and named), and the validation figure of its training.json (dialeval.scoring.checkpoints.shipped_rows)."""
    from ..scoring.checkpoints import shipped_rows

    for row in shipped_rows():
        encoders = "; ".join(f"{name} ({state})" for name, state in row["encoders"].items()) or "none"
        shared = row["shared"]
        sharing = "" if shared is None else (
            f" (and {', '.join(shared['entries'])} of {shared['checkpoint']}, {shared['bytes'] / 1e6:.1f} MB, shared: "
            "counted there)")
        typer.echo(f"{row['metric_dir']} {row['name']}: {row['bytes'] / 1e6:.1f} MB{sharing}, encoder {encoders}, "
                   f"validation {row['validation']}\n    {row['path']}")


@checkpoint_app.command("half")
def checkpoint_half(
    checkpoint: Annotated[list[Path], typer.Option(help=(
        "Checkpoint folder (holds model.safetensors); may be repeated."))],
) -> None:
    """Store a checkpoint's floating-point weights (model.safetensors) in float16, in place; config.json is left as
    it is (dialeval.training.half)."""
    from ..training.half import halve_checkpoint

    for folder in checkpoint:
        before, after = halve_checkpoint(folder)
        typer.echo(f"{folder}: {before:,} -> {after:,} bytes")


@checkpoint_app.command("quantise")
def checkpoint_quantise(
    checkpoint: Annotated[list[Path], typer.Option(help=(
        "Checkpoint folder (holds config.json and model.safetensors); may be repeated."))],
    min_params: Annotated[int, typer.Option(min=1, help=(
        "Convert the weights of at least this many numbers; smaller ones stay float16."))] = 65_536,
    only: Annotated[Optional[list[str]], typer.Option(help=(
        "Convert only the weights whose names (a linear layer's module's) start with this prefix (e.g. encoder.); "
        "may be repeated."))
                    ] = None,
) -> None:
    """Store a checkpoint's large weights (its linear layers', and the others its model reads so: BERT-RUBER's
    bilinear matrix, DynaEval's LSTM and graph weights) as int8 rows (a float32 scale per row), in place: the config
    lists them (int8_weights), training.json records the step; for scoring, they cannot train
    (dialeval.training.quantise)."""
    from ..training.quantise import quantise_checkpoint

    for folder in checkpoint:
        done = quantise_checkpoint(folder, min_params, only or ())
        if not done.modules:
            typer.echo(f"{folder}: no float weight of {min_params:,} numbers or more is left to convert; unchanged")
            continue
        typer.echo(f"{folder}: {done.before:,} -> {done.after:,} bytes ({len(done.modules)} weights as int8 rows: "
                   f"{', '.join(done.modules)})")


@checkpoint_app.command("share")
def checkpoint_share(
    checkpoint: Annotated[Path, typer.Option(help=(
        "Checkpoint folder whose copies of its metric's tables to share (GRADE: keywords.json and graph/), beside "
        "the source (e.g. dialeval/checkpoints/grade/base)."))],
    source: Annotated[str, typer.Option(help=(
        "The checkpoint beside it that holds the same files and keeps them, by its folder's name."))] = "default",
) -> None:
    """Take a checkpoint's tables from the checkpoint of its metric beside it, in place: after checking that its
    copies are the source's byte for byte (else it names the first file that differs and changes nothing), the
    folder gets shared_files.json (the source's name and each file's sha256) and loses the copies
    (dialeval.training.share)."""
    from ..scoring.shared_files import SHARED_FILES
    from ..training.share import share_checkpoint

    shared = share_checkpoint(checkpoint, source)
    typer.echo(f"{checkpoint}: takes {', '.join(shared.entries)} ({len(shared.files)} files, {shared.bytes:,} bytes) "
               f"from {shared.source}; its copies removed, {shared.folder / SHARED_FILES} written")


@checkpoint_app.command("calibrate")
def checkpoint_calibrate(
    checkpoint: Annotated[Path, typer.Option(help="Checkpoint folder (holds config.json).")],
    data_dir: Annotated[Optional[Path], typer.Option(help=DATA_DIR_HELP)] = None,
    seed: Annotated[Optional[int], typer.Option(help="The training run's seed (default: the recipe's, 11).")] = None,
    max_val_positives: Annotated[Optional[int], typer.Option(help=(
        "The run's validation size (default: the recipe's, 1000)."))] = None,
    embedding_dir: Annotated[Optional[Path], typer.Option(help=(
        "An embedding store to reuse (default: a temporary one)."))] = None,
) -> None:
    """Add the hybrid normalisation ranges to a BERT-RUBER or PONE checkpoint (only config.json changes), computed
    on the recipe's DailyDialog validation set; prints them (dialeval.metrics.bert_ruber.normalization)."""
    from ..metrics.bert_ruber.normalization import calibrate_from_data

    if not (checkpoint / "config.json").is_file():
        raise CheckpointNotFoundError(f"{checkpoint} is not a checkpoint folder (no config.json)")
    ranges = calibrate_from_data(checkpoint, data_dir=data_dir, seed=seed, max_val_positives=max_val_positives,
                                 embedding_dir=embedding_dir)
    typer.echo(json.dumps(ranges.config_fields(), indent=1))


@checkpoint_app.command("record")
def checkpoint_record(
    checkpoint: Annotated[Path, typer.Option(help="Checkpoint folder (holds config.json) that the run made.")],
    run: Annotated[Path, typer.Option(help="The finished training run folder it came from.")],
    command: Annotated[str, typer.Option(help="The command that trained it, as typed.")],
    commit: Annotated[str, typer.Option(help="The dialeval commit the run's code was at.")],
    beside: Annotated[str, typer.Option(help=(
        "What else ran on the machine during the run (its speed depends on it), e.g. 'nothing'."))],
    hours: Annotated[Optional[float], typer.Option(min=0, help=(
        "The run's training hours, only for a run whose summary covers its last call alone (resumed from a state "
        "saved before the loop recorded its time); the record says they were given."))] = None,
    init_run: Annotated[Optional[Path], typer.Option(help=(
        "The run folder that the run's --init-from named (RADE's stage 1), recorded as initialised_from; required "
        "for a run that started from one."))] = None,
) -> None:
    """Write the checkpoint's training.json: command, commit, examples seen against the paper's budget, optimizer
    steps, hours, device, precision, threads and the validation figure that chose it (dialeval.training.runs)."""
    from ..training.runs import write_training_record

    path = write_training_record(run, checkpoint, command=command, commit=commit, beside=beside, hours=hours,
                                 init_run=init_run)
    typer.echo(path.read_text(encoding="utf-8"))


# -- dialeval grade ... ------------------------------------------------------------------------------------------


@grade_app.command("coverage")
def grade_coverage(
    data_dir: Annotated[Optional[Path], typer.Option(help=DATA_DIR_HELP)] = None,
    cache_dir: Annotated[Optional[Path], typer.Option(help=(
        "Cache of the keyword IDF and graph tables (default: ~/.cache/dialeval/grade unless "
        "$DIALEVAL_CACHE_DIR or $XDG_CACHE_HOME is set)."))] = None,
    embedding: Annotated[str, typer.Option(help="Node-embedding kind of the graph tables.")] = DEFAULT_EMBEDDING,
    max_depth: Annotated[int, typer.Option(help="BFS depth of the hop distances.")] = DEFAULT_MAX_DEPTH,
    no_directed: Annotated[bool, typer.Option("--no-directed", help="Skip the directed-graph comparison.")] = False,
    no_dailydialog: Annotated[bool, typer.Option("--no-dailydialog", help="Only the GRADE evaluation pairs.")
                              ] = False,
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Write the statistics to this file.")] = None,
) -> None:
    """Keywords, graph alignment and reachability of GRADE's inputs on the GRADE evaluation pairs and DailyDialog
    test (dialeval.metrics.grade.coverage)."""
    from ..metrics.grade.coverage import coverage_report

    report = coverage_report(data_dir, cache_dir=cache_dir, embedding=embedding, max_depth=max_depth,
                             directed=not no_directed, dailydialog=not no_dailydialog, echo=typer.echo)
    if json_path:
        _write_json(report, json_path)


@graph_app.command("build")
def graph_build(
    data_dir: Annotated[Optional[Path], typer.Option(help=DATA_DIR_HELP)] = None,
    embedding: Annotated[str, typer.Option(help="Node-embedding kind.")] = DEFAULT_EMBEDDING,
    conceptnet_csv: Annotated[Optional[Path], typer.Option(help=(
        "A full ConceptNet 5 assertions CSV to build from (default: ConceptNet-100K in the data directory)."))
                              ] = None,
    directed: Annotated[bool, typer.Option("--directed", help="Do not add reverse edges.")] = False,
    cache_dir: Annotated[Optional[Path], typer.Option(help=(
        "Cache of built tables (default: ~/.cache/dialeval/grade unless $DIALEVAL_CACHE_DIR or $XDG_CACHE_HOME "
        "is set)."))] = None,
    out: Annotated[Optional[Path], typer.Option(help="Also save the tables to this folder.")] = None,
) -> None:
    """Build (or load from the cache) the graph tables and report their sizes (GraphTables.build)."""
    import time

    from ..metrics.grade.tables import GraphTables

    t0 = time.perf_counter()
    tables = GraphTables.build(data_dir, embedding=embedding, conceptnet_csv=conceptnet_csv,
                               reverse_edges=not directed, cache_dir=cache_dir)
    typer.echo(f"tables: {tables.n_nodes} nodes, {tables.graph.n_edges} edges, dim {tables.dim} "
               f"({time.perf_counter() - t0:.1f} s)")
    if out:
        for name, size in tables.save(out).items():
            typer.echo(f"  {name}: {size / 1e6:.2f} MB")


@graph_app.command("measure")
def graph_measure(
    data_dir: Annotated[Optional[Path], typer.Option(help=DATA_DIR_HELP)] = None,
    kinds: Annotated[Optional[list[str]], typer.Option(help=(
        "Node-embedding kinds to compare, comma-separated or repeated (default: all the measured ones)."))
                     ] = None,
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Also write the results here.")] = None,
) -> None:
    """Intrinsic comparison of node-embedding substitutes: ROC-AUC of held-out ConceptNet-100K edges against random,
    shuffled and corrupted pairs (measure_embeddings in dialeval.metrics.grade.graph_experiments)."""
    from ..metrics.grade.graph_experiments import MEASURED_KINDS, format_measurements, measure_embeddings

    chosen = [k.strip() for value in kinds or [] for k in value.split(",") if k.strip()] or list(MEASURED_KINDS)
    result = measure_embeddings(data_dir, chosen)
    typer.echo(format_measurements(result, chosen))
    if json_path:
        _write_json(result, json_path)
