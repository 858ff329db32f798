"""The leave-one-out table as text (what the commands print) and the members' cost.

Rows are the held-out sets, columns every member and every combiner candidate, cells ``(Pearson + Spearman) / 2``;
a cell where a member of the set is in-domain (trained on that set's own training split) carries ``*``. Below: the
mean over the sets, the mean over the sets without an in-domain member, each candidate's count of sets where it is
above the set's best member (what chooses it, before the mean), the chosen candidate's wins against each member,
and the last column, the chosen candidate minus the set's best member with its paired bootstrap 95% CI; then the
members the member rule left out of a fold's fit.
Under the table, the sanity bar (:mod:`.checks`): each member's and each refitted candidate's accuracy per
perturbation of the check set, and which candidates cleared it. :func:`format_loo_markdown` writes the same table
(without the in-domain marks, the rule's and the bar's lines) as the markdown of the ensemble's card, from a
``loo.json`` (``dialeval ensemble table``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .loo import LooReport

__all__ = ["format_costs", "format_loo", "format_loo_markdown"]

SHORT = {"bert_ruber_unref": "bru_unref", "context_cosine": "ctx_cos", "utterance_length": "length",
         "turn_count": "turns", "dynaeval": "dynaeval", "amr_eval": "amr_eval", "mme_crs": "mme_crs",
         "power_0.5": "p=0.5", "power_0.25": "p=0.25", "power_0": "p=0"}
WIDTH = 9
LABEL = 31


def _label(name: str) -> str:
    return SHORT.get(name, name)[:WIDTH]


def _cell(value: float | None, mark: bool = False) -> str:
    if value is None:
        return f"{'-':>{WIDTH}}"
    return f"{value:>{WIDTH - 1}.3f}" + ("*" if mark else " ")


def format_loo(report: LooReport) -> str:
    """The table of one member set's report (module docstring)."""
    columns, candidates, chosen = report.columns, report.candidates, report.chosen
    head = f"{'held-out set':<{LABEL}} {'n':>5} " + " ".join(f"{_label(c):>{WIDTH}}" for c in (*columns, *candidates))
    head += f"  {chosen + ' - best member [95% CI]':<40}"
    lines = [f"member set {report.member_set}: {', '.join(report.members)}; chosen combiner: {chosen}", head,
             "-" * len(head)]
    for r in report.rows:
        marked = set(r["in_domain"])
        cells = [_cell(r["members"][c], c in marked) for c in columns]
        cells += [_cell(r["candidates"][k], bool(marked)) for k in candidates]
        vs = r["versus_best_member"]
        lines.append(f"{r['set']:<{LABEL}} {r['n']:>5} " + " ".join(cells)
                     + f"  {vs['difference']:+.3f} [{vs['ci_low']:+.3f}, {vs['ci_high']:+.3f}] vs {r['best_member']}")
    s = report.summary
    lines.append("-" * len(head))
    lines.append(f"{'mean':<{LABEL}} {s['n_sets']:>5} " + " ".join(
        [_cell(s["member_mean"][c]) for c in columns] + [_cell(s["candidate_mean"][k]) for k in candidates]))
    lines.append(f"{'mean without in-domain sets':<{LABEL}} {s['n_sets_out_of_domain']:>5} " + " ".join(
        [_cell(s["member_mean_out_of_domain"][c]) for c in columns]
        + [_cell(s["candidate_mean_out_of_domain"][k]) for k in candidates]))
    lines.append(f"{'above the set' + chr(39) + 's best member':<{LABEL}} {'':>5} " + " ".join(
        [f"{'':>{WIDTH}}" for _ in columns]
        + [f"{str(s['above_best_member'][k]) + '/' + str(s['n_sets']):>{WIDTH}}" for k in candidates]))
    lines.append(f"{'wins of ' + chosen:<{LABEL}} {'':>5} " + " ".join(
        f"{str(s['wins'][c]['wins']) + '/' + str(s['wins'][c]['sets']):>{WIDTH}}" for c in columns))
    if s["best_member"] is not None:
        lines.append(f"{chosen}: above the set's best member on {s['above_best_member'][chosen]} of {s['n_sets']}; "
                     f"mean {s['candidate_mean'][chosen]:.3f}, best member {s['best_member']} "
                     f"{s['member_mean'][s['best_member']]:.3f} (margin {s['margin_over_best_member']:+.3f}); "
                     f"fewest wins against a member scored on every set: {s['fewest_wins']} of {s['n_sets']}")
    lines.append("* a member of the set is in-domain there (trained on the set's own training split); "
                 "cells: (Pearson + Spearman) / 2")
    for r in report.rows:
        for member, why in r["excluded"].items():
            lines.append(f"member rule, without {r['set']}: {member} left out ({why})")
    for key, why in report.left_out.items():
        lines.append(f"not scored: {key} ({why})")
    lines += _format_checks(report)
    return "\n".join(lines)


def format_loo_markdown(report: Mapping[str, Any]) -> str:
    """One member set's table (a member set's entry of ``loo.json``, :meth:`LooReport.to_json`) as the card's
    markdown: the chosen candidate in bold, then the means, each candidate's count of sets above the set's best
    member and the chosen candidate's wins against each member."""
    columns, candidates, chosen = report["columns"], report["candidates"], report["chosen"]
    s, n = report["summary"], report["summary"]["n_sets"]

    def name(k: str) -> str:
        label = SHORT.get(k, k) if k.startswith("power_") else k
        return f"**{label}**" if k == chosen else label

    def value(k: str, text: str) -> str:
        return f"**{text}**" if k == chosen else text

    def cell(x: float | None) -> str:  # a member with no score of a set (turn_count on turn-level sets): "-"
        return "-" if x is None else f"{x:.3f}"

    def row(label: str, n_cell: Any, member_cells: list[str], candidate_cells: list[str], last: str = "") -> str:
        return "| " + " | ".join([label, str(n_cell), *member_cells, *candidate_cells, last]) + " |"

    head = ["held-out set", "n", *columns, *map(name, candidates), f"{SHORT.get(chosen, chosen)} - best member [95% CI]"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in report["rows"]:
        vs = r["versus_best_member"]
        lines.append(row(r["set"], r["n"], [cell(r["members"].get(c)) for c in columns],
                         [value(k, f"{r['candidates'][k]:.3f}") for k in candidates],
                         f"{vs['difference']:+.3f} [{vs['ci_low']:+.3f}, {vs['ci_high']:+.3f}] vs {r['best_member']}"))
    for label, n_cell, suffix in ((f"**mean over the {n} sets**", "", ""),
                                  ("mean without in-domain sets", s["n_sets_out_of_domain"], "_out_of_domain")):
        lines.append(row(label, n_cell, [cell(s["member_mean" + suffix].get(c)) for c in columns],
                         [value(k, f"{s['candidate_mean' + suffix][k]:.3f}") for k in candidates]))
    lines.append(row("**sets above the set's best member**", "", [""] * len(columns),
                     [value(k, f"{s['above_best_member'][k]}/{n}") for k in candidates]))
    lines.append(row(f"sets where {SHORT.get(chosen, chosen)} beats the member", "",
                     [f"{s['wins'][c]['wins']}/{s['wins'][c]['sets']}" for c in columns], [""] * len(candidates)))
    return "\n".join(lines)


def _format_checks(report: LooReport) -> list[str]:
    c = report.checks
    if not c:
        return []
    if not c["applies"]:
        return [f"sanity bar: not checked ({c['why']}); chosen by the leave-one-out alone"]
    kinds = c["perturbations"]
    lines = [f"sanity bar, {c['set']}: at least {c['bar']:.2f} wherever a member reaches it "
             f"({', '.join(c['required']) or 'nowhere'}); gold over each perturbation, ties one half",
             f"{'':<{LABEL}} " + " ".join(f"{k[:12]:>12}" for k in kinds)]
    for name, acc in (*c["members"].items(), *c["combiners"].items()):
        failing = c["failing"].get(name)
        verdict = "" if name not in c["combiners"] else ("  clears it" if not failing else
                                                         f"  misses it ({', '.join(failing)})")
        lines.append(f"{name:<{LABEL}} " + " ".join(f"{acc[k]:>12.3f}" for k in kinds) + verdict)
    if not c["passing"]:
        lines.append("no candidate clears the bar: chosen by the leave-one-out alone")
    return lines


def format_costs(costs: Mapping[str, Mapping[str, Any]]) -> str:
    """One line per member: items/s at turn level (and dialogues/s) when it scored the sets."""
    lines = []
    for name, c in costs.items():
        turn = "-" if c.get("turn_items_per_second") is None else f"{c['turn_items_per_second']:.1f} items/s"
        dial = "-" if c.get("dialogues_per_second") is None else f"{c['dialogues_per_second']:.2f} dialogues/s"
        lines.append(f"{name:<18} {turn:>16} {dial:>20}  {c.get('identity', '')}")
    return "\n".join(lines)
