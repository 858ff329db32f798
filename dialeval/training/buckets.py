"""Batches of rows of similar length: ``--length-buckets N`` of the recipes whose batches are token rows.

Every recipe pads a batch to its longest row. Drawn in plain random order, a batch of GRADE's training pairs held
twice the tokens its rows need (issue 38: 97.5 real tokens per pair, 195 as padded), and a row of 32 tokens trains
5.6x faster than one of 128. :func:`length_bucketed_batches` is :func:`~dialeval.training.loop.shuffled_batches`
with the rows of each batch chosen to be of similar length, while every epoch still takes each row at most once, in
an order fixed by (seed, epoch):

1. the epoch's rows in the order plain shuffling gives them (:func:`~dialeval.training.loop.shuffled_batches`'s
   permutation seeded by (seed, epoch), or the recipe's own); the same remainder of fewer than ``batch_size`` rows
   is left out of the epoch;
2. taken ``pool`` batches at a time (``pool x batch_size`` rows), each pool sorted by length (stable: rows of the
   same length keep their random order) and cut into ``pool`` batches of ``batch_size`` rows;
3. the epoch's batches in an order shuffled with (seed, epoch, 1), so that long and short batches alternate at
   random through the epoch (a sorted run of them would tilt the gradient steps by length).

So an epoch sees exactly the rows plain shuffling sees, each once, and the same batch count; only which rows share
a batch, and the batches' order, differ. With ``pool=1`` the batches hold the rows plain shuffling gives them (their
order within the batch sorted by length), in a shuffled order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

#: The help text of ``--length-buckets`` (GRADE's and RADE's recipes).
LENGTH_BUCKETS_HELP = ("Batch rows of similar length (less padding, faster steps): each epoch's shuffled rows are "
                       "taken N batches at a time, sorted by token length and cut into batches, and the epoch's "
                       "batches are shuffled; every row is still seen once per epoch (0: off, plain random "
                       "batches).")


def length_bucketed_batches(lengths: Sequence[int] | np.ndarray, *, batch_size: int, gradient_accumulation: int,
                            seed: int, pool: int, permutation: Callable[[int], np.ndarray] | None = None
                            ) -> tuple[int, Callable[[int], Iterator[np.ndarray]]]:
    """(batches per epoch, ``epoch_batches``) for the shared loop, as
    :func:`~dialeval.training.loop.shuffled_batches` of ``len(lengths)`` rows, with the rows batched by
    ``lengths`` (each row's token count, or any cost that grows with it) in pools of ``pool`` batches (see the
    module doc). ``permutation(epoch)``: the epoch's plain order of the row indices where a recipe has its own
    (default: :func:`~dialeval.training.loop.shuffled_batches`'s, seeded by (seed, epoch)). ``pool`` < 1 is an
    error; fewer rows than one optimizer step too."""
    lengths = np.asarray(lengths)
    if lengths.ndim != 1:
        raise ValueError(f"lengths must be one number per row, got shape {lengths.shape}")
    if pool < 1:
        raise ValueError(f"pool must be at least 1 batch, got {pool}")
    n_rows = len(lengths)
    batches_per_epoch = n_rows // batch_size
    if batches_per_epoch // max(1, gradient_accumulation) < 1:
        raise ValueError(f"{n_rows} training examples is less than one step of {batch_size} x "
                         f"{gradient_accumulation}: lower --batch-size or --gradient-accumulation")
    kept = batches_per_epoch * batch_size

    def epoch_batches(epoch: int) -> Iterator[np.ndarray]:
        order = (np.random.default_rng([seed, epoch]).permutation(n_rows) if permutation is None
                 else np.asarray(permutation(epoch)))[:kept]
        batches: list[np.ndarray] = []
        step = pool * batch_size
        for start in range(0, kept, step):
            rows = order[start:start + step]
            rows = rows[np.argsort(lengths[rows], kind="stable")]
            batches.extend(rows[i:i + batch_size] for i in range(0, len(rows), batch_size))
        for i in np.random.default_rng([seed, epoch, 1]).permutation(len(batches)):
            yield batches[i]

    return batches_per_epoch, epoch_batches


def epoch_batches_for(lengths: Callable[[], Sequence[int] | np.ndarray], n_rows: int, opts) -> tuple[
        int, Callable[[int], Iterator[np.ndarray]]]:
    """A recipe's batches from its options: :func:`length_bucketed_batches` of ``lengths()`` (computed only then)
    when ``opts.length_buckets`` > 0, else the loop's :func:`~dialeval.training.loop.recipe_batches` of ``n_rows``
    rows."""
    from .loop import recipe_batches

    if not getattr(opts, "length_buckets", 0):
        return recipe_batches(n_rows, opts)
    counted = np.asarray(lengths())
    if len(counted) != n_rows:
        raise ValueError(f"{len(counted)} row lengths for {n_rows} rows")
    return length_bucketed_batches(counted, batch_size=opts.batch_size,
                                   gradient_accumulation=opts.gradient_accumulation, seed=opts.seed,
                                   pool=opts.length_buckets)


__all__ = ["LENGTH_BUCKETS_HELP", "epoch_batches_for", "length_bucketed_batches"]
