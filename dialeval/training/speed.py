"""Training speed of a recipe's real batches under several settings: ``dialeval train-speed <metric>``.

The recipe runs as ``dialeval train <metric>`` would, on a copy of its prepared folder, up to its call of the shared
loop (:mod:`dialeval.training.capture`): the model, the batches, the loss and the loop's settings are the recipe's
own. Then, for each setting asked, the benchmark times ``steps`` optimizer steps exactly as the loop takes them
(:func:`dialeval.training.loop.optimizer_step`: forward under the setting's autocast, backward, clipping, optimizer
and scheduler), in one process, round-robin over the settings for ``rounds`` rounds, so that the machine's load
falls on every setting alike. Each timed block starts with ``warmup`` untimed steps.

A setting (:class:`SpeedSetting`, written ``bf16+bucket+threads=4+batch=32``) chooses

- the precision: ``fp32`` or ``bf16`` (autocast on the training device, as ``--precision bf16``);
- ``threads=N``: torch's CPU threads (default: the command's ``--threads``; 0 is torch's default);
- ``batch=N``: the batch size (the recipe is run again with ``--batch-size N``: its own batches of that size);
- ``buckets=N``: the recipe's own length bucketing (it is run again with ``--length-buckets N``, 0 for off: its own
  batches of rows of similar length, :mod:`dialeval.training.buckets`), for a recipe that has the option;
- ``frozen-cache``: the recipe run again with ``--frozen-cache`` (:mod:`dialeval.training.frozen_cache`), for a
  recipe that has the option; the block's batches first go once through the recipe's loss without gradients, so
  that the timed steps find their rows' states kept, as every epoch after a run's first does;
- ``fused``: the loop's optimizer with torch's fused kernel (``--fused-optimizer``);
- the padding: ``longest``, the recipe's own (every recipe pads each batch to its longest row), or ``bucket``: the
  same rows, sorted by length and cut into batches again (in a shuffled order), so that a batch holds rows of
  similar length. The rows regrouped are all the rows the block uses, ``(warmup + steps) x accumulation`` batches.

Every setting uses the first batches of the recipe's first epoch (the same rows for the same batch size), built
before timing: steps/s is the device's work (moving the batch, forward, backward, optimizer), not collation, which
``--dataloader-workers`` moves beside training; collation is timed apart (ms per batch, in this process).

Measured and reported per setting: steps/s (all rounds' steps over all rounds' seconds, and each round's), examples
per second (steps/s x batch size x gradient accumulation: the unit of the run's ``pairs_seen`` / ``examples_seen``),
the ratio of examples per second to the first setting's, tokens per row (summed over the row's token sequences, e.g.
GRADE's positive and negative input: as padded, and without the padding), and what was observed while the steps ran
(autocast on or off, torch's threads, rows per batch), so that a setting is known to have run as asked.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..backbone.device import torch_threads
from ..errors import DialevalError
from .capture import LoopInputs, capture_loop_inputs
from .device import cpu_bf16_instructions, device_description, training_device
from .loop import PROCESS_FILE, _optimizer_and_schedule, optimizer_step
from .options import FrozenCacheOptions
from .prepared import MANIFEST_FILE

PRECISIONS = ("fp32", "bf16")
PADDINGS = ("longest", "bucket")
FROZEN_CACHE = "frozen-cache"
FUSED = "fused"
DEFAULT_SETTINGS = "fp32,bf16,fp32+bucket,bf16+bucket"
#: What the loop and the recipes write into a run folder besides the prepared files: not copied for the benchmark.
RUN_OUTPUTS = ("best", "last_state", "scoring", "stage1", "log.jsonl", "summary.json", "progress.json",
               "training_args.json", PROCESS_FILE)


class SpeedBenchmarkError(DialevalError, ValueError):
    """A setting the benchmark cannot measure for this recipe, or a malformed setting (the message says which)."""


@dataclass(frozen=True)
class SpeedSetting:
    """One measured setting; ``threads`` / ``batch_size`` None take the command's own options. ``label``: how the
    command line wrote it (the name in the report; not part of the setting's identity)."""

    precision: str = "fp32"
    padding: str = "longest"
    threads: int | None = None
    batch_size: int | None = None
    length_buckets: int | None = None
    frozen_cache: bool = False
    fused_optimizer: bool = False
    label: str = field(default="", compare=False)

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        parts = [self.precision]
        if self.padding != "longest":
            parts.append(self.padding)
        if self.threads is not None:
            parts.append(f"threads={self.threads}")
        if self.batch_size is not None:
            parts.append(f"batch={self.batch_size}")
        if self.length_buckets is not None:
            parts.append(f"buckets={self.length_buckets}")
        parts += [name for name, on in ((FROZEN_CACHE, self.frozen_cache), (FUSED, self.fused_optimizer)) if on]
        return "+".join(parts)


def parse_setting(text: str) -> SpeedSetting:
    """``bf16+bucket+threads=4+batch=32+buckets=64`` (any order, each part at most once) as a
    :class:`SpeedSetting`."""
    values: dict[str, Any] = {}

    def put(key: str, value: Any, part: str) -> None:
        if key in values:
            raise SpeedBenchmarkError(f"setting {text!r} names its {key} twice ({part!r})")
        values[key] = value

    for part in (p.strip() for p in text.split("+")):
        if part in PRECISIONS:
            put("precision", part, part)
        elif part in PADDINGS:
            put("padding", part, part)
        elif part == FROZEN_CACHE:
            put("frozen_cache", True, part)
        elif part == FUSED:
            put("fused_optimizer", True, part)
        elif part.startswith(("threads=", "batch=", "buckets=")):
            key, _, number = part.partition("=")
            if not number.isdigit() or (key == "batch" and int(number) < 1):
                raise SpeedBenchmarkError(f"setting {text!r}: {key}= takes a whole number"
                                          f"{' above 0' if key == 'batch' else ''}, got {number!r}")
            put({"threads": "threads", "batch": "batch_size", "buckets": "length_buckets"}[key], int(number), part)
        else:
            raise SpeedBenchmarkError(f"setting {text!r}: unknown part {part!r} (parts: {', '.join(PRECISIONS)}, "
                                      f"{', '.join(PADDINGS)}, threads=N, batch=N, buckets=N, {FROZEN_CACHE}, {FUSED}, "
                                      "joined by '+')")
    return SpeedSetting(**values, label="+".join(p.strip() for p in text.split("+")))


def parse_settings(text: str) -> list[SpeedSetting]:
    """Comma-separated settings (:func:`parse_setting`); the same setting twice is refused."""
    settings = [parse_setting(item) for item in text.split(",") if item.strip()]
    if not settings:
        raise SpeedBenchmarkError("no setting to measure")
    for i, setting in enumerate(settings):
        for earlier in settings[:i]:
            if earlier == setting:
                raise SpeedBenchmarkError(f"settings {earlier.name!r} and {setting.name!r} are the same setting")
    return settings


@dataclass
class SettingResult:
    """What one setting measured, over every round."""

    setting: str
    precision: str
    padding: str
    threads: int
    batch_size: int
    examples_per_step: int
    length_buckets: int | None = None  # the recipe's --length-buckets (None: a recipe without the option)
    frozen_cache: bool = False  # the recipe ran with --frozen-cache
    fused_optimizer: bool = False
    steps: int = 0
    seconds: float = 0.0
    round_steps_per_second: list[float] = field(default_factory=list)
    steps_per_second: float = math.nan
    examples_per_second: float = math.nan
    ratio: float = math.nan  # examples per second over the first setting's
    tokens_per_row: float | None = None  # padded, summed over the row's token sequences
    real_tokens_per_row: float | None = None  # the same without padding
    collate_ms_per_batch: float = math.nan
    mean_loss: float = math.nan
    observed_autocast: list[bool] = field(default_factory=list)  # distinct values seen in the forward passes
    observed_threads: list[int] = field(default_factory=list)
    observed_rows_per_batch: list[int] = field(default_factory=list)


@dataclass
class SpeedReport:
    metric: str
    device: str
    steps: int
    rounds: int
    warmup: int
    gradient_accumulation: int
    examples_unit: str
    torch_version: str
    results: list[SettingResult]
    #: On the CPU, its bf16 matrix instructions (:func:`~.device.cpu_bf16_instructions`; bf16 is only fast with
    #: one); None on another device.
    cpu_bf16: list[str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def copy_prepared(source: str | Path, target: Path) -> bool:
    """Copy run folder ``source`` into ``target`` without what training wrote there (:data:`RUN_OUTPUTS`); returns
    whether ``source`` held a manifest (a prepared folder). A missing ``source`` copies nothing."""
    source = Path(source)
    if not source.is_dir():
        return False
    for path in source.iterdir():
        if path.name in RUN_OUTPUTS:
            continue
        if path.is_dir():
            shutil.copytree(path, target / path.name)
        else:
            shutil.copy2(path, target / path.name)
    return (source / MANIFEST_FILE).is_file()


def attention_masks(batch: Any) -> list[torch.Tensor]:
    """Every 2-D tensor stored under a key that names an attention mask, anywhere in a collated batch (dicts,
    lists, tuples), in order."""
    found: list[torch.Tensor] = []
    if isinstance(batch, dict):
        for key, value in batch.items():
            if "attention_mask" in str(key) and isinstance(value, torch.Tensor) and value.dim() == 2:
                found.append(value)
            else:
                found.extend(attention_masks(value))
    elif isinstance(batch, (list, tuple)):
        for value in batch:
            found.extend(attention_masks(value))
    return found


def row_tokens(batch: Any, rows: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(padded, real) tokens of each of the batch's ``rows`` rows, summed over its attention masks with that many
    rows; None when it has none."""
    masks = [m for m in attention_masks(batch) if m.shape[0] == rows]
    if not masks:
        return None
    padded = np.full(rows, sum(int(m.shape[1]) for m in masks), dtype=np.int64)
    real = np.sum([m.detach().to("cpu").long().sum(dim=1).numpy() for m in masks], axis=0)
    return padded, real


def _rows_of(raw: Any) -> int | None:
    return len(raw) if isinstance(raw, (list, tuple, np.ndarray)) else None


def _first_batches(inputs: LoopInputs, count: int) -> list[Any]:
    """The first ``count`` batches the recipe yields, epoch 0 first (then the next epochs)."""
    out: list[Any] = []
    epoch = 0
    while len(out) < count:
        before = len(out)
        for raw in inputs.epoch_batches(epoch):
            out.append(raw)
            if len(out) == count:
                break
        if len(out) == before:
            raise SpeedBenchmarkError("the recipe yields no training batch")
        epoch += 1
    return out


def bucketed(raws: Sequence[Any], lengths: Sequence[np.ndarray], *, seed: int) -> list[Any]:
    """The rows of ``raws`` (each a list or array of row items) sorted by ``lengths`` (stable) and cut into batches of
    the same sizes again, in an order shuffled with ``seed``."""
    sizes = [len(raw) for raw in raws]
    rows = [item for raw in raws for item in raw]
    order = np.argsort(np.concatenate(lengths), kind="stable")
    batches, start = [], 0
    for size in sizes:
        picked = [rows[i] for i in order[start:start + size]]
        start += size
        batches.append(np.asarray(picked) if isinstance(raws[0], np.ndarray) else type(raws[0])(picked))
    shuffle = np.random.default_rng(seed).permutation(len(batches))
    return [batches[i] for i in shuffle]


@dataclass
class _Batches:
    collated: list[Any]
    rows: list[int | None]
    collate_ms: float
    tokens: tuple[float, float] | None


def _collate_all(inputs: LoopInputs, raws: list[Any], *, timed: bool = False) -> tuple[list[Any], float]:
    """The recipe's collation of ``raws`` and its ms per batch; ``timed``: collated twice, the second pass timed
    (caches a recipe fills while collating, such as GRADE's graph features, are then warm for every setting)."""
    collate = inputs.collate or (lambda batch: batch)
    if timed:
        for raw in raws:
            collate(raw)
    began = time.perf_counter()
    collated = [collate(raw) for raw in raws]
    return collated, 1000 * (time.perf_counter() - began) / max(1, len(raws))


def _token_means(collated: list[Any], rows: list[int | None]) -> tuple[float, float] | None:
    counted = [row_tokens(b, n) for b, n in zip(collated, rows) if n is not None]
    if not counted or any(c is None for c in counted):
        return None
    padded = np.concatenate([c[0] for c in counted])
    real = np.concatenate([c[1] for c in counted])
    return float(padded.mean()), float(real.mean())


def build_batches(inputs: LoopInputs, count: int, padding: str, *, seed: int) -> _Batches:
    """The ``count`` batches a block of this padding uses, collated by the recipe (see the module doc)."""
    raws = _first_batches(inputs, count)
    rows = [_rows_of(raw) for raw in raws]
    collated, collate_ms = _collate_all(inputs, raws, timed=padding == "longest")
    if padding == "bucket":
        if inputs.collate is None or any(n is None for n in rows):
            raise SpeedBenchmarkError("bucket: this recipe's batches are not rows to regroup (it has no collate step "
                                      "over a list of rows)")
        lengths = [row_tokens(b, n) for b, n in zip(collated, rows)]
        if any(t is None for t in lengths):
            raise SpeedBenchmarkError("bucket: this recipe's batches hold no attention mask (no token padding to "
                                      "save)")
        raws = bucketed(raws, [real for _, real in lengths], seed=seed)
        rows = [_rows_of(raw) for raw in raws]
        collated, collate_ms = _collate_all(inputs, raws, timed=True)
    return _Batches(collated, rows, collate_ms, _token_means(collated, rows))


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


@dataclass
class _Trainer:
    """A captured recipe on its device, with the loop's optimizer and schedule (one per batch size)."""

    inputs: LoopInputs
    device: torch.device
    model: torch.nn.Module
    accelerator: Any
    optimizer: Any
    scheduler: Any

    @classmethod
    def build(cls, inputs: LoopInputs, *, fused_optimizer: bool) -> _Trainer:
        from accelerate import Accelerator

        args = dataclasses.replace(inputs.args, fused_optimizer=fused_optimizer)
        device = training_device(args.device)
        model = inputs.model.to(device)
        steps_per_epoch = inputs.batches_per_epoch // max(1, args.gradient_accumulation)
        total = steps_per_epoch * args.epochs if args.max_steps is None else min(args.max_steps,
                                                                                   steps_per_epoch * args.epochs)
        optimizer, scheduler = _optimizer_and_schedule(model, args, inputs.learning_rate_of, total, steps_per_epoch)
        accelerator = Accelerator(device_placement=False)
        model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
        return cls(inputs, device, model, accelerator, optimizer, scheduler)

    def fill_caches(self, batches: list[Any], *, threads: int) -> None:
        """One pass of ``batches`` through the recipe's loss without gradients, under the recipe's ``--precision``
        (``frozen-cache``: it keeps their rows' frozen states, computed as a run computes them)."""
        autocast = torch.autocast(device_type=self.device.type, dtype=torch.bfloat16,
                                  enabled=self.inputs.args.precision == "bf16")
        with torch_threads(threads), torch.no_grad(), autocast:
            for batch in batches:
                self.inputs.loss_fn(self.model, batch)

    def time_block(self, batches: list[Any], *, precision: str, threads: int, warmup: int, steps: int,
                   result: SettingResult) -> None:
        """Run ``warmup`` then ``steps`` timed optimizer steps over ``batches``; add to ``result``."""
        args, device = self.inputs.args, self.device
        accumulate = max(1, args.gradient_accumulation)
        seen_autocast, seen_threads, losses = set(), set(), []

        def loss_fn(model, batch):
            seen_autocast.add(bool(torch.is_autocast_enabled(device.type)))
            seen_threads.add(torch.get_num_threads())
            return self.inputs.loss_fn(model, batch)

        stream: Iterator[Any] = iter(batches)
        autocast = torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=precision == "bf16")
        with torch_threads(threads):
            self.model.train()

            def step() -> None:
                losses.extend(optimizer_step(self.model, stream, loss_fn=loss_fn, accelerator=self.accelerator,
                                             optimizer=self.optimizer, scheduler=self.scheduler, autocast=autocast,
                                             accumulate=accumulate, max_grad_norm=args.max_grad_norm))

            for _ in range(warmup):
                step()
            _synchronize(device)
            began = time.perf_counter()
            for _ in range(steps):
                step()
            _synchronize(device)
            seconds = time.perf_counter() - began
        result.steps += steps
        result.seconds += seconds
        result.round_steps_per_second.append(steps / seconds)
        result.mean_loss = float(np.mean(losses))
        result.observed_autocast = sorted(set(result.observed_autocast) | seen_autocast)
        result.observed_threads = sorted(set(result.observed_threads) | seen_threads)


def run_speed_benchmark(run: Callable[[Any], Any], opts: Any, settings: Sequence[SpeedSetting], *, metric: str,
                        steps: int = 20, rounds: int = 3, warmup: int = 1, examples_unit: str = "examples",
                        echo: Callable[[str], None] = print) -> SpeedReport:
    """Measure ``settings`` on recipe ``run`` with options ``opts`` (see the module doc). ``opts.output_dir`` is
    read, never written: the recipe runs on a temporary copy of it (prepared there first when it holds no
    manifest)."""
    if steps < 1 or rounds < 1 or warmup < 0:
        raise SpeedBenchmarkError(f"steps and rounds must be >= 1 and warmup >= 0, got {steps}, {rounds}, {warmup}")
    default_threads = opts.threads or torch.get_num_threads()
    accumulate = opts.gradient_accumulation
    count = (warmup + steps) * accumulate
    with tempfile.TemporaryDirectory(prefix="dialeval-train-speed-") as work:
        if not copy_prepared(opts.output_dir, Path(work)):
            echo(f"{opts.output_dir} holds no prepared.json: the recipe prepares into a temporary folder first")
        trainers: dict[tuple, _Trainer] = {}
        batch_sets: dict[tuple, _Batches] = {}
        results, keys = [], []
        recipe_buckets = getattr(opts, "length_buckets", None)
        for setting in settings:
            size = setting.batch_size or opts.batch_size
            if setting.length_buckets is not None and recipe_buckets is None:
                raise SpeedBenchmarkError(f"setting {setting.name!r}: buckets=N needs a recipe with --length-buckets; "
                                          f"{metric}'s has none (bucket regroups any recipe's rows)")
            if setting.frozen_cache and not isinstance(opts, FrozenCacheOptions):
                raise SpeedBenchmarkError(f"setting {setting.name!r}: {FROZEN_CACHE} needs a recipe with "
                                          f"--frozen-cache; {metric}'s has none")
            buckets = recipe_buckets if setting.length_buckets is None else setting.length_buckets
            cached = setting.frozen_cache or (isinstance(opts, FrozenCacheOptions) and opts.frozen_cache)
            fused = setting.fused_optimizer or opts.fused_optimizer
            key = (size, buckets, cached, fused)
            if key not in trainers:
                echo(f"building {metric}'s model and batches (batch size {size}"
                     f"{'' if buckets is None else f', length buckets {buckets}'}"
                     f"{', frozen cache' if cached else ''}{', fused optimizer' if fused else ''})"
                     " with the recipe")
                changes = {} if buckets is None else {"length_buckets": buckets}
                if cached:
                    changes["frozen_cache"] = True
                variant = dataclasses.replace(opts, output_dir=work, batch_size=size, prepare_only=False,
                                              resume=False, max_minutes=None, **changes)
                trainers[key] = _Trainer.build(capture_loop_inputs(run, variant), fused_optimizer=fused)
            if (*key, setting.padding) not in batch_sets:
                batch_sets[(*key, setting.padding)] = build_batches(trainers[key].inputs, count, setting.padding,
                                                                    seed=opts.seed)
                if cached:
                    trainers[key].fill_caches(batch_sets[(*key, setting.padding)].collated,
                                              threads=setting.threads or default_threads)
            keys.append(key)
            built = batch_sets[(*key, setting.padding)]
            tokens = built.tokens
            results.append(SettingResult(
                setting=setting.name, precision=setting.precision, padding=setting.padding,
                threads=default_threads if setting.threads is None else setting.threads, batch_size=size,
                examples_per_step=size * accumulate, length_buckets=buckets, frozen_cache=cached,
                fused_optimizer=fused,
                tokens_per_row=None if tokens is None else tokens[0],
                real_tokens_per_row=None if tokens is None else tokens[1], collate_ms_per_batch=built.collate_ms,
                observed_rows_per_batch=sorted({n for n in built.rows if n is not None})))
        device = next(iter(trainers.values())).device
        for number in range(rounds):
            for setting, result, key in zip(settings, results, keys):
                trainers[key].time_block(
                    batch_sets[(*key, setting.padding)].collated, precision=setting.precision,
                    threads=result.threads or torch.get_num_threads(), warmup=warmup, steps=steps, result=result)
            echo(f"round {number + 1}/{rounds}: " + ", ".join(
                f"{r.setting} {r.round_steps_per_second[-1]:.2f}" for r in results) + " steps/s")
    for result in results:
        result.steps_per_second = result.steps / result.seconds
        result.examples_per_second = result.steps_per_second * result.examples_per_step
    for result in results:
        result.ratio = result.examples_per_second / results[0].examples_per_second
    return SpeedReport(metric=metric, device=device_description(device), steps=steps, rounds=rounds, warmup=warmup,
                       gradient_accumulation=accumulate, examples_unit=examples_unit,
                       torch_version=torch.__version__, results=results,
                       cpu_bf16=list(cpu_bf16_instructions()) if device.type == "cpu" else None)


def _number(value: float | None, digits: int) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:,.{digits}f}"


TABLE_COLUMNS = ("setting", "steps/s", "round range", "examples/s", "ratio", "tokens/row", "real tokens/row",
                 "collate ms/batch", "autocast", "threads", "rows/batch")


def table_rows(report: SpeedReport) -> list[list[str]]:
    """The report's table body, one row of :data:`TABLE_COLUMNS` per setting."""
    rows = []
    for r in report.results:
        spread = (f"{min(r.round_steps_per_second):.2f}-{max(r.round_steps_per_second):.2f}"
                  if r.round_steps_per_second else "-")
        rows.append([r.setting, _number(r.steps_per_second, 2), spread, _number(r.examples_per_second, 1),
                     _number(r.ratio, 2), _number(r.tokens_per_row, 1), _number(r.real_tokens_per_row, 1),
                     _number(r.collate_ms_per_batch, 1),
                     "/".join("on" if a else "off" for a in r.observed_autocast) or "-",
                     "/".join(map(str, r.observed_threads)) or "-",
                     "/".join(map(str, r.observed_rows_per_batch)) or "-"])
    return rows


def format_table(report: SpeedReport) -> str:
    """The report as a fixed-width text table with a header line."""
    body = table_rows(report)
    widths = [max(len(c), *(len(row[i]) for row in body)) for i, c in enumerate(TABLE_COLUMNS)]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    where = report.device if report.cpu_bf16 is None else \
        f"{report.device} (bf16 instructions: {', '.join(report.cpu_bf16) or 'none'})"
    head = (f"{report.metric} on {where}: {report.steps} timed steps x {report.rounds} rounds per setting "
            f"({report.warmup} warm-up step(s) each), gradient accumulation {report.gradient_accumulation}; "
            f"examples: {report.examples_unit}; ratio: examples/s over {report.results[0].setting}'s")
    return "\n".join([head, line(TABLE_COLUMNS), *(line(row) for row in body)])


def report_json(report: SpeedReport) -> str:
    """The report as JSON (NaN as null)."""
    def clean(value):
        if isinstance(value, float) and math.isnan(value):
            return None
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value
    return json.dumps(clean(report.to_dict()), indent=1)


__all__ = ["DEFAULT_SETTINGS", "SettingResult", "SpeedBenchmarkError", "SpeedReport", "SpeedSetting",
           "attention_masks", "bucketed", "build_batches", "copy_prepared", "format_table", "parse_setting",
           "parse_settings", "report_json", "row_tokens", "run_speed_benchmark", "table_rows"]
