"""``dialeval ensemble loo``: the leave-one-benchmark-out table of the member sets (or of one ``--members`` list),
printed and written to ``<output-dir>/loo.json`` and ``loo.txt``, with no checkpoint fitted. The members score the
sets through the member score cache, as ``dialeval train ensemble`` does (:func:`~.train.prepare_run`); once the cache
holds them, the command takes seconds."""

from __future__ import annotations

from pathlib import Path

from .options import EnsembleLooOptions

__all__ = ["run_loo"]


def run_loo(opts: EnsembleLooOptions) -> str:
    """The tables (module docstring); returns the printed text."""
    from .loo import leave_one_out
    from .pipeline import member_set_data
    from .train import prepare_run, write_reports

    prepared, lists, _ = prepare_run(opts)
    reports = {}
    for name, members in lists.items():
        data = member_set_data(prepared, members)
        reports[name] = leave_one_out(data, prepared.turn_calibration, prepared.dialogue_calibration,
                                      member_set=name, n_boot=opts.bootstrap, seed=opts.seed, specs=prepared.specs)
    return write_reports(Path(opts.output_dir), prepared, reports)
