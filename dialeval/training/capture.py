"""What a recipe hands the shared loop, caught before the loop trains.

Every recipe builds its model, its batches, its loss and its loop settings, then calls
:func:`dialeval.training.loop.train`. Inside :func:`capturing_loop_inputs`, that call trains nothing and writes
nothing: it raises :class:`LoopInputsCaptured` carrying :class:`LoopInputs`, which leaves the recipe's ``run`` and
reaches the caller. A tool that needs a recipe's real model and batches (the training-speed benchmark,
:mod:`dialeval.training.speed`) gets them this way from the recipe's own code, without a copy of it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

_CAPTURING: contextvars.ContextVar[bool] = contextvars.ContextVar("dialeval_capture_loop_inputs", default=False)


@dataclass
class LoopInputs:
    """The arguments of one :func:`~dialeval.training.loop.train` call, as the recipe passed them (the model still
    where the recipe built it, usually the CPU). ``batches_per_epoch`` counts what ``epoch_batches`` yields;
    ``learning_rate_of`` is each parameter's rate, resolved as the loop resolves it."""

    model: torch.nn.Module
    args: Any  # TrainingArguments
    options: Any
    epoch_batches: Callable[[int], Iterable[Any]]
    batches_per_epoch: int
    loss_fn: Callable[[torch.nn.Module, Any], torch.Tensor]
    collate: Callable[[Any], Any] | None
    learning_rate_of: Callable[[str], float]


class LoopInputsCaptured(Exception):
    """Raised by :func:`~dialeval.training.loop.train` inside :func:`capturing_loop_inputs`; ``inputs`` holds what
    the call received."""

    def __init__(self, inputs: LoopInputs) -> None:
        super().__init__("the training loop's inputs were captured (dialeval.training.capture)")
        self.inputs = inputs


@contextmanager
def capturing_loop_inputs() -> Iterator[None]:
    """Within this block, the shared loop raises :class:`LoopInputsCaptured` instead of training."""
    token = _CAPTURING.set(True)
    try:
        yield
    finally:
        _CAPTURING.reset(token)


def hand_over_if_capturing(inputs: LoopInputs) -> None:
    """Called by the loop before it does anything: raise :class:`LoopInputsCaptured` when capturing."""
    if _CAPTURING.get():
        raise LoopInputsCaptured(inputs)


def capture_loop_inputs(run: Callable[[Any], Any], opts: Any) -> LoopInputs:
    """Run a recipe's ``run(opts)`` up to its (first) call of the shared loop and return that call's inputs; a
    recipe that returns without calling the loop is an error."""
    with capturing_loop_inputs():
        try:
            run(opts)
        except LoopInputsCaptured as captured:
            return captured.inputs
    raise RuntimeError(f"{getattr(run, '__module__', run)}.run returned without calling the training loop")


__all__ = ["LoopInputs", "LoopInputsCaptured", "capture_loop_inputs", "capturing_loop_inputs",
           "hand_over_if_capturing"]
