"""Measuring metrics against human judgements: running a benchmark, statistics, tables and plots."""

from . import stats
from .diagnostics import format_diagnostics
from .plots import (
    PlotOutcome,
    plotted_aspect,
    scatter_figure,
    scatter_plot,
    unplottable_reason,
)
from .runner import (
    BenchmarkResult,
    MetricNotApplicable,
    corpus_summary,
    emit_measurements,
    format_table,
    markdown_report,
    read_results,
    run_benchmark,
    write_csv,
    write_json,
)

__all__ = ["BenchmarkResult", "MetricNotApplicable", "PlotOutcome", "corpus_summary", "emit_measurements",
           "format_diagnostics", "format_table", "markdown_report", "plotted_aspect", "read_results", "run_benchmark",
           "scatter_figure", "scatter_plot", "stats", "unplottable_reason", "write_csv", "write_json"]
