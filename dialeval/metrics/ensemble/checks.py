"""The sanity bar a combiner must clear before the leave-one-out may choose it.

The leave-one-out ranks the candidates by how they agree with human ratings, but no human-rated set holds a reply
that parrots the context or a gold reply with its words shuffled, so it cannot see a combination that prefers them.
The issue's bar is about those: on every perturbation of ``sanity_turn`` where a member of the set tells the gold
reply from the perturbed one at least :data:`BAR` of the time, the combination must too.

It is measured on ``sanity_turn``'s validation split (:func:`~.sets.sanity_check_set`; built from DailyDialog
validation), never on its test split, which the card reports. For each candidate, refitted on every training set,
the accuracy per perturbation is the share of rows whose gold scores above the perturbed reply (ties count one
half, :func:`dialeval.ranking.win_share`), as ``dialeval benchmark`` computes it. A candidate passes when its
accuracy reaches :data:`BAR` on every perturbation where some member's does.

A member set with a member that reads references cannot score the check set (its items have none); its candidates
are not checked, and the report says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict

import numpy as np

from ...ranking import win_share
from .combiners import Combiner
from .pipeline import Prepared

__all__ = ["BAR", "SanityCheck", "check_accuracies", "sanity_check"]

#: the share of rows on which the gold must beat its perturbed copy (the issue's 0.85)
BAR = 0.85


class SanityCheck(TypedDict, total=False):
    """What :func:`sanity_check` reports (stored as JSON in the fit's report and the checkpoint's config).
    Without a check set for the members only ``applies`` (False), ``why``, ``bar`` and ``passing`` are set."""

    applies: bool
    why: str  # why the bar does not apply
    set: str  # the check set's key
    bar: float
    perturbations: list[str]
    required: list[str]  # the perturbations some member tells apart at the bar
    members: dict[str, dict[str, float]]  # member -> perturbation -> accuracy
    combiners: dict[str, dict[str, float]]  # combiner -> perturbation -> accuracy
    failing: dict[str, list[str]]  # combiner -> the required perturbations it misses
    passing: list[str]  # the combiners that clear the bar


def check_accuracies(scores: np.ndarray, kinds: Sequence[str]) -> dict[str, float]:
    """Per perturbation, the share of rows whose gold scores above it (ties one half); ``kinds`` as in the check
    set: each row's ``gold`` item first, then its perturbed items."""
    kinds = np.asarray(kinds)
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != kinds.shape:
        raise ValueError(f"{scores.size} scores for {kinds.size} check items")
    starts = np.flatnonzero(kinds == "gold")
    if starts.size == 0 or starts[0] != 0:
        raise ValueError("the check set must start each row with its gold item")
    row = np.cumsum(kinds == "gold") - 1  # the row of every item
    gold = scores[starts][row]
    out: dict[str, float] = {}
    for kind in dict.fromkeys(k for k in kinds.tolist() if k != "gold"):
        mask = kinds == kind
        out[kind] = float(np.mean(win_share(gold[mask], scores[mask])))
    return out


def sanity_check(prepared: Prepared, members: Sequence[str], combiners: Mapping[str, Combiner]) -> SanityCheck:
    """Each member's and each combiner's accuracies on the check set, the perturbations the bar applies to and the
    combiners that pass (module docstring). Without a check set for these members, ``applies`` is False and every
    combiner counts as passing."""
    key = prepared.check_set
    reads = [m for m in members if prepared.specs[m].reads_references]
    if key is None or reads:
        why = (f"{', '.join(reads)} reads references, which the check set has none of" if reads
               else "no check set was prepared")
        return {"applies": False, "why": why, "bar": BAR, "passing": list(combiners)}
    kinds = prepared.tables.sets[key].kinds
    raw = {m: prepared.tables.raw(key, m) for m in members}
    member_acc = {m: check_accuracies(raw[m], kinds) for m in members}
    calibrated = {m: prepared.turn_calibration[m](raw[m]) for m in members}
    combiner_acc = {name: check_accuracies(c.apply(calibrated), kinds) for name, c in combiners.items()}
    perturbations = list(next(iter(member_acc.values())))
    required = [k for k in perturbations if any(acc[k] >= BAR for acc in member_acc.values())]
    failing = {name: [k for k in required if acc[k] < BAR] for name, acc in combiner_acc.items()}
    return {"applies": True, "set": key, "bar": BAR, "perturbations": perturbations, "required": required,
            "members": member_acc, "combiners": combiner_acc, "failing": failing,
            "passing": [name for name, f in failing.items() if not f]}
