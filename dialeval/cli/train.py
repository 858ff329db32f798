"""``dialeval train <metric>``: one command per learned metric, each generated from its recipe's options dataclass
(:func:`dialeval.training.options.typer_command`): the flags, defaults and help are the dataclass's.
``dialeval train-speed <metric>``: the same flags and the benchmark's own (:mod:`dialeval.training.speed`)."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

import typer

from ..scoring.registry import all_specs
from ..scoring.spec import RecipeSpec
from ..training.options import RecipeOptions, TrainingOptions, typer_command

train_app = typer.Typer(no_args_is_help=True, help="Train a learned metric (real training is a command, not a test).")


def recipes() -> dict[str, tuple[str, RecipeSpec]]:
    """Every training command of every metric's spec: command name -> (metric name, recipe)."""
    found: dict[str, tuple[str, RecipeSpec]] = {}
    for spec in all_specs():
        for recipe in spec.recipes:
            if recipe.command in found:
                raise ValueError(f"training command {recipe.command!r} is declared by metrics "
                                 f"{found[recipe.command][0]!r} and {spec.name!r}")
            found[recipe.command] = (spec.name, recipe)
    return found


#: The exit status of a run that ``--max-minutes`` stopped before its last step (state saved; rerun to resume).
STOPPED_EXIT_CODE = 3


def _handler(recipe: RecipeSpec) -> Callable[[RecipeOptions], None]:
    def handle(opts: RecipeOptions) -> None:
        summary = recipe.run(opts)
        if opts.prepare_only:
            typer.echo(f"prepared {opts.output_dir} ({len(summary['files'])} files, manifest prepared.json); train "
                       "with the same command without --prepare-only, here or on another machine")
        elif summary.get("finished") is False:
            typer.echo(f"stopped at step {summary['steps']} of {summary['total_steps']} (--max-minutes); the state "
                       f"is saved in {opts.output_dir}: run the same command again to resume", err=True)
            raise typer.Exit(STOPPED_EXIT_CODE)
        else:
            typer.echo(recipe.describe(opts, summary))

    return handle


def add_train_commands(app: typer.Typer, commands: dict[str, tuple[str, RecipeSpec]]) -> typer.Typer:
    """One ``dialeval train <command>`` per recipe, its flags generated from the recipe's options dataclass."""
    for name, (_, recipe) in commands.items():
        options = recipe.options_class()
        app.command(name)(typer_command(options, _handler(recipe), help=(options.__doc__ or "").strip()))
    return app


add_train_commands(train_app, recipes())


# ``dialeval train-speed <metric>``: the same recipe flags, plus what the benchmark measures.
speed_app = typer.Typer(no_args_is_help=True, help=(
    "Time optimizer steps of a recipe's real batches under several settings (precision, threads, batch size, "
    "length bucketing, frozen-layer cache, fused optimizer), round-robin in one process; prints steps/s, "
    "examples/s and the ratio to the first setting."))

_SPEED_PARAMS = {
    "settings": (str, typer.Option(
        "fp32,bf16,fp32+bucket,bf16+bucket", "--settings",
        help="Comma-separated settings, each parts joined by '+': fp32 or bf16 (autocast), longest (the recipe's "
             "padding) or bucket (the block's rows regrouped by length), threads=N, batch=N, buckets=N (the "
             "recipe's own --length-buckets N; 0: off), frozen-cache (the recipe's own --frozen-cache, its states kept "
             "before timing), fused (--fused-optimizer). The first is the reference of the ratio.")),
    "steps": (int, typer.Option(20, "--steps", min=1, help="Timed optimizer steps per setting and round.")),
    "rounds": (int, typer.Option(3, "--rounds", min=1, help="Rounds over all settings (round-robin).")),
    "warmup": (int, typer.Option(1, "--warmup", min=0, help="Untimed steps before each timed block.")),
    "json_output": (bool, typer.Option(False, "--json", help="Print the measurements as JSON instead of the table.")),
}


def _speed_handler(name: str, recipe: RecipeSpec, extra: dict[str, Any]) -> Callable[[TrainingOptions], None]:
    def handle(opts: TrainingOptions) -> None:
        from ..training.speed import format_table, parse_settings, report_json, run_speed_benchmark

        settings = parse_settings(extra["settings"])
        module = importlib.import_module(recipe.module)
        budget = recipe.paper_budget(getattr(opts, "stage", None))
        report = run_speed_benchmark(module.run, opts, settings, metric=name, steps=extra["steps"],
                                     rounds=extra["rounds"], warmup=extra["warmup"],
                                     examples_unit=budget.unit if budget else "examples",
                                     echo=lambda line: typer.echo(line, err=True))
        typer.echo(report_json(report) if extra["json_output"] else format_table(report))

    return handle


def speed_command(name: str, recipe: RecipeSpec) -> Callable[..., None]:
    """The ``dialeval train-speed <name>`` command: every flag of ``dialeval train <name>`` (the options the recipe
    builds its model and batches with; ``--output-dir`` is the prepared folder, read, never written) and the
    benchmark's own (``--settings``, ``--steps``, ``--rounds``, ``--warmup``, ``--json``)."""
    options = recipe.options_class()
    base = inspect.signature(typer_command(options, lambda opts: None, help=""))
    clash = set(base.parameters) & set(_SPEED_PARAMS)
    if clash:
        raise TypeError(f"{options.__name__} has options named like the benchmark's: {sorted(clash)}")
    params = [*base.parameters.values(),
              *(inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, annotation=kind, default=default)
                for key, (kind, default) in _SPEED_PARAMS.items())]

    def command(**values: Any) -> None:
        extra = {key: values.pop(key) for key in _SPEED_PARAMS}
        typer_command(options, _speed_handler(name, recipe, extra), help="")(**values)

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__doc__ = (f"Training speed of `dialeval train {name}` on this device: its model and real batches, "
                       "built by the recipe from the prepared --output-dir (a temporary copy; without prepared.json "
                       "the recipe prepares it first), timed under each of --settings.")
    command.__name__ = f"{options.__name__}Speed"
    return command


def trains_through_loop(recipe: RecipeSpec) -> bool:
    """Whether ``recipe`` trains through the shared loop: its options have the loop's (:class:`TrainingOptions`)."""
    return issubclass(recipe.options_class(), TrainingOptions)


for _name, (_, _recipe) in recipes().items():
    if trains_through_loop(_recipe):
        speed_app.command(_name)(speed_command(_name, _recipe))
