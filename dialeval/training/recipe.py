"""The start and end of every training run, written once: :func:`run_recipe` and the :class:`RecipeRun` it hands to a
recipe, so that a recipe keeps only its data, model, loss, evaluation and report.

A recipe's ``run(opts)`` is ``run_recipe(opts, metric=METRIC, prepare=prepare, train=train_prepared)``:

- **start**: torch's CPU threads for the run (``--threads``; :func:`~dialeval.backbone.device.torch_threads`, the
  one way threads are set), the options checked, then, when the run trains, ``setup(opts)`` (what must fail
  before minutes of preparation: a missing device (:func:`device_first`), an encoder that does not load; the
  encoder it makes is the run's), the run folder prepared unless it holds a
  prepared run (:func:`~dialeval.training.prepared.ensure_prepared`), and with ``--prepare-only`` the manifest
  returned (``{"prepared": True, **manifest}``);
- **training**: :meth:`RecipeRun.arguments` fills the loop arguments every recipe takes from its
  :class:`~dialeval.training.options.TrainingOptions` (output folder, seed, epochs, learning rate, ``--eval-every``
  (default once per epoch), the log interval, steps, device, precision, accumulation, workers and the
  ``--max-minutes`` deadline); :func:`learning_rate_groups` is each parameter's learning rate by name;
- **end**: :meth:`RecipeRun.stopped` writes the ``summary.json`` of a run ``--max-minutes`` stopped,
  :meth:`RecipeRun.finish` that of a finished run: what every recipe reports (steps, the best step and its
  validation figure, seconds, the device and examples seen, the encoder, threads, history, options) around the
  recipe's own report.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import torch

from ..backbone.device import torch_threads
from .device import device_description, training_device
from .loop import TrainingArguments, TrainingResult, shared_loop_arguments, stopped_summary
from .options import RecipeOptions, TrainingOptions
from .prepared import ensure_prepared

#: Steps between two training-loss records of the log (fewer when an epoch is shorter).
LOG_EVERY = 20

O = TypeVar("O", bound=TrainingOptions)


@dataclass
class RecipeRun(Generic[O]):
    """A run past its preparation: its options, folder, start time and what ``setup`` made."""

    opts: O
    metric: str
    #: ``time.monotonic()`` when the run started (``--max-minutes`` counts from it)
    started: float
    #: seconds the preparation took in this call (0 when the folder was prepared already)
    prepare_seconds: float
    #: what the recipe's ``setup(opts)`` returned (None without one)
    setup: Any = None
    #: what the recipe adds to every summary (``summary.json`` of a stopped run too), e.g. the examples seen
    seen: dict[str, Any] = field(default_factory=dict)

    @property
    def out(self) -> Path:
        return Path(self.opts.output_dir)

    def arguments(self, *, steps_per_epoch: int, **recipe: Any) -> TrainingArguments:
        """The loop's arguments: the :class:`TrainingOptions` values (validation once per ``steps_per_epoch``
        optimizer steps unless ``--eval-every``; a training-loss record every :data:`LOG_EVERY` steps, or every epoch
        when shorter), with the recipe's own (optimizer, schedule, weight decay ...) over them."""
        o = self.opts
        shared = dict(output_dir=str(self.out), seed=o.seed, epochs=o.epochs, learning_rate=o.learning_rate,
                      eval_every=o.eval_every or steps_per_epoch, log_every=max(1, min(LOG_EVERY, steps_per_epoch)),
                      max_steps=o.max_steps, device=o.device, **shared_loop_arguments(o, started=self.started))
        return TrainingArguments(**{**shared, **recipe})

    def examples_seen(self, result: TrainingResult, model: torch.nn.Module, *, key: str = "examples_seen",
                      unit: str | None = None, steps: int | None = None) -> dict[str, Any]:
        """Record (in :attr:`seen`) and return the training device and the examples seen: optimizer steps (``steps``,
        default the result's) x batch size x gradient accumulation, under ``key``, with its ``unit`` when given."""
        o = self.opts
        steps = result.steps if steps is None else steps
        self.seen.update({"device": device_description(next(model.parameters()).device),
                          key: steps * o.batch_size * o.gradient_accumulation,
                          **({f"{key}_unit": unit} if unit is not None else {})})
        return self.seen

    def stopped(self, result: TrainingResult, **extra: Any) -> dict[str, Any]:
        """Write and return the ``summary.json`` of a run stopped before its last step (``--max-minutes``)."""
        return stopped_summary(self.out, result, **extra, **self.seen)

    def finish(self, result: TrainingResult, selection_key: str, report: dict[str, Any], *,
               encoder: dict[str, str] | None = None) -> dict[str, Any]:
        """Write and return the ``summary.json`` of a finished run: the recipe's ``report`` between what every run
        reports (steps, best step and validation figure ``best_<selection_key>``, the loop's seconds; the examples
        seen, the encoder's name and weights sha256, threads, history and options)."""
        summary = {
            "finished": True, "metric": self.metric, "steps": result.steps, "total_steps": result.total_steps,
            "best_step": result.best_step, f"best_{selection_key}": result.best_metric, **report, **self.seen,
            "prepare_seconds": round(self.prepare_seconds, 1), "train_seconds": result.seconds,
            "seconds_cover": result.seconds_cover, "total_seconds": round(time.monotonic() - self.started, 1),
            **({"encoder": encoder} if encoder is not None else {}), "torch_threads": torch.get_num_threads(),
            "history": result.history, "options": asdict(self.opts),
        }
        (self.out / "summary.json").write_text(json.dumps(summary, indent=1))
        return summary


def run_recipe(opts: O, *, metric: str, prepare: Callable[[O], dict[str, Any]],
               train: Callable[[RecipeRun[O]], dict[str, Any]], setup: Callable[[O], Any] | None = None
               ) -> dict[str, Any]:
    """Run a recipe (see the module docstring): threads, checks, ``setup``, preparation, then ``train`` unless
    ``--prepare-only``; returns the summary (``{"prepared": True, **manifest}`` with ``--prepare-only``)."""
    with torch_threads(opts.threads or None):
        started = time.monotonic()
        opts.check()
        made = setup(opts) if setup is not None and not opts.prepare_only else None
        began = time.perf_counter()
        manifest = ensure_prepared(opts, metric=metric, prepare=prepare)
        if opts.prepare_only:
            return {"prepared": True, **manifest}
        return train(RecipeRun(opts, metric, started, time.perf_counter() - began, made))


def device_first(opts: RecipeOptions) -> None:
    """A recipe's ``setup`` that only looks up the training device (:class:`~dialeval.training.DeviceUnavailable`
    for a missing one), before minutes of preparation."""
    training_device(opts.device)


def learning_rate_groups(opts: TrainingOptions, *, is_head: Callable[[str], bool],
                         is_adapter: Callable[[str], bool] | None = None) -> Callable[[str], float]:
    """Each parameter's learning rate by its name: a low-rank adapter's ``--adapter-learning-rate`` (with
    ``is_adapter``), a head's ``--head-learning-rate`` (``is_head``), any other (the pretrained encoder's)
    ``--learning-rate``."""

    def learning_rate_of(name: str) -> float:
        if is_adapter is not None and is_adapter(name):
            return opts.adapter_learning_rate
        return opts.head_learning_rate if is_head(name) else opts.learning_rate

    return learning_rate_of


__all__ = ["LOG_EVERY", "RecipeRun", "device_first", "learning_rate_groups", "run_recipe"]
