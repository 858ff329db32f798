"""The shipped combination: for each member set, the candidate the leave-one-out chose, refitted on every training
set, and the checkpoint config that holds it (:class:`~.checkpoint.EnsembleConfig`).

:func:`fit_member_set` fits every candidate on all the set's training units, on the members the member rule admits
there (:func:`~.combiners.admitted`; a setting chosen by leave-one-set-out over all of them), checks each refitted
candidate against the sanity bar (:func:`~.checks.sanity_check`, with the admitted members), runs the leave-one-out
(:func:`~.loo.leave_one_out`) and ships the candidate it chose among those that cleared the bar (among all of them
where none did, which the record says). The shipped set's members are the admitted ones (the record keeps who the
rule left out and why); the dialogue-level combiner is the turn-level one carried to their dialogue forms
(:func:`~.members.dialogue_combiner`) where every admitted member has one. :func:`build_config` puts the member sets,
the members (with their identities at fitting time) and their calibrations in one config.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from .checkpoint import EnsembleConfig, MemberSetConfig
from .checks import sanity_check
from .combiners import CANDIDATES, Combiner, admitted, fit_candidate
from .loo import LooReport, leave_one_out
from .members import dialogue_combiner
from .roster import dialogue_members
from .pipeline import MemberSetData, Prepared, member_set_data

__all__ = ["build_config", "fit_member_set", "measure_member_set", "member_costs"]


def measure_member_set(prepared: Prepared, name: str, members: Sequence[str], *,
                       candidates: Sequence[str] = CANDIDATES, n_boot: int = 1000, seed: int = 0
                       ) -> tuple[LooReport, dict[str, Combiner], MemberSetData]:
    """Every candidate refitted on all training units and checked against the sanity bar, then the leave-one-out,
    which chooses among those that cleared it (module docstring): the report (its ``checks`` filled), the refitted
    candidates and the member set's data."""
    data = member_set_data(prepared, members)
    units = [u for _, u in data.units]
    refitted = {kind: fit_candidate(kind, units, pinned=data.pinned) for kind in candidates}
    checks = sanity_check(prepared, admitted(units, data.pinned)[0], refitted)
    report = leave_one_out(data, prepared.turn_calibration, prepared.dialogue_calibration, member_set=name,
                           candidates=candidates, admissible=checks["passing"] or None, checks=checks,
                           n_boot=n_boot, seed=seed, specs=prepared.specs)
    return report, refitted, data


def fit_member_set(prepared: Prepared, name: str, members: Sequence[str], *, candidates: Sequence[str] = CANDIDATES,
                   n_boot: int = 1000, seed: int = 0) -> tuple[MemberSetConfig, LooReport]:
    """One member set's leave-one-out report and its shipped combiners (module docstring)."""
    report, refitted, data = measure_member_set(prepared, name, members, candidates=candidates, n_boot=n_boot,
                                                seed=seed)
    units = [u for _, u in data.units]
    shipped, excluded = admitted(units, data.pinned)
    turn = refitted[report.chosen]
    has_dialogue = all("dialogue" in prepared.specs[m].levels for m in shipped)
    dialogue = dialogue_combiner(turn, prepared.specs) if has_dialogue else None
    s = report.summary
    extra = {
        "training_sets": [u.name for u in units],
        "left_out": data.left_out,
        "pool": list(data.members),
        "excluded": excluded,
        "loo": {"chosen": report.chosen, "n_sets": s["n_sets"], "candidate_mean": s["candidate_mean"],
                "above_best_member": s["above_best_member"],
                "candidate_mean_out_of_domain": s["candidate_mean_out_of_domain"], "member_mean": s["member_mean"],
                "best_member": s["best_member"], "margin_over_best_member": s["margin_over_best_member"],
                "wins": s["wins"]},
        "checks": _checks_record(report),
    }
    return MemberSetConfig(name, shipped, dialogue_members(shipped, prepared.specs) if has_dialogue else (),
                           any(prepared.specs[m].reads_references for m in shipped), turn, dialogue, extra), report


def _checks_record(report: LooReport) -> dict[str, Any]:
    """What the checkpoint keeps of the sanity bar: whether it applied, the chosen combiner's accuracies and which
    candidates cleared it."""
    c = report.checks
    if not c.get("applies"):
        return {"applies": False, "why": c.get("why")}
    return {"applies": True, "set": c["set"], "bar": c["bar"], "required": c["required"], "passing": c["passing"],
            "met": report.chosen in c["passing"], "chosen_accuracy": c["combiners"][report.chosen]}


def member_costs(prepared: Prepared) -> dict[str, dict[str, Any]]:
    """Per member: items/s at turn level and dialogues/s, over the sets it scored (measured when each was scored)."""
    return {name: {"turn_items_per_second": run.items_per_second("turn"),
                   "dialogues_per_second": run.items_per_second("dialogue"),
                   "seconds": round(sum(run.seconds.values()), 1)}
            for name, run in prepared.tables.members.items()}


def build_config(prepared: Prepared, member_sets: Mapping[str, MemberSetConfig], *, default: str,
                 with_references: Mapping[str, str] | None = None) -> EnsembleConfig:
    """The checkpoint config of the fitted ``member_sets`` (``with_references``: base set -> its counterpart with
    RADE, recorded on the base set). A counterpart in which the member rule admitted no member that reads references
    would score exactly as its base set: it is not shipped, and the base set records why
    (``references_left_out``), so that ``use_references=True`` is an error that says so."""
    sets = dict(member_sets)
    for base, counterpart in (with_references or {}).items():
        if base not in sets or counterpart not in sets:
            raise KeyError(f"with_references names {base!r} -> {counterpart!r}; fitted sets: {', '.join(sets)}")
        b, c = sets[base], sets[counterpart]
        if c.reads_references:
            link = {"with_references": counterpart}
        else:
            left_out = {m: why for m, why in c.extra.get("excluded", {}).items() if prepared.specs[m].reads_references}
            link = {"references_left_out": {"set": counterpart, "members": left_out}}
            del sets[counterpart]
        sets[base] = MemberSetConfig(b.name, b.members, b.dialogue_members, b.reads_references, b.turn, b.dialogue,
                                     {**b.extra, **link})
    used = list(dict.fromkeys(m for s in sets.values() for m in (*s.members, *s.dialogue_members)))
    turn_used = {m for s in sets.values() for m in s.members}
    dialogue_used = {m for s in sets.values() for m in s.dialogue_members}
    record = {
        "calibration": {"sets": dict(prepared.calibration_sets),
                        "auc_real_over_random": {m: prepared.calibration_auc[m] for m in used}},
        "training": {"settings": asdict(prepared.settings),
                     "held_out": [h.key for h in prepared.held_out],
                     "training_sets": [h.key for h in prepared.training]},
        "costs": {m: c for m, c in member_costs(prepared).items() if m in used},
    }
    return EnsembleConfig(
        members={m: prepared.specs[m] for m in used},
        identities={m: prepared.tables.members[m].identity for m in used},
        turn_calibration={m: c for m, c in prepared.turn_calibration.items() if m in turn_used},
        dialogue_calibration={m: c for m, c in prepared.dialogue_calibration.items() if m in dialogue_used},
        member_sets=sets, default_member_set=default, record=record)
