"""``dialeval export``: a learned metric's checkpoint (or the ensemble's) as a complete, Hub-ready folder with its
model card."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def export_command(
    metric: Annotated[str, typer.Option(help=(
        "Learned metric, or the ensemble (dialeval list; those whose spec has an export)."))],
    output_dir: Annotated[Path, typer.Option(help="Folder to write (must not exist or be empty).")],
    checkpoint: Annotated[str, typer.Option(help=(
        "A shipped checkpoint's name ('default'; 'base' where the metric ships one: `dialeval checkpoint list`), "
        "a checkpoint folder or a training run folder."))] = "default",
    namespace: Annotated[str, typer.Option(help=(
        "Hub user or organisation of the model repo: the card's code and model-index name <namespace>/<metric> "
        "(as `dialeval release --namespace`)."))] = "dialeval",
    card: Annotated[bool, typer.Option(help=(
        "Write the model card README.md, as `dialeval release` does (needs a checkout: hub_cards/results and "
        "metrics/<metric>/README.md); --no-card writes the checkpoint alone."))] = True,
    overwrite: Annotated[bool, typer.Option(help="Replace a non-empty output folder.")] = False,
) -> None:
    """Write a checkpoint with all weights, config, custom code and the model card, loadable with
    AutoModel.from_pretrained(folder, trust_remote_code=True) without dialeval; the card shows how to score text
    with it. The card's model-index holds the stored results when they were measured on this checkpoint. The
    ensemble has no model: its folder is its config.json as shipped and a card listing its pinned members."""
    if card:
        from ..hub.cards import CardError
        from ..hub.release import export_model

        try:
            out = export_model(metric, checkpoint, output_dir, namespace=namespace, overwrite=overwrite)
        except CardError as err:
            raise CardError(f"{err} (or pass --no-card to export without a model card)") from None
    else:
        from ..scoring.export import export_checkpoint

        out = export_checkpoint(metric, checkpoint, output_dir, overwrite=overwrite)
    files = sorted(p for p in out.rglob("*") if p.is_file())
    for path in files:
        typer.echo(f"{path.stat().st_size / 1e6:9.2f} MB  {path.relative_to(out)}")
    total = sum(p.stat().st_size for p in files) / 1e6
    typer.echo(f"exported {metric} checkpoint {checkpoint} to {out} ({len(files)} files, {total:.1f} MB)")
