"""Measuring metrics against human judgements: running a benchmark, statistics, tables and plots."""

from . import stats
from .runner import (
    BenchmarkResult,
    MetricNotApplicable,
    corpus_summary,
    emit_measurements,
    format_table,
    markdown_report,
    run_benchmark,
    scatter_plot,
    write_csv,
    write_json,
)

__all__ = ["BenchmarkResult", "MetricNotApplicable", "corpus_summary", "emit_measurements", "format_table",
           "markdown_report", "run_benchmark", "scatter_plot", "stats", "write_csv", "write_json"]
