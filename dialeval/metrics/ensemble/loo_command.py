"""``dialeval ensemble loo``: the leave-one-benchmark-out table of the member sets (or of one ``--members`` list),
printed and written to ``<output-dir>/loo.json`` and ``loo.txt``, with no checkpoint fitted; the candidates are
checked against the sanity bar and chosen as ``dialeval train ensemble`` chooses them
(:func:`~.fit.measure_member_set`). The members score the sets through the member score cache, as ``dialeval train
ensemble`` does (:func:`~.train.prepare_run`); once the cache holds them, the command takes seconds."""

from __future__ import annotations

from pathlib import Path

from .options import EnsembleLooOptions

__all__ = ["run_loo"]


def run_loo(opts: EnsembleLooOptions) -> str:
    """The tables (module docstring); returns the printed text."""
    from .fit import measure_member_set
    from .train import prepare_run, write_reports

    prepared, lists, _ = prepare_run(opts)
    reports = {name: measure_member_set(prepared, name, members, n_boot=opts.bootstrap, seed=opts.seed)[0]
               for name, members in lists.items()}
    return write_reports(Path(opts.output_dir), prepared, reports)
