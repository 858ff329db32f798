"""Paired comparison of two metrics: the discrimination statistic, comparing saved results, ``dialeval compare``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from dialeval.cli import app
from dialeval.errors import InputError
from dialeval.evaluation import BenchmarkResult, write_json
from dialeval.evaluation.paired import ResultsMismatch, compare_results
from dialeval.evaluation.runner import discrimination_items
from dialeval.evaluation.stats import (
    across_context_auc,
    compare_discrimination,
    compare_metrics,
    discrimination_accuracy,
)

runner = CliRunner()


def _matrices(seed: int, separation: float, n: int = 60) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(separation, 1.0, size=(n, 5)), rng.normal(0.0, 1.0, size=(n, 5))


# -- the statistic ----------------------------------------------------------------------------------------------------
def test_compare_discrimination_agrees_with_the_single_metric_statistics():
    pos_a, neg_a = _matrices(0, 1.5)
    pos_b, neg_b = _matrices(1, 0.2)
    res = compare_discrimination(pos_a, neg_a, pos_b, neg_b, n_boot=300, seed=3)
    assert res["accuracy_a"] == pytest.approx(discrimination_accuracy(pos_a, neg_a, n_boot=10)["accuracy"])
    assert res["accuracy_b"] == pytest.approx(discrimination_accuracy(pos_b, neg_b, n_boot=10)["accuracy"])
    assert res["auc_a"] == pytest.approx(across_context_auc(pos_a, neg_a, n_boot=10)["accuracy"])
    assert res["diff"] == pytest.approx(res["accuracy_a"] - res["accuracy_b"])
    assert 0 < res["ci_low"] <= res["diff"] <= res["ci_high"]  # a clearly better metric: the CI is above zero
    assert 0 < res["auc_ci_low"] <= res["auc_diff"] <= res["auc_ci_high"]
    assert res["p_bootstrap"] == 0.0 and res["n_contexts"] == 60


def test_compare_discrimination_is_antisymmetric_and_an_equal_pair_straddles_zero():
    pos_a, neg_a = _matrices(0, 0.5)
    pos_b, neg_b = _matrices(1, 0.5)
    ab = compare_discrimination(pos_a, neg_a, pos_b, neg_b, n_boot=300, seed=3)
    ba = compare_discrimination(pos_b, neg_b, pos_a, neg_a, n_boot=300, seed=3)
    assert ab["diff"] == pytest.approx(-ba["diff"]) and ab["ci_low"] == pytest.approx(-ba["ci_high"])
    same = compare_discrimination(pos_a, neg_a, pos_a, neg_a, n_boot=100)
    assert same["diff"] == same["ci_low"] == same["ci_high"] == 0.0 and same["p_bootstrap"] == 1.0


def test_compare_discrimination_refuses_matrices_of_other_shapes():
    pos, neg = _matrices(0, 1.0)
    with pytest.raises(InputError, match="differ in shape"):
        compare_discrimination(pos, neg, pos[:-1], neg[:-1], n_boot=10)


# -- saved results ------------------------------------------------------------------------------------------------------
def _ddpp(root, n: int = 4):
    folder = root / "dailydialog_plusplus"
    folder.mkdir(parents=True)
    rows = [{"id": i, "context": [f"Shall we meet at {i}?"],
             "positive_responses": [f"Yes, {i} works for me {k}." for k in range(5)],
             "adversarial_negative_responses": [f"{i} is a number {k}." for k in range(5)],
             "random_negative_responses": [f"The printer is broken {k}." for k in range(5)]} for i in range(n)]
    for split in ("dev", "test"):  # the builder reads both files
        (folder / f"{split}.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root, rows


def _discrimination_result(metric: str, rows, value_of) -> BenchmarkResult:
    _, _, kinds, owner = discrimination_items(rows)
    return BenchmarkResult(metric=metric, benchmark="dailydialog_pp", split="test", signature=f"metric:{metric}",
                           level="turn", rows=[], scores=[value_of(k, o) for k, o in zip(kinds, owner)])


def test_compare_results_rebuilds_contexts_and_kinds_from_the_benchmark(tmp_path):
    root, rows = _ddpp(tmp_path)
    # a: positives 1, adversarial 0, random 1 (a tie); b: every score 0.5
    a = _discrimination_result("a", rows, lambda kind, _: {"positive": 1.0, "adversarial": 0.0, "random": 1.0}[kind])
    b = _discrimination_result("b", rows, lambda kind, _: 0.5)
    out = {r["aspect"]: r for r in compare_results(a.to_dict(), b.to_dict(), data_dir=root, n_boot=50)}
    assert set(out) == {"positive>random", "positive>adversarial"}
    assert out["positive>adversarial"]["accuracy_a"] == 1.0 and out["positive>adversarial"]["diff"] == 0.5
    assert out["positive>random"]["accuracy_a"] == 0.5 and out["positive>random"]["diff"] == 0.0
    assert out["positive>adversarial"]["n_contexts"] == len(rows)


def test_compare_results_refuses_results_of_other_items(tmp_path):
    root, rows = _ddpp(tmp_path)
    a = _discrimination_result("a", rows, lambda kind, _: 1.0)
    shorter = _discrimination_result("b", rows, lambda kind, _: 1.0)
    shorter.scores = shorter.scores[:-1]
    with pytest.raises(ResultsMismatch, match="59 for b"):
        compare_results(a.to_dict(), shorter.to_dict(), data_dir=root)
    other_split = _discrimination_result("b", rows, lambda kind, _: 1.0)
    other_split.split = "validation"
    with pytest.raises(ResultsMismatch, match="compare results of one split"):
        compare_results(a.to_dict(), other_split.to_dict(), data_dir=root)


def test_compare_results_on_a_correlation_benchmark_matches_compare_metrics():
    rng = np.random.default_rng(0)
    human = rng.normal(size=40)
    subsets = ["x"] * 20 + ["y"] * 20
    base = {"benchmark": "grade_eval", "split": "test", "item_ids": [str(i) for i in range(40)],
            "human": {"coherence": human.tolist()}, "subsets": subsets}
    a = {**base, "metric": "a", "scores": (human + rng.normal(scale=0.5, size=40)).tolist()}
    b = {**base, "metric": "b", "scores": rng.normal(size=40).tolist()}
    rows = compare_results(a, b, n_boot=100)
    assert [r["subset"] for r in rows] == ["x", "y", "pooled"]
    want = compare_metrics(a["scores"], b["scores"], human, n_boot=100)
    assert rows[-1]["diff"] == pytest.approx(want["diff"]) and rows[-1]["ci_low"] == pytest.approx(want["ci_low"])
    with pytest.raises(ResultsMismatch, match="item_ids differ"):
        compare_results(a, {**b, "item_ids": list(reversed(base["item_ids"]))})


def test_cli_compare_reads_two_saved_results(tmp_path):
    root, rows = _ddpp(tmp_path / "data")
    a = _discrimination_result("a", rows, lambda kind, _: {"positive": 1.0, "adversarial": 0.0, "random": 0.0}[kind])
    b = _discrimination_result("b", rows, lambda kind, _: 0.5)
    write_json([a], tmp_path / "a.json")
    write_json([b], tmp_path / "b.json")
    res = runner.invoke(app, ["compare", "--results", str(tmp_path / "a.json"), "--results", str(tmp_path / "b.json"),
                              "--data-dir", str(root), "--bootstrap", "50"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.strip().splitlines()  # the data progress bars go to stderr
    assert len(lines) == 2 and "positive>adversarial" in lines[1]
    assert "accuracy a=1.000 b=0.500 diff=+0.500" in lines[1] and "(4 contexts)" in lines[1]
    res = runner.invoke(app, ["compare", "--results", str(tmp_path / "a.json"), "--results", str(tmp_path / "b.json"),
                              "--split", "test"])
    assert res.exit_code == 2 and "no --split" in " ".join(res.output.replace("│", " ").split())


def test_cli_compare_results_with_a_sanity_benchmark_asks_for_the_others_before_printing_anything(tmp_path):
    root, rows = _ddpp(tmp_path / "data")
    a = _discrimination_result("a", rows, lambda kind, _: 1.0 if kind == "positive" else 0.0)
    b = _discrimination_result("b", rows, lambda kind, _: 0.5)
    sanity = [BenchmarkResult(metric=m, benchmark="sanity_turn", split="test", signature=f"metric:{m}", level="turn",
                              rows=[], scores=[0.1, 0.2]) for m in ("a", "b")]
    write_json([a, sanity[0]], tmp_path / "a.json")
    write_json([b, sanity[1]], tmp_path / "b.json")
    args = ["compare", "--results", str(tmp_path / "a.json"), "--results", str(tmp_path / "b.json"),
            "--data-dir", str(root), "--bootstrap", "20"]
    res = runner.invoke(app, args)
    said = " ".join(res.output.replace("│", " ").split())
    assert res.exit_code == 2 and "sanity_turn: compare covers correlation and discrimination" in said
    assert "--benchmark dailydialog_pp" in said and "positive>" not in res.stdout
    res = runner.invoke(app, [*args, "--benchmark", "dailydialog_pp"])
    assert res.exit_code == 0, res.output
    assert [line.split()[0] for line in res.stdout.strip().splitlines()] == ["dailydialog_pp"] * 2
    res = runner.invoke(app, [*args, "--benchmark", "dailydialog_pp,fed_turn"])
    said = " ".join(res.output.replace("│", " ").split())
    assert res.exit_code == 2 and "do not both hold fed_turn" in said


def test_cli_compare_pairs_the_benchmark_splits_both_files_hold(tmp_path):
    root, rows = _ddpp(tmp_path / "data")
    a = _discrimination_result("a", rows, lambda kind, _: 1.0 if kind == "positive" else 0.0)
    b = _discrimination_result("b", rows, lambda kind, _: 0.5)
    other = BenchmarkResult(metric="a", benchmark="fed_turn", split="test", signature="metric:a", level="turn",
                            rows=[], scores=[0.1, 0.2])
    write_json([other, a], tmp_path / "a.json")
    write_json([b], tmp_path / "b.json")
    res = runner.invoke(app, ["compare", "--results", str(tmp_path / "a.json"), "--results", str(tmp_path / "b.json"),
                              "--data-dir", str(root), "--bootstrap", "20"])
    assert res.exit_code == 0, res.output
    assert [line.split()[0] for line in res.stdout.strip().splitlines()] == ["dailydialog_pp"] * 2
    write_json([other], tmp_path / "c.json")
    res = runner.invoke(app, ["compare", "--results", str(tmp_path / "c.json"), "--results", str(tmp_path / "b.json")])
    assert res.exit_code == 2 and "share no benchmark split" in " ".join(res.output.replace("│", " ").split())


def test_cli_compare_picks_one_metric_of_a_file_that_holds_several(tmp_path):
    root, rows = _ddpp(tmp_path / "data")
    good = _discrimination_result("good", rows, lambda kind, _: 1.0 if kind == "positive" else 0.0)
    flat = _discrimination_result("flat", rows, lambda kind, _: 0.5)
    write_json([flat, good], tmp_path / "both.json")
    write_json([flat], tmp_path / "flat.json")
    args = ["compare", "--results", str(tmp_path / "both.json"), "--results", str(tmp_path / "flat.json"),
            "--data-dir", str(root), "--bootstrap", "20"]
    res = runner.invoke(app, args)
    assert res.exit_code == 2 and "pick one with --metric-a" in " ".join(res.output.replace("│", " ").split())
    res = runner.invoke(app, [*args, "--metric-a", "good"])
    assert res.exit_code == 0, res.output
    assert "accuracy good=1.000 flat=0.500" in res.stdout
    res = runner.invoke(app, [*args, "--metric-a", "nothing"])
    assert res.exit_code == 2 and "holds no result of 'nothing'" in " ".join(res.output.replace("│", " ").split())
