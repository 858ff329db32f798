"""Scatter plots of a metric against human ratings (what ``dialeval benchmark`` saves next to its tables).

One figure per benchmark result: a pooled panel with every item (coloured by subset) first, then one panel per
subset in the same colours, each titled with the Pearson and Spearman correlation the benchmark run computed.
The plotted aspect is the benchmark's main aspect (``BenchmarkInfo.default_aspect``: FED and USR ``Overall``,
GRADE ``coherence``, RADE ``overall``) unless another one is asked for. Nothing is written when there is nothing
to plot (a discrimination result, or no item with both a finite metric score and a human rating); the returned
:class:`PlotOutcome` then says why, so a caller never claims a file that does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..benchmarks import benchmark_info
from .runner import BenchmarkResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

POOLED = "pooled"
MAX_COLUMNS = 4


@dataclass(frozen=True)
class PlotOutcome:
    """The files a plot call wrote, or (when it wrote none) the reason."""

    paths: tuple[Path, ...]
    reason: str | None = None

    def __bool__(self) -> bool:
        return bool(self.paths)


@dataclass(frozen=True)
class _Points:
    aspect: str
    scores: np.ndarray
    human: np.ndarray
    subsets: np.ndarray
    plottable: np.ndarray  # both the metric score and the human rating are finite


def plotted_aspect(result: BenchmarkResult, aspect: str | None = None) -> str:
    """The aspect a plot of ``result`` shows: ``aspect`` if given, else the benchmark's main aspect.

    Raises ``ValueError`` naming the available aspects when the result holds no human ratings for it.
    """
    chosen = aspect if aspect is not None else benchmark_info(result.benchmark).default_aspect
    if chosen not in result.human:
        available = ", ".join(result.human) or "none"
        how = "asked for" if aspect is not None else f"the main aspect of {result.benchmark}"
        raise ValueError(f"{result.metric} on {result.benchmark}: no human ratings for aspect {chosen!r} ({how}); "
                         f"aspects in this result: {available}")
    return chosen


def _as_floats(values) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def _points(result: BenchmarkResult, aspect: str | None) -> _Points | str:
    """The items to plot, or the reason there are none."""
    if not result.human:
        return (f"{result.metric} on {result.benchmark}: no human ratings to plot "
                "(a discrimination result has accuracies, not per-item ratings)")
    aspect = plotted_aspect(result, aspect)
    scores, human = _as_floats(result.scores), _as_floats(result.human[aspect])
    subsets = np.asarray(result.subsets)
    if not (len(scores) == len(human) == len(subsets)):
        raise ValueError(f"{result.metric} on {result.benchmark}: {len(scores)} scores, {len(human)} human "
                         f"ratings and {len(subsets)} subset labels; they must be one per item")
    plottable = np.isfinite(scores) & np.isfinite(human)
    if not plottable.any():
        return (f"{result.metric} on {result.benchmark}: no item has both a finite metric score and a human "
                f"{aspect!r} rating ({len(scores)} items)")
    return _Points(aspect, scores, human, subsets, plottable)


def unplottable_reason(result: BenchmarkResult, *, aspect: str | None = None) -> str | None:
    """Why ``result`` cannot be plotted (no human ratings, or no finite score-rating pair); None when it can."""
    points = _points(result, aspect)
    return points if isinstance(points, str) else None


def scatter_figure(result: BenchmarkResult, *, aspect: str | None = None) -> Figure:
    """The scatter figure of ``result`` (see the module docstring); ValueError when it cannot be plotted."""
    points = _points(result, aspect)
    if isinstance(points, _Points):
        return _draw(result, points)
    raise ValueError(points)


def scatter_plot(result: BenchmarkResult, path: str | Path, *, aspect: str | None = None) -> PlotOutcome:
    """Save the scatter figure of ``result`` to ``path`` (PNG): the paths written, or none and the reason."""
    points = _points(result, aspect)
    if isinstance(points, str):
        return PlotOutcome((), points)
    _draw(result, points).savefig(path, dpi=110)
    return PlotOutcome((Path(path),))


def _r(value: float) -> str:
    return f"{value:.3f}" if np.isfinite(value) else "n/a"


def _draw(result: BenchmarkResult, pts: _Points) -> Figure:
    # no pyplot: the caller's matplotlib backend and global figure state stay untouched
    from matplotlib.figure import Figure

    names = list(dict.fromkeys(result.subsets))
    colours = {name: f"C{i % 10}" for i, name in enumerate(names)}
    panels = [POOLED] + names if len(names) > 1 else [POOLED]
    cols = min(MAX_COLUMNS, len(panels))
    nrows = -(-len(panels) // cols)
    fig = Figure(figsize=(3.4 * cols, 3.1 * nrows))
    axes = fig.subplots(nrows, cols, squeeze=False, sharex=True, sharey=True)
    stats_of = {r["subset"]: r for r in result.rows if r.get("aspect") == pts.aspect}
    for ax, panel in zip(axes.flat, panels):
        for name in names if panel == POOLED else [panel]:
            sel = pts.plottable & (pts.subsets == name)
            ax.scatter(pts.human[sel], pts.scores[sel], s=9, alpha=0.55, color=colours[name], linewidths=0)
        n = int((pts.plottable if panel == POOLED else pts.plottable & (pts.subsets == panel)).sum())
        row = stats_of.get(panel)
        corr = "" if row is None else f"\nPearson {_r(row['pearson_r'])}, Spearman {_r(row['spearman_r'])}"
        ax.set_title(f"{panel} (n={n}){corr}", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.25, linewidth=0.5)
    for i, ax in enumerate(axes.flat):
        if i >= len(panels):
            ax.set_visible(False)
        elif i + cols >= len(panels):  # lowest panel of its column: it carries the x axis
            ax.tick_params(labelbottom=True)
            ax.set_xlabel(f"human {pts.aspect}", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel(result.metric, fontsize=8)
    fig.suptitle(f"{result.metric} vs human {pts.aspect} ({result.benchmark}, {result.split})", fontsize=10)
    fig.tight_layout()
    return fig
