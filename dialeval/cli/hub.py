"""``dialeval cards collect|render`` and ``dialeval release``: cards from measured results, the Hub folders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

cards_app = typer.Typer(no_args_is_help=True, help="Metric and model cards rendered from stored benchmark results.")


def _metrics(metric: Optional[str]) -> list[str]:
    from ..hub.cards import card_metrics

    return card_metrics() if metric is None else [m.strip() for m in metric.split(",") if m.strip()]


@cards_app.command("collect")
def collect_command(
    metric: Annotated[str, typer.Option(help="The learned metric whose card the results feed.")],
    results: Annotated[list[Path], typer.Argument(help=(
        "JSON files written by `dialeval benchmark`: of the default checkpoints, and of another shipped one "
        "(--checkpoint base, its own --output-dir) to compare with them."))],
) -> None:
    """Store the results (without per-item arrays) as hub_cards/results/<metric>.json."""
    from ..hub.cards import collect, results_path
    from ..scoring.registry import available_metrics

    out = results_path(metric)
    stored = collect(metric, results, out, available_metrics())
    typer.echo(f"wrote {out}: {len(stored)} results ({', '.join(sorted({r['metric'] for r in stored}))})")


@cards_app.command("render")
def render_command(
    metric: Annotated[Optional[str], typer.Option(help="Comma-separated metrics (default: all released).")] = None,
    check: Annotated[bool, typer.Option(help="Write nothing; exit 1 if a card differs from its rendering.")] = False,
) -> None:
    """Rewrite the results section of metrics/<metric>/README.md from hub_cards/results/<metric>.json."""
    from ..hub.cards import card_path, load_results, render_card, results_section
    from ..scoring.registry import available_metrics

    stale = []
    for m in _metrics(metric):
        path = card_path(m)
        text = path.read_text(encoding="utf-8")
        rendered = render_card(text, results_section(m, load_results(m, available_metrics())), source=str(path))
        if rendered == text:
            typer.echo(f"{path}: up to date")
        elif check:
            stale.append(str(path))
            typer.echo(f"{path}: differs from its results; run `dialeval cards render --metric {m}`")
        else:
            path.write_text(rendered, encoding="utf-8")
            typer.echo(f"{path}: rewritten")
    if stale:
        raise typer.Exit(1)


def release_command(
    output_dir: Annotated[Path, typer.Option(help="Folder for models/, spaces/ and datasets/.")],
    metric: Annotated[Optional[str], typer.Option(help="Comma-separated metrics (default: all released).")] = None,
    namespace: Annotated[str, typer.Option(help="Hub user or organisation the repos belong to.")] = "dialeval",
    data_dir: Annotated[Optional[Path], typer.Option(help="Data directory (datasets and Space examples).")] = None,
    wheel: Annotated[Optional[Path], typer.Option(help="A dialeval wheel for the Spaces (default: built now).")] = None,
    bundled_examples: Annotated[bool, typer.Option(help=(
        "Spaces show the package's demo items instead of benchmark items with human ratings."))] = False,
    datasets: Annotated[bool, typer.Option(help="Also write the dataset repos.")] = True,
    overwrite: Annotated[bool, typer.Option(help="Replace non-empty folders.")] = False,
    push: Annotated[bool, typer.Option(help="Upload every folder to the Hub (needs a token and the network).")] = False,
) -> None:
    """Build every folder a Hub release pushes (model repos with cards, Spaces, dataset repos); --push uploads."""
    from ..hub.release import push as push_release
    from ..hub.release import release

    built = release(output_dir, _metrics(metric), namespace=namespace, data_dir=data_dir, wheel=wheel,
                    bundled_examples=bundled_examples, datasets=datasets, overwrite=overwrite)
    for repo_type, repo_id, folder in built.repos():
        files = [p for p in folder.rglob("*") if p.is_file()]
        size = sum(p.stat().st_size for p in files) / 1e6
        typer.echo(f"{repo_type:<8} {repo_id:<32} {folder} ({len(files)} files, {size:.1f} MB)")
    if push:
        for url in push_release(built):
            typer.echo(f"pushed {url}")
    else:
        typer.echo("not pushed (add --push to upload)")
