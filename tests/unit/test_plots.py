"""Scatter plots of benchmark results (dialeval.evaluation.plots) and what `dialeval benchmark` says about them."""

import math

import numpy as np
import pytest
from typer.testing import CliRunner

from dialeval import evaluation
from dialeval.cli import app
from dialeval.evaluation import (
    BenchmarkResult,
    MetricNotApplicable,
    scatter_figure,
    scatter_plot,
)
from dialeval.evaluation.runner import COEFFICIENTS

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SUBSETS = ["Meena", "Mitsuku", "Human"]


def _fed_turn_result(scores=None, *, metric="toy") -> BenchmarkResult:
    """12 items in 3 subsets; the first aspect (Interesting) differs from the main one (Overall)."""
    rng = np.random.default_rng(0)
    subsets = [s for s in SUBSETS for _ in range(4)]
    overall = [float(v) for v in rng.integers(1, 6, size=12)]
    interesting = [v + 10.0 for v in overall]  # a different range, so the plotted axis tells which was used
    interesting[0] = None  # a non-numeric rating, as FED has
    scores = [float(v) for v in rng.random(12)] if scores is None else scores
    rows = []
    for aspect, r0 in (("Interesting", 0.9), ("Overall", 0.1)):
        for k, subset in enumerate(SUBSETS + ["pooled"]):
            row = {"metric": metric, "benchmark": "fed_turn", "aspect": aspect, "subset": subset,
                   "n": 12 if subset == "pooled" else 4, "n_missing_human": 0}
            for offset, c in enumerate(COEFFICIENTS):
                row.update({f"{c}_r": r0 + k / 100 + offset * 0.005, f"{c}_p": 0.5, f"{c}_ci_low": -1.0,
                            f"{c}_ci_high": 1.0})
            rows.append(row)
    return BenchmarkResult(metric=metric, benchmark="fed_turn", split="test", signature="sig", level="turn",
                           rows=rows, scores=scores, item_ids=[f"i{k}" for k in range(12)],
                           human={"Interesting": interesting, "Overall": overall}, subsets=subsets,
                           metadata={"metric": metric, "level": "turn", "n_items": 12, "device": "cpu",
                                     "seconds": 0.01})


def _visible(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def test_default_aspect_is_the_benchmarks_main_one_not_the_first():
    result = _fed_turn_result()
    fig = scatter_figure(result)
    assert fig._suptitle.get_text() == "toy vs human Overall (fed_turn, test)"
    pooled = _visible(fig)[0]
    xs = np.concatenate([c.get_offsets()[:, 0] for c in pooled.collections])
    assert sorted(xs) == sorted(result.human["Overall"])
    assert {ax.get_xlabel() for ax in _visible(fig)} - {""} == {"human Overall"}


def test_asked_aspect_is_plotted_and_unknown_aspect_is_named():
    result = _fed_turn_result()
    fig = scatter_figure(result, aspect="Interesting")
    xs = np.concatenate([c.get_offsets()[:, 0] for c in _visible(fig)[0].collections])
    assert sorted(xs) == sorted(v for v in result.human["Interesting"] if v is not None)  # the None is left out
    assert _visible(fig)[0].get_title().startswith("pooled (n=11)\nPearson 0.930")
    with pytest.raises(ValueError, match="no human ratings for aspect 'Coherent'.*Interesting, Overall"):
        scatter_figure(result, aspect="Coherent")


def test_pooled_panel_first_then_one_panel_per_subset_with_its_correlations():
    fig = scatter_figure(_fed_turn_result())
    titles = [ax.get_title() for ax in _visible(fig)]
    assert titles == [
        "pooled (n=12)\nPearson 0.130, Spearman 0.135",
        "Meena (n=4)\nPearson 0.100, Spearman 0.105",
        "Mitsuku (n=4)\nPearson 0.110, Spearman 0.115",
        "Human (n=4)\nPearson 0.120, Spearman 0.125",
    ]
    pooled, *per_subset = _visible(fig)
    assert sum(len(c.get_offsets()) for c in pooled.collections) == 12
    assert [sum(len(c.get_offsets()) for c in ax.collections) for ax in per_subset] == [4, 4, 4]


def test_scatter_plot_returns_exactly_the_files_it_wrote(tmp_path):
    out = scatter_plot(_fed_turn_result(), tmp_path / "toy__fed_turn.png")
    assert out and out.reason is None
    assert out.paths == (tmp_path / "toy__fed_turn.png",)
    assert sorted(tmp_path.iterdir()) == list(out.paths)
    assert out.paths[0].read_bytes()[:8] == PNG_MAGIC


@pytest.mark.parametrize("scores", [[math.nan] * 12, [None] * 12], ids=["all-nan", "all-null"])
def test_no_plottable_item_writes_nothing_and_says_why(tmp_path, scores):
    out = scatter_plot(_fed_turn_result(scores), tmp_path / "toy__fed_turn.png")
    assert not out and out.paths == ()
    assert "no item has both a finite metric score and a human 'Overall' rating (12 items)" in out.reason
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="no item has both"):
        scatter_figure(_fed_turn_result(scores))


def test_discrimination_result_writes_nothing_and_says_why(tmp_path):
    result = BenchmarkResult(metric="toy", benchmark="dailydialog_pp", split="test", signature="sig", level="turn",
                             rows=[{"aspect": "positive>random", "subset": "pooled", "accuracy": 0.7}],
                             scores=[0.1, 0.2])
    out = scatter_plot(result, tmp_path / "toy__dailydialog_pp.png")
    assert out.paths == () and "no human ratings to plot" in out.reason
    assert list(tmp_path.iterdir()) == []


def test_mismatched_lengths_are_an_error_naming_the_counts(tmp_path):
    result = _fed_turn_result()
    result.scores = result.scores[:-1]
    with pytest.raises(ValueError, match="11 scores, 12 human ratings and 12 subset labels"):
        scatter_plot(result, tmp_path / "x.png")


# -- the CLI claims only the files it wrote -------------------------------------------------------------------------
def _benchmark_cli(monkeypatch, tmp_path, fake_run, metric="bleu4", benchmark="fed_turn"):
    monkeypatch.setattr(evaluation, "run_benchmark", fake_run)
    return CliRunner().invoke(app, ["benchmark", "--metric", metric, "--benchmark", benchmark,
                                    "--output-dir", str(tmp_path)])


def test_cli_lists_each_plot_it_wrote(monkeypatch, tmp_path):
    res = _benchmark_cli(monkeypatch, tmp_path, lambda scorer, name, **kw: _fed_turn_result(metric=scorer.name))
    assert res.exit_code == 0, res.output
    pngs = sorted(tmp_path.glob("*.png"))
    assert pngs == [tmp_path / "bleu4__fed_turn.png"]
    assert f"wrote {pngs[0]}" in res.output.splitlines()
    assert "scatter plots" not in res.output and "no plot" not in res.output


def test_cli_metric_without_references_on_fed_turn_claims_no_plot(monkeypatch, tmp_path):
    # what run_benchmark does for bleu4 on fed_turn (FED has no references): the metric is skipped, no result
    def needs_references(scorer, name, **kw):
        raise MetricNotApplicable(f"metric '{scorer.name}' needs references and {name} has none")

    res = _benchmark_cli(monkeypatch, tmp_path, needs_references)
    assert res.exit_code == 0, res.output
    assert "skipped: metric 'bleu4' needs references and fed_turn has none" in res.output
    assert list(tmp_path.glob("*.png")) == []
    assert [line for line in res.output.splitlines() if line.startswith("wrote")] == [
        f"wrote {tmp_path / 'bleu4__fed_turn'}.json, {tmp_path / 'bleu4__fed_turn'}.csv"]


def test_cli_all_nan_scores_writes_no_plot_and_says_why(monkeypatch, tmp_path):
    res = _benchmark_cli(monkeypatch, tmp_path,
                         lambda scorer, name, **kw: _fed_turn_result([math.nan] * 12, metric=scorer.name))
    assert res.exit_code == 0, res.output
    assert list(tmp_path.glob("*.png")) == []
    assert "no plot: bleu4 on fed_turn: no item has both a finite metric score" in res.output
    assert not any(line.startswith("wrote") and ".png" in line for line in res.output.splitlines())
