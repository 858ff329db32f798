"""Batching helpers shared by every metric: length-sorted batches, fixed-shape forward chunks, progress bars.

Batches are built from *sorted* lengths and never mix token lengths when ``same_length=True``: a batch without
padding computes each row exactly as it would alone, so a text's embedding (and any score built from it) is
bit-identical whatever the batch size. Callers always restore the input order from the returned indices.

**Progress bars** (:func:`progress`) advance once per batch, with the total and the time left, on stderr. Each stage
of a scoring call (``encoding``, ``scoring``...) opens its own; inside :func:`progress_scope` (opened by every
scoring call with the metric's name, and by ``dialeval score`` around a whole run) a bar is labelled
``<metric>: <stage>`` and obeys the scope: a call with ``progress_bar=False`` shows no bar at all, whatever its
stages ask for. Left to decide (``None``), a bar appears only when stderr is a terminal, and only once the job has
run :data:`PROGRESS_DELAY_SECONDS`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from tqdm.auto import tqdm

# By default a progress bar appears (on stderr) once a job has run this many seconds: short calls print nothing,
# long ones show their rate and time left.
PROGRESS_DELAY_SECONDS = 2.0
# Rows every fixed-shape forward pass carries. CPU matmul kernels take differently rounded code paths for different
# row counts (measured: 1 ulp between 16 and 32 rows, and a separate path below 12), so a forward pass whose row
# count never depends on the batch is what makes a score independent of its batch-mates and of ``batch_size``.
FORWARD_ROWS = 32


def length_sorted_batches(
    lengths: Sequence[int], batch_size: int, *, same_length: bool = True
) -> list[list[int]]:
    """Group item indices into batches, longest first; ``same_length`` keeps each batch to one length."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    for i in order:
        if batches and len(batches[-1]) < batch_size and (
            not same_length or lengths[batches[-1][0]] == lengths[i]
        ):
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


#: the innermost open :func:`progress_scope`: (label, enabled)
_SCOPE: ContextVar[tuple[str, bool | None] | None] = ContextVar("dialeval_progress_scope", default=None)


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except ValueError:  # a closed stream
        return False


def may_show(enabled: bool | None) -> bool:
    """Whether a bar with ``enabled`` can appear at all (outside any scope): asked for, or left to decide on a
    terminal. A caller skips work done only for a bar (counting a file's rows) when it cannot."""
    return enabled is True or (enabled is None and stderr_is_terminal())


def _nested(outer: bool | None, inner: bool | None) -> bool | None:
    """A bar setting inside a scope's: ``False`` on either side silences, else the inner choice, else the outer."""
    if outer is False or inner is False:
        return False
    return outer if inner is None else inner


@contextmanager
def progress_scope(label: str, enabled: bool | None) -> Iterator[None]:
    """Bars opened inside are labelled ``label: <stage>`` and shown as ``enabled`` says (module docstring). A scope
    inside another (an ensemble's member, a stream's chunk) adds its label to the outer one's (``ensemble/grade``) and
    can only be quieter: ``False`` anywhere silences everything inside."""
    outer = _SCOPE.get()
    if outer is not None:
        outer_label, outer_enabled = outer
        label = label if label == outer_label else f"{outer_label}/{label}"
        enabled = _nested(outer_enabled, enabled)
    token = _SCOPE.set((label, enabled))
    try:
        yield
    finally:
        _SCOPE.reset(token)


def progress(iterable: Iterable, *, total: int | None, enabled: bool | None, desc: str):
    """``iterable`` with a tqdm bar on stderr that advances per item of ``iterable`` (a batch), with ``total`` and
    the time left: ``enabled=True`` shows it at once, ``False`` never, ``None`` on a terminal only, once the job
    has run :data:`PROGRESS_DELAY_SECONDS` (so short calls stay silent). Inside a :func:`progress_scope` the scope
    labels it and can silence it (module docstring)."""
    scope = _SCOPE.get()
    if scope is not None:
        label, scope_enabled = scope
        desc = label if desc == label else f"{label}: {desc}"
        enabled = _nested(scope_enabled, enabled)
    if not may_show(enabled):
        enabled = False
    delay = PROGRESS_DELAY_SECONDS if enabled is None else 0.0
    return tqdm(iterable, total=total, desc=desc, disable=enabled is False, delay=delay, leave=False)


def fixed_row_chunks(indices: Sequence[int], rows: int = FORWARD_ROWS) -> Iterator[tuple[list[int], int]]:
    """Cut ``indices`` into chunks of exactly ``rows`` entries: yields (chunk, n_real); the last chunk is topped up
    with copies of its last index, whose outputs the caller drops (keep the first ``n_real``)."""
    for start in range(0, len(indices), rows):
        chunk = list(indices[start:start + rows])
        yield chunk + [chunk[-1]] * (rows - len(chunk)), len(chunk)
