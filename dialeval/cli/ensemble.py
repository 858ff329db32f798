"""``dialeval ensemble ...``: the ensemble's own commands beside its training (``dialeval train ensemble``).

``dialeval ensemble loo`` prints the leave-one-benchmark-out table of the ensemble's member sets (or of one
``--members`` list) and writes it to ``<output-dir>/loo.json`` and ``loo.txt``
(:func:`dialeval.metrics.ensemble.loo_command.run_loo`); its flags are ``dialeval train ensemble``'s, generated from
the same options dataclass, plus ``--members``. ``dialeval ensemble table RUN/loo.json --member-set NAME`` prints one
member set's table from such a file as the markdown of the ensemble's card.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ..metrics.ensemble.options import EnsembleLooOptions
from ..training.options import typer_command

ensemble_app = typer.Typer(no_args_is_help=True, help=(
    "The ensemble metric: its leave-one-benchmark-out table (fitting its checkpoint is `dialeval train ensemble`)."))


def _loo(opts: EnsembleLooOptions) -> None:
    from ..metrics.ensemble.loo_command import run_loo

    typer.echo(run_loo(opts))


ensemble_app.command("loo")(typer_command(EnsembleLooOptions, _loo, help=(EnsembleLooOptions.__doc__ or "").strip()))


@ensemble_app.command("table")
def table(loo: Path = typer.Argument(..., help="A loo.json written by `dialeval train ensemble` or `dialeval "
                                                "ensemble loo`.", exists=True, dir_okay=False),
          member_set: str = typer.Option("full", help="The member set whose table to print.")) -> None:
    """Print one member set's leave-one-out table from a loo.json as the markdown of the ensemble's card."""
    from ..metrics.ensemble.report import format_loo_markdown

    sets = json.loads(loo.read_text(encoding="utf-8")).get("member_sets", {})
    if member_set not in sets:
        raise typer.BadParameter(f"{loo} has no member set {member_set!r} (it has: {', '.join(sets) or 'none'})",
                                 param_hint="--member-set")
    typer.echo(format_loo_markdown(sets[member_set]))
