"""``dialeval train ensemble``: score, calibrate, choose by leave-one-out, refit, write the checkpoint.

``run(opts)`` (:class:`~.options.EnsembleTrainingOptions`):

1. the members of every member set score the calibration and human-rated sets, through the member score cache
   (:func:`~.pipeline.prepare`; the slow part, done once per member checkpoint);
2. for each member set, the leave-one-out over the held-out sets chooses the combiner candidate, which is refitted on
   all training sets (:func:`~.fit.fit_member_set`);
3. ``<output-dir>/best/config.json`` (the checkpoint), ``loo.json`` (every member set's table, the members' costs
   and calibration checks: what the card reads), ``loo.txt`` (the tables as printed) and ``summary.json``.

Progress lines go to stderr, the tables to stdout. ``--prepare-only`` stops after step 1 and lists the cache files.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from .options import EnsembleTrainingOptions

METRIC = "ensemble"

__all__ = ["METRIC", "prepare_run", "run", "write_reports"]


def _echo(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def prepare_run(opts: EnsembleTrainingOptions):
    """Step 1 for ``opts``: the :class:`~.pipeline.Prepared` of every member of its member sets."""
    from ...backbone.device import set_torch_threads
    from .cache import MemberScoreCache
    from .pipeline import FitSettings, prepare

    set_torch_threads(opts.threads or None)
    lists = opts.member_lists()
    settings = FitSettings(calibration_dialogues=opts.calibration_dialogues,
                           reference_contexts=opts.reference_contexts,
                           dialogue_calibration_dialogues=opts.dialogue_calibration_dialogues, points=opts.quantiles,
                           rade_split=opts.rade_training_split, seed=opts.seed)
    cache = MemberScoreCache(opts.cache_dir)
    names = list(dict.fromkeys(m for members in lists.values() for m in members))
    prepared = prepare(names, settings, data_dir=opts.data_dir, cache=cache, device=opts.device,
                       batch_size=opts.batch_size, recompute=not opts.resume, progress_bar=False, echo=_echo)
    return prepared, lists, cache


def write_reports(out: Path, prepared, reports: dict) -> str:
    """``loo.json`` and ``loo.txt`` in ``out``; returns the text."""
    from .fit import member_costs
    from .report import format_costs, format_loo

    costs = member_costs(prepared)
    for name, run in prepared.tables.members.items():
        costs[name]["identity"] = run.identity
    text = "\n\n".join(format_loo(r) for r in reports.values())
    text += "\n\nmember cost (when each scored the sets; this machine):\n" + format_costs(
        {m: {**c, "identity": ""} for m, c in costs.items()})
    text += ("\n\ncalibration check, AUC of real over random replies (turn) / shuffled dialogues (dialogue):\n"
             + "\n".join(f"{m:<18} " + "  ".join(f"{level} {v:.3f}" for level, v in a.items())
                         for m, a in prepared.calibration_auc.items()))
    data = {"member_sets": {name: r.to_json() for name, r in reports.items()}, "costs": costs,
            "calibration_auc": prepared.calibration_auc, "calibration_sets": prepared.calibration_sets}
    out.mkdir(parents=True, exist_ok=True)
    (out / "loo.json").write_text(json.dumps(data, indent=1, allow_nan=True) + "\n", encoding="utf-8")
    (out / "loo.txt").write_text(text + "\n", encoding="utf-8")
    return text


def run(opts: EnsembleTrainingOptions) -> dict[str, Any]:
    from .fit import build_config, fit_member_set
    from .roster import WITH_REFERENCES

    started = time.perf_counter()
    out = Path(opts.output_dir)
    prepared, lists, cache = prepare_run(opts)
    scored = time.perf_counter() - started
    if opts.prepare_only:
        files = sorted(str(p.relative_to(cache.root)) for p in cache.root.rglob("*.json"))
        out.mkdir(parents=True, exist_ok=True)
        (out / "prepared.json").write_text(json.dumps({"cache_dir": str(cache.root), "files": files}, indent=1) + "\n")
        return {"files": files, "finished": True}
    fitted, reports = {}, {}
    for name, members in lists.items():
        fitted[name], reports[name] = fit_member_set(prepared, name, members, n_boot=opts.bootstrap, seed=opts.seed)
    references = {base: ref for base, ref in WITH_REFERENCES.items() if base in fitted and ref in fitted}
    config = build_config(prepared, fitted, default="full", with_references=references)
    config.save(out / "best")
    print(write_reports(out, prepared, reports), flush=True)
    summary = {
        "finished": True,
        "metric": METRIC,
        "checkpoint": str(out / "best"),
        "member_sets": {name: {"members": list(s.members), "combiner": s.turn.kind, "setting": dict(s.turn.setting),
                               "excluded": dict(s.extra["excluded"]),
                               "above_best_member": reports[name].summary["above_best_member"][s.turn.kind],
                               "n_sets": reports[name].summary["n_sets"],
                               "loo_mean": reports[name].summary["candidate_mean"][s.turn.kind],
                               "best_member": reports[name].summary["best_member"],
                               "margin_over_best_member": reports[name].summary["margin_over_best_member"]}
                        for name, s in fitted.items()},
        "scoring_seconds": round(scored, 1),
        "total_seconds": round(time.perf_counter() - started, 1),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return summary
