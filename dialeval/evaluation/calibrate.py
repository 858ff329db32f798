"""Fitting a metric's calibrated scale (:mod:`dialeval.scoring.scales`): score human replies, store their CDF.

The human replies (no model wrote them, nobody rated them; drawn with a fixed seed, so the same arguments give the
same items on every machine):

* **turn level**, :func:`human_replies`: DailyDialog validation, ``n`` dialogues (default 1,000: every validation
  dialogue once), of each one real reply, a random turn after the first, with every turn before it as its context.
  A metric that needs references reads DailyDialog++ dev instead (DailyDialog contexts with five human replies
  each; DailyDialog itself has one reply per context): its first ``n`` contexts, each one's second human reply
  scored against the first as its reference.
* **dialogue level**, :func:`human_dialogues`: ``n`` DailyDialog validation dialogues, whole.

Why 1,000 items: a stored percentile is then off by at most about sqrt(0.25 / 1000) (the binomial standard error
at the median), finer than the scale is meant to be read, and a fit of the slowest learned metric stays within
minutes on a CPU.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ..benchmarks import load_benchmark
from ..errors import InputError
from ..schema import normalize_dialogues
from ..scoring import Scorer
from ..scoring.calibration import EmpiricalCdf
from ..scoring.scales import DEFAULT_ITEMS, LEVELS, write_scale

__all__ = ["HumanSample", "fit_scale", "human_dialogues", "human_replies"]


@dataclass(frozen=True)
class HumanSample:
    """What a scale is fitted on: the scorer inputs and a description of where they come from."""

    source: str
    contexts: list | None = None
    responses: list | None = None
    references: list | None = None
    dialogues: list | None = None

    def __len__(self) -> int:
        return len(self.dialogues if self.dialogues is not None else self.responses)


def _dailydialog(data_dir, min_turns: int) -> list[list[str]]:
    ds = load_benchmark("dailydialog", split="validation", data_dir=data_dir)
    return [list(r["utterances"]) for r in ds if len(r["utterances"]) >= min_turns]


def _choose(pool_size: int, n: int, rng: np.random.Generator, what: str) -> list[int]:
    if not isinstance(n, int) or n < 2:
        raise InputError(f"{what}: needs at least 2 items, got {n!r}")
    if n > pool_size:
        raise InputError(f"{what}: {n} items asked for, the split has {pool_size} that qualify")
    return sorted(rng.choice(pool_size, size=n, replace=False).tolist())


def human_replies(data_dir: str | os.PathLike | None = None, *, n: int = DEFAULT_ITEMS, seed: int = 0,
                  references: bool = False) -> HumanSample:
    """The turn-level sample (module docstring); ``references=True`` for a metric that needs them."""
    rng = np.random.default_rng(seed)
    if references:
        ds = load_benchmark("dailydialog_pp", split="validation", data_dir=data_dir)
        if n > len(ds):
            raise InputError(f"human replies with references: {n} items asked for, DailyDialog++ dev has {len(ds)}")
        rows = ds.select(range(n))
        return HumanSample(f"dailydialog_pp/validation: the second human reply of the first {n} contexts, the first "
                           "as reference", contexts=[list(r["context"]) for r in rows],
                           responses=[r["positive_responses"][1] for r in rows],
                           references=[[r["positive_responses"][0]] for r in rows])
    pool = _dailydialog(data_dir, 2)
    contexts, responses = [], []
    for i in _choose(len(pool), n, rng, "human replies"):
        t = int(rng.integers(1, len(pool[i])))
        contexts.append(pool[i][:t])
        responses.append(pool[i][t])
    return HumanSample(f"dailydialog/validation: one human reply (a random turn after the first) of each of {n} "
                       f"dialogues, seed {seed}", contexts=contexts, responses=responses)


def human_dialogues(data_dir: str | os.PathLike | None = None, *, n: int = DEFAULT_ITEMS, seed: int = 0
                    ) -> HumanSample:
    """The dialogue-level sample (module docstring)."""
    rng = np.random.default_rng(seed)
    pool = _dailydialog(data_dir, 2)
    chosen = [pool[i] for i in _choose(len(pool), n, rng, "human dialogues")]
    normalize_dialogues(chosen, min_turns=2)  # a bad dialogue is named before any scoring
    return HumanSample(f"dailydialog/validation: {n} whole dialogues, seed {seed}", dialogues=chosen)


def fit_scale(scorer: Scorer, level: str = "turn", *, data_dir: str | os.PathLike | None = None,
              n: int = DEFAULT_ITEMS, seed: int = 0, batch_size: int = 32, command: str,
              progress_bar: bool | None = None, store: bool = True) -> EmpiricalCdf:
    """Score the human sample of ``level`` with ``scorer`` (raw scale), fit its map and, with ``store``, write it
    into the package's scales file under the scorer's fingerprint with ``command``, the command that made it."""
    if level not in LEVELS:
        raise InputError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    if level == "dialogue":
        if scorer.requires_references:
            raise InputError(f"metric '{scorer.name}' needs references and has no dialogue-level score to calibrate")
        sample = human_dialogues(data_dir, n=n, seed=seed)
        out = scorer.score_dialogues(dialogues=sample.dialogues, batch_size=batch_size, progress_bar=progress_bar)
    else:
        sample = human_replies(data_dir, n=n, seed=seed, references=scorer.requires_references)
        out = scorer.score(contexts=sample.contexts, responses=sample.responses, references=sample.references,
                           batch_size=batch_size, progress_bar=progress_bar)
    cdf = EmpiricalCdf.fit(out.scores, source=sample.source, member=scorer.name)
    if store:
        write_scale(scorer.name, scorer.fingerprint(), level, cdf, command)
    return cdf
