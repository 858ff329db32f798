"""``dialeval ensemble ...``: the ensemble's own commands beside its training (``dialeval train ensemble``).

``dialeval ensemble loo`` prints the leave-one-benchmark-out table of the ensemble's member sets (or of one
``--members`` list) and writes it to ``<output-dir>/loo.json`` and ``loo.txt``
(:func:`dialeval.metrics.ensemble.loo_command.run_loo`); its flags are ``dialeval train ensemble``'s, generated from
the same options dataclass, plus ``--members``.
"""

from __future__ import annotations

import typer

from ..metrics.ensemble.options import EnsembleLooOptions
from ..training.options import typer_command

ensemble_app = typer.Typer(no_args_is_help=True, help=(
    "The ensemble metric: its leave-one-benchmark-out table (fitting its checkpoint is `dialeval train ensemble`)."))


def _loo(opts: EnsembleLooOptions) -> None:
    from ..metrics.ensemble.loo_command import run_loo

    typer.echo(run_loo(opts))


ensemble_app.command("loo")(typer_command(EnsembleLooOptions, _loo, help=(EnsembleLooOptions.__doc__ or "").strip()))
