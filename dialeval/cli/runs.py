"""``dialeval runs [DIR]``: the training runs under DIR, with their progress (:mod:`dialeval.training.runs`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import DialevalError


class RunsDirMissing(DialevalError, FileNotFoundError):
    """The folder ``dialeval runs`` was asked to list does not exist."""


def runs_command(
    directory: Annotated[Optional[Path], typer.Argument(
        metavar="[DIR]", help="Folder holding run folders (default: $DIALEVAL_RUNS_DIR, else ~/dialeval-runs/runs).",
        show_default=False)] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the runs as JSON instead of the table.")] = False,
) -> None:
    """List the training runs under DIR: metric, state (finished, running, stopped: resumable, prepared), steps of
    the total, examples seen of the paper's budget, the latest validation figure, steps/s over the recent log and
    the time left at that speed. Reads the run folders, writes nothing."""
    from ..training.runs import default_runs_dir, format_runs, list_runs, runs_json

    root = (directory or default_runs_dir()).expanduser()
    if not root.is_dir():
        raise RunsDirMissing(f"no folder {root} (give DIR, or set $DIALEVAL_RUNS_DIR)")
    statuses = list_runs(root)
    typer.echo(runs_json(statuses) if json_output else format_runs(statuses, root))
