"""From the data directory to what the combiners are fitted and measured on, shared by ``dialeval train ensemble``
and ``dialeval ensemble loo``.

1. :func:`build_jobs`: the item sets (:mod:`.sets`) and which members score each: every member the calibration set
   of its kind (turn members that read no reference: DailyDialog validation; members that read one: DailyDialog++
   dev; dialogue forms: DailyDialog validation dialogues), every human-rated set it can score (a member that
   reads references only the sets that have them), and the sanity check set (:func:`~.sets.sanity_check_set`;
   the turn members that read no reference), on which :mod:`.checks` measures the combiners;
2. :func:`prepare`: the members' raw scores through the cache (:func:`~.collect.collect_scores`) and each member's
   fixed calibration (:func:`fit_calibrations`), with how well it tells the calibration set's real replies from
   random ones (AUC; the sanity of the scale);
3. :func:`member_set_data`: for one member set, the training :class:`~.combiners.Unit` of every training set it can
   score (calibrated scores, human target; items without a numeric target left out and counted) and the held-out
   :class:`Cell` of every held-out set it can score.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ...errors import UnknownNameError
from ...ranking import auc
from .cache import MemberScoreCache
from ...scoring.calibration import DEFAULT_POINTS, EmpiricalCdf
from .collect import Job, ScoreTables, collect_scores
from .combiners import Unit
from .roster import CONTROLS, MEMBERS, MemberSpec, dialogue_members
from .sets import (
    HELD_OUT,
    HumanSet,
    ItemSet,
    RadeSplit,
    dialogue_calibration,
    load_human_set,
    reference_calibration,
    sanity_check_set,
    training_sets,
    turn_calibration,
)

__all__ = ["Cell", "FitSettings", "MemberSetData", "Prepared", "build_jobs", "fit_calibrations", "member_set_data",
           "prepare"]


@dataclass(frozen=True)
class FitSettings:
    """What decides the calibration and training items (recorded in the checkpoint)."""

    calibration_dialogues: int = 500
    reference_contexts: int = 500
    dialogue_calibration_dialogues: int = 100
    points: int = DEFAULT_POINTS
    rade_split: RadeSplit = "validation"
    seed: int = 0


@dataclass
class Prepared:
    """Raw scores, calibrations and the human sets of one run."""

    tables: ScoreTables
    turn_calibration: dict[str, EmpiricalCdf]
    dialogue_calibration: dict[str, EmpiricalCdf]
    #: per calibrated member: AUC of real over random replies (turn) or real over shuffled dialogues (dialogue)
    calibration_auc: dict[str, dict[str, float]]
    training: tuple[HumanSet, ...]
    held_out: tuple[HumanSet, ...]
    settings: FitSettings
    specs: dict[str, MemberSpec]
    calibration_sets: dict[str, str] = field(default_factory=dict)
    #: the key of the sanity check set in ``tables`` (None: not prepared)
    check_set: str | None = None


def _can_score(spec: MemberSpec, item_set: ItemSet) -> bool:
    if item_set.level == "dialogue":
        return "dialogue" in spec.levels
    return "turn" in spec.levels and (not spec.reads_references or item_set.has_references)


def build_jobs(specs: Sequence[MemberSpec], settings: FitSettings, data_dir: str | os.PathLike | None = None
               ) -> tuple[list[Job], dict[str, str], str]:
    """The jobs (module docstring, step 1), per kind of calibration (``turn``, ``reference``, ``dialogue``) the key
    of its set, and the key of the sanity check set."""
    calibrations = {
        "turn": turn_calibration(data_dir, dialogues=settings.calibration_dialogues, seed=settings.seed),
        "dialogue": dialogue_calibration(data_dir, dialogues=settings.dialogue_calibration_dialogues,
                                         seed=settings.seed),
    }
    if any(s.reads_references and "turn" in s.levels for s in specs):
        calibrations["reference"] = reference_calibration(data_dir, contexts=settings.reference_contexts)
    jobs = []
    turn = [s.name for s in specs if "turn" in s.levels and not s.reads_references]
    reference = [s.name for s in specs if "turn" in s.levels and s.reads_references]
    jobs.append(Job(calibrations["turn"], tuple(turn)))
    if reference:
        jobs.append(Job(calibrations["reference"], tuple(reference)))
    jobs.append(Job(calibrations["dialogue"], tuple(s.name for s in specs if "dialogue" in s.levels)))
    human = {h.key: h for h in (*training_sets(settings.rade_split), *HELD_OUT)}
    for h in human.values():
        item_set = load_human_set(h, data_dir)
        jobs.append(Job(item_set, tuple(s.name for s in specs if _can_score(s, item_set))))
    checks = sanity_check_set(data_dir)
    jobs.append(Job(checks, tuple(s.name for s in specs if _can_score(s, checks))))
    return [j for j in jobs if j.members], {kind: s.key for kind, s in calibrations.items()}, checks.key


def fit_calibrations(tables: ScoreTables, specs: Sequence[MemberSpec], calibration_sets: Mapping[str, str], *,
                     points: int = DEFAULT_POINTS
                     ) -> tuple[dict[str, EmpiricalCdf], dict[str, EmpiricalCdf], dict[str, dict[str, float]]]:
    """Each member's turn-level and dialogue-level :class:`EmpiricalCdf` (module docstring, step 2) and its AUC of
    positives over negatives on the calibration set."""
    turn, dialogue, aucs = {}, {}, {}
    for spec in specs:
        for level, kind in (("turn", "reference" if spec.reads_references else "turn"), ("dialogue", "dialogue")):
            if level not in spec.levels:
                continue
            key = calibration_sets[kind]
            item_set = tables.sets[key]
            raw = tables.raw(key, spec.name)
            cdf = EmpiricalCdf.fit(raw, source=key, points=points, member=spec.name)
            (turn if level == "turn" else dialogue)[spec.name] = cdf
            kinds = np.asarray(item_set.kinds)
            aucs.setdefault(spec.name, {})[level] = auc(raw[kinds == "positive"], raw[kinds == "negative"])
    return turn, dialogue, aucs


def prepare(member_names: Sequence[str], settings: FitSettings, *, data_dir: str | os.PathLike | None = None,
            cache: MemberScoreCache, device=None, batch_size: int = 32, recompute: bool = False,
            progress_bar: bool | None = None, echo: Callable[[str], None] = lambda line: None,
            specs: Mapping[str, MemberSpec] = MEMBERS) -> Prepared:
    """Steps 1 and 2 of the module docstring for the members ``member_names`` (names of ``specs``)."""
    unknown = [m for m in member_names if m not in specs]
    if unknown:
        raise UnknownNameError("ensemble member", unknown[0], list(specs))
    names = list(dict.fromkeys(member_names))
    names += [m for m in dialogue_members(names, specs) if m not in names]  # e.g. turn_count beside length
    chosen = [specs[m] for m in names]
    jobs, calibration_sets, check_set = build_jobs(chosen, settings, data_dir)
    tables = collect_scores(chosen, jobs, cache, device=device, batch_size=batch_size, recompute=recompute,
                            progress_bar=progress_bar, echo=echo)
    turn, dialogue, aucs = fit_calibrations(tables, chosen, calibration_sets, points=settings.points)
    return Prepared(tables, turn, dialogue, aucs, training_sets(settings.rade_split), HELD_OUT, settings,
                    {s.name: s for s in chosen}, calibration_sets, check_set)


# -- one member set's training units and held-out cells -----------------------------------------------------------
@dataclass(frozen=True)
class Cell:
    """A held-out set for one member set: its raw member scores (``raw[member]``, the dialogue forms at dialogue
    level) and human target over the items with a numeric target."""

    key: str
    level: str
    group: str
    in_domain: tuple[str, ...]
    human: np.ndarray
    raw: Mapping[str, np.ndarray]
    n_missing_human: int


@dataclass
class MemberSetData:
    """One member set's training units (with their leave-out groups) and held-out cells."""

    members: tuple[str, ...]
    dialogue_members: tuple[str, ...]
    units: list[tuple[str, Unit]]
    cells: list[Cell]
    #: training units and cells the member set cannot score, and why
    left_out: dict[str, str]
    missing_human: dict[str, int]
    #: the controls the member set names: exempt from the member rule (:func:`~.combiners.admitted`)
    pinned: tuple[str, ...] = ()


def _scorable(prepared: Prepared, members: Sequence[str], key: str, level: str) -> str | None:
    """Why the member set cannot score set ``key`` (None: it can)."""
    item_set = prepared.tables.sets[key]
    if level == "dialogue":
        lacking = [m for m in members if "dialogue" not in prepared.specs[m].levels]
        return f"{', '.join(lacking)} has no dialogue-level score" if lacking else None
    if not item_set.has_references and any(prepared.specs[m].reads_references for m in members):
        return "it has no references and the member set reads them"
    return None


def member_set_data(prepared: Prepared, members: Sequence[str]) -> MemberSetData:
    """Step 3 of the module docstring for the member set ``members`` (turn-level member names)."""
    members = tuple(members)
    missing = [m for m in members if m not in prepared.specs]
    if missing:
        raise KeyError(f"member(s) {', '.join(missing)} were not prepared")
    d_members = dialogue_members(members, prepared.specs)
    units, cells, left_out, missing_human = [], [], {}, {}

    def rated(key: str, level: str):
        """(the set's items, the mask of those with a human rating), or None where the members cannot score it."""
        why = _scorable(prepared, members, key, level)
        if why:
            left_out[key] = why
            return None
        item_set = prepared.tables.sets[key]
        keep = np.isfinite(item_set.human)
        missing_human[key] = int((~keep).sum())
        return item_set, keep

    for h in prepared.training:
        if (found := rated(h.key, "turn")) is None:
            continue
        item_set, keep = found
        X = np.column_stack([prepared.turn_calibration[m](prepared.tables.raw(h.key, m))[keep] for m in members])
        units.append((h.group, Unit(h.key, members, X, item_set.human[keep])))
    for h in prepared.held_out:
        if (found := rated(h.key, h.level)) is None:
            continue
        item_set, keep = found
        names = d_members if h.level == "dialogue" else members
        raw = {m: prepared.tables.raw(h.key, m)[keep] for m in names}
        cells.append(Cell(h.key, h.level, h.group, tuple(m for m in h.in_domain if m in members),
                          item_set.human[keep], raw, int((~keep).sum())))
    return MemberSetData(members, d_members, units, cells, left_out, missing_human,
                         tuple(m for m in members if m in CONTROLS))
