"""The shared training loop: Accelerate device placement, seeding, warm-up + linear decay (or step decay) with AdamW
(or Adam), gradient clipping, periodic validation with best-checkpoint selection, JSONL logging, and resumption from
the last saved state.

A metric's recipe provides the model, a function that yields the batches of an epoch (deterministic given the
epoch and seed), optionally a ``collate`` that turns one of them into tensors (run in ``dataloader_workers``
processes when there are any), a loss function and a validation function; the loop does the rest. Resuming
restores model, optimizer, scheduler and RNG states (``Accelerator.save_state``) and skips the batches of the
interrupted epoch that were already seen, so an interrupted run continues where it stopped, and ends with the same
weights as a run that was never interrupted.

What a run folder holds for readers (``dialeval runs``): ``training_args.json`` (the options, the loop's settings,
``total_steps``, ``steps_per_epoch`` and ``selection_key``), ``log.jsonl`` (one record per ``log_every`` steps and
per validation, each with its unix ``time``), :data:`PROCESS_FILE`, ``progress.json`` and ``last_state/`` (the
last saved state), and the recipe's ``summary.json``.

Bounded runs: with a ``deadline`` (``time.monotonic()`` seconds; ``--max-minutes`` sets it) the loop saves the
full state and returns ``finished=False`` while there is still time for that: before each step it keeps in
reserve three times the slowest step so far, the last validation (when the next step ends with one) and the last
state save. ``stop_after_steps`` does the same after a number of this call's steps (tests cut runs with it).

One optimizer step takes ``gradient_accumulation`` batches (losses scaled by their inverse); steps, ``eval_every``,
``max_steps`` and the schedule count optimizer steps. ``precision="bf16"`` runs the forward passes under bf16
autocast on the training device.

The model trains on :func:`~dialeval.training.device.training_device` of ``args.device`` (an explicit ``cuda:1`` is
honoured; unset: Accelerate's choice), the device the recipe's encoder uses too.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .capture import LoopInputs, hand_over_if_capturing
from .device import cpu_bf16_instructions, training_device

#: Written into the run folder when training starts: the process (pid, host) and the start (unix seconds); a
#: reader (``dialeval runs``) tells a running run from a stopped one by it.
PROCESS_FILE = "process.json"


@dataclass
class TrainingArguments:
    output_dir: str
    seed: int = 71
    epochs: int = 1
    learning_rate: float = 2e-5
    head_learning_rate: float | None = None  # None: same as learning_rate
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_grad_norm: float | None = 10.0  # None or <= 0: no clipping
    eval_every: int = 500
    log_every: int = 20
    max_steps: int | None = None
    device: str | None = None  # cpu, cuda, cuda:N, mps; None: Accelerate's choice
    optimizer: str = "adamw"  # "adamw" (decoupled weight decay) or "adam" (L2 weight decay)
    adam_betas: tuple[float, float] = (0.9, 0.999)
    lr_schedule: str = "linear"  # "linear": warm-up + linear decay; "step": lr *= step_decay_gamma every N steps
    step_decay_every: int | None = None  # "step" schedule: steps between decays (None: one epoch)
    step_decay_gamma: float = 0.5
    gradient_accumulation: int = 1
    precision: str = "fp32"  # "fp32" or "bf16" (autocast)
    fused_optimizer: bool = False  # torch's fused Adam / AdamW kernel: the same update, one pass over all weights
    dataloader_workers: int = 0
    deadline: float | None = None  # time.monotonic() by which state is saved and the loop has returned
    stop_after_steps: int | None = None  # save state and return after this many steps of this call


@dataclass
class TrainingResult:
    best_metric: float
    best_step: int
    steps: int
    seconds: float
    history: list[dict[str, Any]]
    finished: bool = True  # False: stopped by the deadline or stop_after_steps, state saved; call again to resume
    total_steps: int = 0
    #: what ``seconds`` covers: "run" (every call of a resumed run) or "this_call" (a state saved before the loop
    #: recorded its time was resumed: the earlier calls' time is unknown)
    seconds_cover: str = "run"


BF16_WITHOUT_INSTRUCTIONS = (
    "--precision bf16 on a CPU without bf16 matrix instructions (AMX or AVX-512 BF16): autocast converts in software "
    "here, several times slower than fp32 (docs/training.md); the run goes on in bf16 as asked")


def shared_loop_arguments(opts: Any, *, started: float) -> dict[str, Any]:
    """The loop arguments every recipe takes from its training options (precision, accumulation, workers and the
    ``--max-minutes`` deadline counted from ``started``, the recipe's ``time.monotonic()`` at start)."""
    deadline = None if opts.max_minutes is None else started + 60.0 * opts.max_minutes
    return {"gradient_accumulation": opts.gradient_accumulation, "precision": opts.precision,
            "fused_optimizer": opts.fused_optimizer, "dataloader_workers": opts.dataloader_workers,
            "deadline": deadline}


def shuffled_batches(n_examples: int, *, batch_size: int, gradient_accumulation: int, seed: int
                     ) -> tuple[int, Callable[[int], Iterator[np.ndarray]]]:
    """(batches per epoch, ``epoch_batches``) for ``train``: each epoch a permutation of the example indices seeded
    by (``seed``, epoch), cut into full batches (the remainder is left for that epoch). Fewer examples than one
    optimizer step is an error naming the options to lower."""
    batches_per_epoch = n_examples // batch_size
    if batches_per_epoch // gradient_accumulation < 1:
        raise ValueError(f"{n_examples} training examples is less than one step of {batch_size} x "
                         f"{gradient_accumulation}: lower --batch-size or --gradient-accumulation")

    def epoch_batches(epoch: int) -> Iterator[np.ndarray]:
        order = np.random.default_rng([seed, epoch]).permutation(n_examples)
        for start in range(0, batches_per_epoch * batch_size, batch_size):
            yield order[start:start + batch_size]

    return batches_per_epoch, epoch_batches


def recipe_batches(n_examples: int, opts: Any) -> tuple[int, Callable[[int], Iterator[np.ndarray]]]:
    """:func:`shuffled_batches` of ``n_examples`` with a recipe's options (batch size, accumulation, seed)."""
    return shuffled_batches(n_examples, batch_size=opts.batch_size, gradient_accumulation=opts.gradient_accumulation,
                            seed=opts.seed)


def on_model_device(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``batch``'s tensors moved to the device ``model``'s parameters are on (a new dict)."""
    device = next(model.parameters()).device
    return {key: value.to(device) for key, value in batch.items()}


def stopped_summary(out: Path, result: TrainingResult, **extra: Any) -> dict[str, Any]:
    """Write and return the ``summary.json`` of a run that stopped before its last step."""
    summary = {"finished": False, "steps": result.steps, "total_steps": result.total_steps,
               "best_step": result.best_step, "seconds": result.seconds, "seconds_cover": result.seconds_cover,
               **extra}
    Path(out, "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


class _EpochStream(torch.utils.data.IterableDataset):
    """The batches of one epoch from ``skip`` on, collated; with workers, worker ``w`` of ``n`` collates every
    ``n``-th batch and the DataLoader's round-robin returns them in order."""

    def __init__(self, epoch_batches, epoch: int, skip: int, collate) -> None:
        self.epoch_batches, self.epoch, self.skip, self.collate = epoch_batches, epoch, skip, collate

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
        for i, batch in enumerate(self.epoch_batches(self.epoch)):
            if i >= self.skip and (i - self.skip) % workers == worker:
                yield self.collate(batch)


def _epoch_stream(epoch_batches, epoch: int, skip: int, collate, workers: int) -> Iterable[Any]:
    stream = _EpochStream(epoch_batches, epoch, skip, collate)
    if workers == 0:
        return iter(stream)
    # its own generator: the workers' base seed must not be drawn from the global RNG (dropout masks would change)
    return iter(torch.utils.data.DataLoader(stream, batch_size=None, num_workers=workers,
                                            generator=torch.Generator().manual_seed(epoch)))


def _param_groups(model: torch.nn.Module, args: TrainingArguments, learning_rate_of: Callable[[str], float]):
    groups: dict[tuple[float, bool], list] = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        no_decay = name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name
        groups.setdefault((float(learning_rate_of(name)), no_decay), []).append(p)
    return [{"params": params, "lr": lr, "weight_decay": 0.0 if no_decay else args.weight_decay}
            for (lr, no_decay), params in groups.items()]


def _optimizer_and_schedule(model, args: TrainingArguments, learning_rate_of, total: int, steps_per_epoch: int):
    from transformers import get_linear_schedule_with_warmup

    optimizers = {"adamw": torch.optim.AdamW, "adam": torch.optim.Adam}
    if args.optimizer not in optimizers:
        raise ValueError(f"optimizer must be one of {sorted(optimizers)}, got {args.optimizer!r}")
    fused = {"fused": True} if args.fused_optimizer else {}
    optimizer = optimizers[args.optimizer](_param_groups(model, args, learning_rate_of),
                                           betas=tuple(args.adam_betas), **fused)
    if args.lr_schedule == "linear":
        return optimizer, get_linear_schedule_with_warmup(optimizer, math.ceil(args.warmup_ratio * total), total)
    if args.lr_schedule == "step":
        every = args.step_decay_every or steps_per_epoch
        return optimizer, torch.optim.lr_scheduler.StepLR(optimizer, step_size=max(1, every),
                                                          gamma=args.step_decay_gamma)
    raise ValueError(f"lr_schedule must be 'linear' or 'step', got {args.lr_schedule!r}")


def train(
    model: torch.nn.Module,
    *,
    args: TrainingArguments,
    options: Any,
    epoch_batches: Callable[[int], Iterable[Any]],
    steps_per_epoch: int,
    loss_fn: Callable[[torch.nn.Module, Any], torch.Tensor],
    evaluate_fn: Callable[[torch.nn.Module], dict[str, float]],
    save_best: Callable[[torch.nn.Module, Path], None],
    selection_key: str,
    greater_is_better: bool,
    resume: bool = True,
    collate: Callable[[Any], Any] | None = None,
    learning_rate_of: Callable[[str], float] | None = None,
) -> TrainingResult:
    """Run the loop; the best model (by ``evaluate_fn()[selection_key]``) is written with ``save_best``.
    ``learning_rate_of(name)`` names each parameter's learning rate (a recipe's
    :func:`~dialeval.training.recipe.learning_rate_groups`); without it every parameter learns at
    ``args.head_learning_rate`` or, unset, ``args.learning_rate``.
    ``steps_per_epoch`` counts the batches ``epoch_batches`` yields (an optimizer step takes
    ``args.gradient_accumulation`` of them); ``collate`` (default: none) turns a yielded batch into what ``loss_fn``
    takes. ``options`` is the recipe's options dataclass, saved with the loop's settings in ``training_args.json``."""
    from accelerate import Accelerator
    from accelerate.utils import set_seed

    if args.precision not in ("fp32", "bf16"):
        raise ValueError(f"precision must be 'fp32' or 'bf16', got {args.precision!r}")
    accumulate = max(1, int(args.gradient_accumulation))
    batches_per_epoch = steps_per_epoch
    steps_per_epoch = batches_per_epoch // accumulate
    if steps_per_epoch < 1:
        raise ValueError(f"{batches_per_epoch} batches per epoch is less than one optimizer step of "
                         f"{accumulate} batches: lower --gradient-accumulation or --batch-size")
    if learning_rate_of is None:
        def learning_rate_of(name: str) -> float:
            return args.head_learning_rate or args.learning_rate
    hand_over_if_capturing(LoopInputs(model=model, args=args, options=options, epoch_batches=epoch_batches,
                                      batches_per_epoch=batches_per_epoch, loss_fn=loss_fn, collate=collate,
                                      learning_rate_of=learning_rate_of))
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    set_seed(args.seed)
    # The loop places the model itself, so an explicit device (cuda:1 too) is the one used; Accelerate keeps the
    # rest (optimizer wrapping, state saving, RNG states).
    device = training_device(args.device)
    if args.precision == "bf16" and device.type == "cpu" and not cpu_bf16_instructions():
        warnings.warn(BF16_WITHOUT_INSTRUCTIONS, stacklevel=2)
    model.to(device)
    accelerator = Accelerator(device_placement=False)
    total = steps_per_epoch * args.epochs
    if args.max_steps is not None:
        total = min(args.max_steps, total)
    optimizer, scheduler = _optimizer_and_schedule(model, args, learning_rate_of, total, steps_per_epoch)
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    (out / "training_args.json").write_text(json.dumps(
        {"options": asdict(options), "loop": {k: v for k, v in asdict(args).items() if k != "deadline"},
         "total_steps": total, "steps_per_epoch": steps_per_epoch, "selection_key": selection_key}, indent=1))
    (out / PROCESS_FILE).write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                                "started": time.time()}))

    state_dir, progress_file, log_file = out / "last_state", out / "progress.json", out / "log.jsonl"
    step, best, best_step, history = 0, None, -1, []
    earlier_seconds: float | None = 0.0  # loop time of the calls before this one (None: not recorded)
    if resume and progress_file.exists() and state_dir.exists():
        accelerator.load_state(str(state_dir))
        saved = json.loads(progress_file.read_text())
        step, best, best_step, history = saved["step"], saved["best"], saved["best_step"], saved["history"]
        earlier_seconds = saved.get("seconds")  # absent in a state saved before the loop recorded it
        accelerator.print(f"resumed from step {step} (best {selection_key}={best} at step {best_step})")
        if earlier_seconds is None:
            accelerator.print("the time of the earlier calls is not recorded in this state: the summary's seconds "
                              "count this call only (seconds_cover: this_call)")
    timing = {"step": 0.0, "eval": 0.0, "save": 0.0}

    def better(value: float) -> bool:
        return best is None or (value > best if greater_is_better else value < best)

    def save_state(step: int) -> None:
        began = time.monotonic()
        accelerator.save_state(str(state_dir))
        progress_file.write_text(json.dumps({"step": step, "best": best, "best_step": best_step, "history": history,
                                             **({} if earlier_seconds is None else {"seconds": elapsed()})}))
        timing["save"] = time.monotonic() - began

    def checkpoint(step: int) -> None:
        nonlocal best, best_step
        began = time.monotonic()
        model.eval()
        metrics = evaluate_fn(accelerator.unwrap_model(model))
        model.train()
        record = {"step": step, **metrics}
        if better(metrics[selection_key]):
            best, best_step = metrics[selection_key], step
            save_best(accelerator.unwrap_model(model), out / "best")
            record["best"] = True
        history.append(record)
        _log(log_file, {"event": "eval", **record})
        accelerator.print(f"step {step}: " + ", ".join(f"{k}={v:.4f}" for k, v in metrics.items()))
        timing["eval"] = time.monotonic() - began
        save_state(step)

    def out_of_time(step: int) -> bool:
        if args.stop_after_steps is not None and step - first_step >= args.stop_after_steps:
            return True
        if args.deadline is None:
            return False
        reserve = 3 * timing["step"] + timing["save"] + (timing["eval"] if (step + 1) % args.eval_every == 0 else 0)
        return time.monotonic() + reserve >= args.deadline

    def elapsed() -> float:
        """Loop seconds of the whole run: the earlier calls' (when recorded) and this one's."""
        return round((earlier_seconds or 0.0) + time.perf_counter() - start, 1)

    def result(finished: bool) -> TrainingResult:
        return TrainingResult(best_metric=float("nan") if best is None else float(best), best_step=best_step,
                              steps=step, seconds=elapsed(), history=history, finished=finished, total_steps=total,
                              seconds_cover="run" if earlier_seconds is not None else "this_call")

    autocast = torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=args.precision == "bf16")
    start, first_step = time.perf_counter(), step
    model.train()
    running = []
    for epoch in range(step // steps_per_epoch, args.epochs):
        if step >= total:
            break
        skip = (step - epoch * steps_per_epoch) * accumulate
        batches = _epoch_stream(epoch_batches, epoch, skip, collate or (lambda batch: batch), args.dataloader_workers)
        for _ in range(skip // accumulate, steps_per_epoch):
            if step >= total:
                break
            if out_of_time(step):
                save_state(step)
                accelerator.print(f"stopped at step {step} of {total}; state saved in {state_dir}")
                return result(finished=False)
            began = time.monotonic()
            running.extend(optimizer_step(model, batches, loss_fn=loss_fn, accelerator=accelerator,
                                          optimizer=optimizer, scheduler=scheduler, autocast=autocast,
                                          accumulate=accumulate, max_grad_norm=args.max_grad_norm))
            step += 1
            timing["step"] = max(timing["step"], time.monotonic() - began)
            if step % args.log_every == 0:
                rate = (step - first_step) / (time.perf_counter() - start)  # this run's steps only
                _log(log_file, {"event": "train", "step": step, "epoch": epoch, "loss": sum(running) / len(running),
                                "lr": scheduler.get_last_lr()[0]})
                accelerator.print(f"step {step}/{total} epoch {epoch} loss {sum(running) / len(running):.4f} "
                                  f"({rate:.2f} steps/s)")
                running = []
            if step % args.eval_every == 0:
                checkpoint(step)
    if not history or history[-1]["step"] != step:
        checkpoint(step)
    return result(finished=True)


def optimizer_step(model, batches: Iterator[Any], *, loss_fn, accelerator, optimizer, scheduler, autocast,
                   accumulate: int, max_grad_norm: float | None) -> list[float]:
    """One optimizer step of the loop: ``accumulate`` batches from ``batches``, each forward under ``autocast``
    and backward (losses scaled by ``1 / accumulate``), gradient clipping at ``max_grad_norm`` (None or <= 0:
    none), the optimizer and scheduler steps; returns the batches' losses."""
    losses = []
    for _ in range(accumulate):
        with autocast:
            loss = loss_fn(model, next(batches))
        accelerator.backward(loss / accumulate if accumulate > 1 else loss)
        losses.append(loss.item())
    if max_grad_norm is not None and max_grad_norm > 0:
        accelerator.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad()
    return losses


def half_state_dict(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``state`` with its floating-point tensors in float16, the others as they are: what a shipped checkpoint
    stores (half the bytes; a config that keeps float32 makes loading compute in float32 from these values). The
    row scales of weights stored as int8 rows (``<weight>_scale`` beside an int8 ``<weight>``, ``dialeval checkpoint
    quantise``) stay float32."""
    from ..modeling.shared.modeling_shared import row_scale_name

    scales = {row_scale_name(k) for k, v in state.items() if v.dtype == torch.int8}
    return {k: v.to(torch.float16).contiguous() if v.is_floating_point() and k not in scales else v
            for k, v in state.items()}


def replace_checkpoint(model, path: Path, **save_kwargs: Any) -> None:
    """``model.save_pretrained(path)``, replacing what was in ``path`` (a better checkpoint than the last)."""
    if path.exists():
        shutil.rmtree(path)
    model.save_pretrained(path, **save_kwargs)


def save_half_checkpoint(model, path: Path) -> None:
    """:func:`replace_checkpoint` with every floating-point weight stored in float16 (:func:`half_state_dict`)."""
    replace_checkpoint(model, path, state_dict=half_state_dict(model.state_dict()))


def _log(path: Path, record: dict[str, Any]) -> None:
    with open(path, "a") as fh:
        fh.write(json.dumps({**record, "time": round(time.time(), 3)}) + "\n")
