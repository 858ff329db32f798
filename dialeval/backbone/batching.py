"""Batching helpers shared by every metric: length-sorted batches, fixed-shape forward chunks, progress bars.

Batches are built from *sorted* lengths and never mix token lengths when ``same_length=True``: a batch without
padding computes each row exactly as it would alone, so a text's embedding (and any score built from it) is
bit-identical whatever the batch size. Callers always restore the input order from the returned indices.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

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


def progress(iterable: Iterable, *, total: int, enabled: bool | None, desc: str):
    """``iterable`` with a tqdm bar on stderr (rate and time left): ``enabled=True`` shows it at once, ``False``
    never, ``None`` once the job has run :data:`PROGRESS_DELAY_SECONDS` (so short calls stay silent)."""
    delay = PROGRESS_DELAY_SECONDS if enabled is None else 0.0
    return tqdm(iterable, total=total, desc=desc, disable=enabled is False, delay=delay, leave=False)


def fixed_row_chunks(indices: Sequence[int], rows: int = FORWARD_ROWS) -> Iterator[tuple[list[int], int]]:
    """Cut ``indices`` into chunks of exactly ``rows`` entries: yields (chunk, n_real); the last chunk is topped up
    with copies of its last index, whose outputs the caller drops (keep the first ``n_real``)."""
    for start in range(0, len(indices), rows):
        chunk = list(indices[start:start + rows])
        yield chunk + [chunk[-1]] * (rows - len(chunk)), len(chunk)
