"""PONE's label filter for augmented positives (the ``enhance`` stage of the released code).

Augmented positives (EDA edits or generated responses) are not all appropriate responses. Every few epochs the current
model (a frozen copy: the original's ``target_net``) scores every augmented pair, and each pair gets a state:

* score >= 1 - f: kept as a positive (label 1);
* score <= f: kept as a *negative* (label 0);
* otherwise (fuzzy): dropped from training (``fuzzy_process="drop"``, default, as the released configurations) or
  kept as a positive (``"change"``).

``f`` is ``fuzzy_threshold`` (0.05 in the released PONE configuration). Labels are hard (binarised at 0.5 among the
confident pairs), as the original. Before the first round every augmented pair counts as a positive (the first stage
trained on them as such), so round 0 reports how many the filter changed.

The rounds repeat until the states stop changing (at most ``tolerance`` pairs change in a round) or ``max_rounds``
rounds were made; the labels are then frozen for the rest of training. The original relabelled every ``step`` epochs
until training stopped; the stopping rule is this implementation's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

POSITIVE, NEGATIVE, DROPPED = 1, 0, -1
FUZZY_PROCESSES = ("drop", "change")


@dataclass(frozen=True)
class LabelFilterRound:
    round: int
    changed: int
    positives: int
    negatives: int
    dropped: int
    converged: bool
    reason: str  # "stable", "max_rounds" or "" (not converged)

    def to_dict(self) -> dict:
        return asdict(self)


class LabelFilter:
    """State of the augmented pairs' labels across relabelling rounds."""

    def __init__(self, n: int, *, fuzzy_threshold: float = 0.05, fuzzy_process: str = "drop", max_rounds: int = 5,
                 tolerance: int = 0) -> None:
        if not 0.0 < fuzzy_threshold <= 0.5:
            raise ValueError(f"fuzzy_threshold must be in (0, 0.5], got {fuzzy_threshold}")
        if fuzzy_process not in FUZZY_PROCESSES:
            raise ValueError(f"fuzzy_process must be one of {FUZZY_PROCESSES}, got {fuzzy_process!r}")
        if max_rounds < 1:
            raise ValueError(f"max_rounds must be >= 1, got {max_rounds}")
        self.fuzzy_threshold = float(fuzzy_threshold)
        self.fuzzy_process = fuzzy_process
        self.max_rounds = int(max_rounds)
        self.tolerance = int(tolerance)
        self.labels = np.full(n, POSITIVE, dtype=np.int8)
        self.rounds: list[LabelFilterRound] = []

    @property
    def converged(self) -> bool:
        return bool(self.rounds) and self.rounds[-1].converged

    def states(self, scores: np.ndarray) -> np.ndarray:
        """The state (1 positive, 0 negative, -1 dropped) that scores in [0, 1] give."""
        scores = np.asarray(scores, dtype=np.float64)
        if scores.shape != self.labels.shape:
            raise ValueError(f"expected {self.labels.size} scores, got shape {scores.shape}")
        if not np.all(np.isfinite(scores)) or scores.min() < 0 or scores.max() > 1:
            raise ValueError("scores must be finite probabilities in [0, 1]")
        fuzzy_state = DROPPED if self.fuzzy_process == "drop" else POSITIVE
        out = np.full(scores.shape, fuzzy_state, dtype=np.int8)
        out[scores >= 1.0 - self.fuzzy_threshold] = POSITIVE
        out[scores <= self.fuzzy_threshold] = NEGATIVE
        return out

    def relabel(self, scores: np.ndarray) -> LabelFilterRound:
        """One round: new states from ``scores``; returns the round's counts (the filter must not have converged)."""
        if self.converged:
            raise RuntimeError("the label filter has converged; its labels are frozen")
        new = self.states(scores)
        return self._commit(new)

    def restore(self, labels: np.ndarray) -> LabelFilterRound:
        """Replay a saved round (resuming): same bookkeeping as :meth:`relabel`."""
        labels = np.asarray(labels, dtype=np.int8)
        if labels.shape != self.labels.shape or not np.isin(labels, (POSITIVE, NEGATIVE, DROPPED)).all():
            raise ValueError(f"saved labels do not fit this filter ({labels.shape} vs {self.labels.shape})")
        return self._commit(labels)

    def _commit(self, new: np.ndarray) -> LabelFilterRound:
        changed = int((new != self.labels).sum())
        self.labels = new
        number = len(self.rounds)
        stable = changed <= self.tolerance
        last = number + 1 >= self.max_rounds
        rnd = LabelFilterRound(
            round=number, changed=changed, positives=int((new == POSITIVE).sum()),
            negatives=int((new == NEGATIVE).sum()), dropped=int((new == DROPPED).sum()),
            converged=stable or last, reason="stable" if stable else ("max_rounds" if last else ""),
        )
        self.rounds.append(rnd)
        return rnd

    def training_set(self) -> tuple[np.ndarray, np.ndarray]:
        """(indices of the kept augmented pairs, their float32 labels)."""
        kept = np.flatnonzero(self.labels != DROPPED)
        return kept, self.labels[kept].astype(np.float32)
