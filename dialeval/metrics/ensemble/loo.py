"""Leave-one-benchmark-out: how the combiner candidates do on sets they never saw, against every member.

For each held-out :class:`~.pipeline.Cell`, every candidate (:data:`~.combiners.CANDIDATES`) is fitted on the
training units whose group differs from the cell's (:func:`~.combiners.fit_candidate`: its setting chosen by
leave-one-set-out inside those units only), then scores the cell's items from their calibrated member scores; a
dialogue-level cell uses the turn-level fit carried to the dialogue members (:func:`~.members.dialogue_combiner`).
Nothing of the held-out cell's group is read by the fit: the calibrations come from DailyDialog, not from the human
sets.

Every fit applies the member rule to its fold's training sets (:func:`~.combiners.admitted`), so a member can be
in one fold's combination and out of another's; each row records who the rule left out and why.

One figure per (cell, column): ``(Pearson + Spearman) / 2`` with the cell's human target; a member's column is its
raw score (as the member alone is used). The report (:class:`LooReport`) holds, per candidate, the mean over the
cells, the mean over the cells where no member is in-domain, and on how many cells it is above the cell's best member
(``above_best_member``: the user's worst case, the member they would have done better to pick). The ``chosen``
candidate is, among the admissible ones (those that cleared the sanity bar of :mod:`.checks`, all where None), the
one above the best member on the most cells, the higher mean breaking a tie (issue 49: a combination earns its place
where no single member would have served better, not by its mean). The report also holds how many cells the chosen
one wins against each member, and per cell a paired bootstrap 95% CI of (chosen - the cell's best member), from
:func:`dialeval.evaluation.stats.relative_average_gain` on that one cell.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...evaluation.stats import relative_average_gain
from ...scoring.calibration import EmpiricalCdf
from .combiners import CANDIDATES, Combiner, admitted, agreement, fit_candidate
from .members import dialogue_combiner
from .pipeline import Cell, MemberSetData
from .roster import MEMBERS, MemberSpec

__all__ = ["LooReport", "cell_scores", "choose", "leave_one_out"]


def cell_scores(combiner: Combiner, cell: Cell, turn_cal: Mapping[str, EmpiricalCdf],
                dialogue_cal: Mapping[str, EmpiricalCdf], specs: Mapping[str, MemberSpec] = MEMBERS) -> np.ndarray:
    """The combined score of each item of ``cell`` (a turn-level combiner; carried to dialogue members at dialogue
    level)."""
    if cell.level == "dialogue":
        combiner = dialogue_combiner(combiner, specs)
        calibration = dialogue_cal
    else:
        calibration = turn_cal
    return combiner.apply({m: calibration[m](cell.raw[m]) for m in combiner.weights})


@dataclass
class LooReport:
    """What :func:`leave_one_out` measured (module docstring); :meth:`to_json` for the card."""

    member_set: str
    members: tuple[str, ...]
    columns: tuple[str, ...]
    candidates: tuple[str, ...]
    rows: list[dict[str, Any]]
    chosen: str
    summary: dict[str, Any]
    left_out: dict[str, str] = field(default_factory=dict)
    #: the sanity bar's measurements of the refitted candidates (:func:`~.checks.sanity_check`; empty: not run)
    checks: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"member_set": self.member_set, "members": list(self.members), "columns": list(self.columns),
                "candidates": list(self.candidates), "chosen": self.chosen, "rows": self.rows,
                "summary": self.summary, "left_out": self.left_out, "checks": self.checks}


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None and np.isfinite(v)]
    return float(np.mean(kept)) if kept else None


def choose(eligible: Sequence[str], above_best_member: Mapping[str, int],
           means: Mapping[str, float | None]) -> str:
    """The selection criterion (module docstring): most sets above the set's best member, then the higher mean; the
    first of ``eligible`` where both tie."""
    return max(eligible, key=lambda k: (above_best_member[k], -np.inf if means[k] is None else means[k]))


def leave_one_out(data: MemberSetData, turn_cal: Mapping[str, EmpiricalCdf],
                  dialogue_cal: Mapping[str, EmpiricalCdf], *, member_set: str = "custom",
                  candidates: Sequence[str] = CANDIDATES, admissible: Sequence[str] | None = None,
                  checks: Mapping[str, Any] | None = None, n_boot: int = 1000, seed: int = 0,
                  specs: Mapping[str, MemberSpec] = MEMBERS) -> LooReport:
    """The leave-one-out report of one member set (module docstring); ``checks``, the sanity bar's measurements
    that gave ``admissible`` (:func:`~.checks.sanity_check`), travel with the report."""
    if not data.cells:
        raise ValueError(f"member set {member_set}: no held-out set it can score")
    eligible = tuple(candidates) if admissible is None else tuple(k for k in candidates if k in admissible)
    if not eligible:
        raise ValueError(f"member set {member_set}: no admissible candidate among {', '.join(candidates)}")
    columns = tuple(dict.fromkeys([*data.members, *data.dialogue_members]))
    rows: list[dict[str, Any]] = []
    combined: list[dict[str, np.ndarray]] = []
    for cell in data.cells:
        fold = [u for group, u in data.units if group != cell.group]
        row: dict[str, Any] = {
            "set": cell.key, "level": cell.level, "n": int(len(cell.human)), "n_missing_human": cell.n_missing_human,
            "in_domain": list(cell.in_domain), "training_sets": [u.name for u in fold],
            "members": {m: (agreement(cell.raw[m], cell.human) if m in cell.raw else None) for m in columns},
            "excluded": admitted(fold, data.pinned)[1], "candidates": {}, "fits": {},
        }
        present = {m: v for m, v in row["members"].items() if v is not None and np.isfinite(v)}
        row["best_member"] = max(present, key=present.get)
        scores = {}
        for kind in candidates:
            fitted = fit_candidate(kind, fold, pinned=data.pinned)
            scores[kind] = cell_scores(fitted, cell, turn_cal, dialogue_cal, specs)
            row["candidates"][kind] = agreement(scores[kind], cell.human)
            row["fits"][kind] = fitted.to_json()
        rows.append(row)
        combined.append(scores)
    means = {k: _mean([r["candidates"][k] for r in rows]) for k in candidates}
    above = {k: sum(1 for r in rows if r["candidates"][k] > r["members"][r["best_member"]]) for k in candidates}
    chosen = choose(eligible, above, means)
    out_of_domain = [r for r in rows if not r["in_domain"]]
    member_means = {m: _mean([r["members"][m] for r in rows]) for m in columns}
    member_cells = {m: sum(r["members"][m] is not None for r in rows) for m in columns}
    for row, cell, scores in zip(rows, data.cells, combined):
        gain = relative_average_gain([(scores[chosen], cell.raw[row["best_member"]], cell.human)], n_boot=n_boot,
                                     seed=seed)
        row["versus_best_member"] = {"difference": gain["difference"], "ci_low": gain["difference_ci_low"],
                                     "ci_high": gain["difference_ci_high"], "p_bootstrap": gain["p_bootstrap"]}
    wins = {m: {"wins": sum(1 for r in rows if r["members"][m] is not None
                            and r["candidates"][chosen] > r["members"][m]),
                "sets": member_cells[m]} for m in columns}
    complete = {m: v for m, v in member_means.items() if member_cells[m] == len(rows) and v is not None}
    best_member = max(complete, key=complete.get) if complete else None
    summary = {
        "n_sets": len(rows),
        "candidate_mean": means,
        "above_best_member": above,
        "admissible": list(eligible),
        "candidate_mean_out_of_domain": {k: _mean([r["candidates"][k] for r in out_of_domain]) for k in candidates},
        "member_mean": member_means,
        "member_mean_out_of_domain": {m: _mean([r["members"][m] for r in out_of_domain]) for m in columns},
        "member_sets_scored": member_cells,
        "n_sets_out_of_domain": len(out_of_domain),
        "chosen": chosen,
        "wins": wins,
        "best_member": best_member,
        "margin_over_best_member": (means[chosen] - complete[best_member]) if best_member else None,
        "fewest_wins": min((w["wins"] for m, w in wins.items() if member_cells[m] == len(rows)), default=None),
    }
    return LooReport(member_set, data.members, columns, tuple(candidates), rows, chosen, summary, data.left_out,
                     dict(checks or {}))
