"""The shared training loop: Accelerate device placement, seeding, warm-up + linear decay (or step decay) with AdamW
(or Adam), gradient clipping, periodic validation with best-checkpoint selection, JSONL logging, and resumption from
the last saved state.

A metric's recipe provides the model, a function that yields the batches of an epoch (deterministic given the
epoch and seed), a loss function and a validation function; the loop does the rest. Resuming restores model,
optimizer, scheduler and RNG states (``Accelerator.save_state``) and skips the batches of the interrupted epoch
that were already seen, so an interrupted run continues where it stopped.

The model trains on :func:`~dialeval.training.device.training_device` of ``args.device`` (an explicit ``cuda:1`` is
honoured; unset: Accelerate's choice), the device the recipe's encoder uses too.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from .device import training_device


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
    lr_schedule: str = "linear"  # "linear": warm-up + linear decay; "step": lr *= step_decay_gamma every N steps
    step_decay_every: int | None = None  # "step" schedule: steps between decays (None: one epoch)
    step_decay_gamma: float = 0.5


@dataclass
class TrainingResult:
    best_metric: float
    best_step: int
    steps: int
    seconds: float
    history: list[dict[str, Any]]


def _param_groups(model: torch.nn.Module, args: TrainingArguments, is_head: Callable[[str], bool]):
    groups: dict[tuple[bool, bool], list] = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        no_decay = name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name
        groups.setdefault((is_head(name), no_decay), []).append(p)
    out = []
    for (head, no_decay), params in groups.items():
        lr = (args.head_learning_rate or args.learning_rate) if head else args.learning_rate
        out.append({"params": params, "lr": lr, "weight_decay": 0.0 if no_decay else args.weight_decay})
    return out


def _optimizer_and_schedule(model, args: TrainingArguments, is_head, total: int, steps_per_epoch: int):
    from transformers import get_linear_schedule_with_warmup

    optimizers = {"adamw": torch.optim.AdamW, "adam": torch.optim.Adam}
    if args.optimizer not in optimizers:
        raise ValueError(f"optimizer must be one of {sorted(optimizers)}, got {args.optimizer!r}")
    optimizer = optimizers[args.optimizer](_param_groups(model, args, is_head))
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
    epoch_batches: Callable[[int], Iterable[dict[str, Any]]],
    steps_per_epoch: int,
    loss_fn: Callable[[torch.nn.Module, dict[str, Any]], torch.Tensor],
    evaluate_fn: Callable[[torch.nn.Module], dict[str, float]],
    save_best: Callable[[torch.nn.Module, Path], None],
    selection_key: str,
    greater_is_better: bool,
    is_head: Callable[[str], bool] = lambda name: True,
    resume: bool = True,
) -> TrainingResult:
    """Run the loop; the best model (by ``evaluate_fn()[selection_key]``) is written with ``save_best``.
    ``options`` is the recipe's options dataclass, saved with the loop's settings in ``training_args.json``."""
    from accelerate import Accelerator
    from accelerate.utils import set_seed

    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    set_seed(args.seed)
    # The loop places the model itself, so an explicit device (cuda:1 too) is the one used; Accelerate keeps the
    # rest (optimizer wrapping, state saving, RNG states).
    model.to(training_device(args.device))
    accelerator = Accelerator(device_placement=False)
    total = steps_per_epoch * args.epochs if args.max_steps is None else min(args.max_steps, steps_per_epoch * args.epochs)
    optimizer, scheduler = _optimizer_and_schedule(model, args, is_head, total, steps_per_epoch)
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    (out / "training_args.json").write_text(json.dumps({"options": asdict(options), "loop": asdict(args)}, indent=1))

    state_dir, progress_file, log_file = out / "last_state", out / "progress.json", out / "log.jsonl"
    step, best, best_step, history = 0, None, -1, []
    if resume and progress_file.exists() and state_dir.exists():
        accelerator.load_state(str(state_dir))
        saved = json.loads(progress_file.read_text())
        step, best, best_step, history = saved["step"], saved["best"], saved["best_step"], saved["history"]
        accelerator.print(f"resumed from step {step} (best {selection_key}={best} at step {best_step})")

    def better(value: float) -> bool:
        return best is None or (value > best if greater_is_better else value < best)

    def checkpoint(step: int) -> None:
        nonlocal best, best_step
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
        accelerator.save_state(str(state_dir))
        progress_file.write_text(json.dumps({"step": step, "best": best, "best_step": best_step, "history": history}))

    start, first_step = time.perf_counter(), step
    model.train()
    running = []
    for epoch in range(step // steps_per_epoch, args.epochs):
        skip = step - epoch * steps_per_epoch
        for i, batch in enumerate(epoch_batches(epoch)):
            if i < skip:
                continue
            if step >= total:
                break
            loss = loss_fn(model, batch)
            accelerator.backward(loss)
            if args.max_grad_norm is not None and args.max_grad_norm > 0:
                accelerator.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            step += 1
            running.append(loss.item())
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
    return TrainingResult(best_metric=float(best), best_step=best_step, steps=step,
                          seconds=round(time.perf_counter() - start, 1), history=history)


def replace_checkpoint(model, path: Path, **save_kwargs: Any) -> None:
    """``model.save_pretrained(path)``, replacing what was in ``path`` (a better checkpoint than the last)."""
    if path.exists():
        shutil.rmtree(path)
    model.save_pretrained(path, **save_kwargs)


def _log(path: Path, record: dict[str, Any]) -> None:
    with open(path, "a") as fh:
        fh.write(json.dumps(record) + "\n")
