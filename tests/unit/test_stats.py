"""Tests for dialeval.evaluation.stats: agreement with scipy, bootstrap behaviour, Williams' test, discrimination accuracy."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from scipy import stats as sps

from dialeval.evaluation.stats import (
    METHODS,
    across_context_auc,
    compare_metrics,
    correlate,
    correlate_groups,
    discrimination_accuracy,
    relative_average_gain,
    williams_test,
)

SCIPY = {
    "pearson": sps.pearsonr,
    "spearman": sps.spearmanr,
    "kendall": lambda x, y: sps.kendalltau(x, y, variant="b"),
}


def _data(n: int, seed: int = 0, noise: float = 1.0, ties: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    human = rng.normal(size=n)
    metric = human + noise * rng.normal(size=n)
    if ties:  # Likert-style human ratings and a coarse metric: many ties
        human = np.digitize(human, [-1.0, -0.3, 0.3, 1.0]).astype(float)
        metric = np.round(metric, 1)
    return metric, human


# ----------------------------------------------------------------------------------------------- correlate


@pytest.mark.parametrize("ties", [False, True])
def test_correlate_point_estimates_match_scipy(ties: bool) -> None:
    metric, human = _data(60, seed=3, ties=ties)
    res = correlate(metric, human, n_boot=20)
    assert res["n"] == 60
    for method in METHODS:
        expected = SCIPY[method](metric, human)
        assert res[method]["r"] == pytest.approx(float(expected.statistic), rel=1e-12, abs=1e-12)
        assert res[method]["p"] == pytest.approx(float(expected.pvalue), rel=1e-9, abs=1e-300)


def test_bootstrap_ci_matches_plain_scipy_loop() -> None:
    """The vectorised replicates equal scipy on each resample (documented scheme: default_rng(seed).integers)."""
    metric, human = _data(25, seed=5, ties=True)
    n_boot, seed, confidence = 200, 11, 0.9
    res = correlate(metric, human, n_boot=n_boot, seed=seed, confidence=confidence)

    idx = np.random.default_rng(seed).integers(0, len(metric), size=(n_boot, len(metric)))
    for method in METHODS:
        reps = []
        for row in idx:
            x, y = metric[row], human[row]
            if np.ptp(x) > 0 and np.ptp(y) > 0:
                reps.append(float(SCIPY[method](x, y).statistic))
        low, high = np.quantile(reps, [0.05, 0.95])
        assert res[method]["ci_low"] == pytest.approx(low, abs=1e-10)
        assert res[method]["ci_high"] == pytest.approx(high, abs=1e-10)
        assert res["n_boot_used"] == len(reps)


def test_bootstrap_is_deterministic_and_seed_dependent() -> None:
    metric, human = _data(80, seed=1)
    a = correlate(metric, human, n_boot=200, seed=42)
    b = correlate(metric, human, n_boot=200, seed=42)
    c = correlate(metric, human, n_boot=200, seed=43)
    assert a == b
    for method in METHODS:
        assert (a[method]["ci_low"], a[method]["ci_high"]) != (c[method]["ci_low"], c[method]["ci_high"])
        assert a[method]["r"] == c[method]["r"]


def test_ci_contains_point_estimate_on_correlated_data() -> None:
    metric, human = _data(300, seed=2, noise=0.5)
    res = correlate(metric, human, n_boot=300)
    assert res["n_boot_used"] == 300 and res["note"] is None
    for method in METHODS:
        c = res[method]
        assert 0.3 < c["ci_low"] < c["r"] < c["ci_high"] <= 1.0
        assert c["p"] < 1e-10


def test_wider_confidence_gives_wider_interval() -> None:
    metric, human = _data(100, seed=4)
    narrow = correlate(metric, human, n_boot=300, confidence=0.8)["pearson"]
    wide = correlate(metric, human, n_boot=300, confidence=0.99)["pearson"]
    assert wide["ci_low"] < narrow["ci_low"] < narrow["ci_high"] < wide["ci_high"]


def test_undefined_resamples_are_skipped_and_counted() -> None:
    # With 3 items, 3 of the 27 equally likely resamples repeat one item (constant): about 1 in 9 is skipped.
    res = correlate([1.0, 2.0, 4.0], [1.0, 3.0, 2.0], n_boot=500)
    assert 0 < res["n_boot"] - res["n_boot_used"] < 120
    for method in METHODS:
        assert math.isfinite(res[method]["ci_low"]) and math.isfinite(res[method]["ci_high"])


def test_constant_input_gives_nan_with_note_and_no_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = correlate([1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0])
    assert "human_scores is constant" in res["note"]
    assert res["n_boot_used"] == 0
    for method in METHODS:
        assert all(math.isnan(v) for v in res[method].values())


def test_output_is_plain_json_serialisable() -> None:
    metric, human = _data(20)
    results = [
        correlate(metric, human, n_boot=10),
        compare_metrics(metric, human + 1.0, human, n_boot=10),
        discrimination_accuracy([[1, 2], [3, 4]], [[0, 2], [5, 1]], n_boot=10),
    ]
    for res in results:
        json.dumps(res, allow_nan=False)
        stack = [res]
        while stack:
            for v in stack.pop().values():
                if isinstance(v, dict):
                    stack.append(v)
                else:
                    assert v is None or type(v) in (float, int, str)


def test_n_boot_zero_skips_bootstrap() -> None:
    metric, human = _data(20)
    res = correlate(metric, human, n_boot=0)
    assert res["n_boot_used"] == 0 and math.isnan(res["pearson"]["ci_low"])
    assert math.isfinite(res["pearson"]["r"])


# ------------------------------------------------------------------------------------------------ input errors


@pytest.mark.parametrize(
    ("metric", "human", "message"),
    [
        ([1.0, 2.0, 3.0], [1.0, 2.0], "length mismatch: metric_scores has 3, human_scores has 2"),
        ([1.0, 2.0, float("nan"), 4.0], [1.0, 2.0, 3.0, 4.0], r"metric_scores .*\(nan\) at index 2"),
        ([1.0, 2.0, 3.0, 4.0], [1.0, float("inf"), 3.0, 4.0], r"human_scores .* \(inf\) at index 1"),
        ([1.0, 2.0], [2.0, 1.0], "at least 3 items"),
        ([[1.0, 2.0], [3.0, 4.0]], [1.0, 2.0], "metric_scores must be 1-D"),
        (["a", "b", "c"], [1.0, 2.0, 3.0], "metric_scores must be numeric"),
    ],
)
def test_bad_input_raises_value_error(metric, human, message) -> None:
    with pytest.raises(ValueError, match=message):
        correlate(metric, human)


@pytest.mark.parametrize(("kw", "message"), [({"n_boot": -1}, "n_boot"), ({"confidence": 1.0}, "confidence")])
def test_bad_options_raise(kw, message) -> None:
    with pytest.raises(ValueError, match=message):
        correlate([1.0, 2.0, 3.0], [1.0, 3.0, 2.0], **kw)


# ------------------------------------------------------------------------------------------------ groups


def test_correlate_groups_order_pooled_and_per_group_equality() -> None:
    metric, human = _data(30, seed=7)
    groups = ["b"] * 10 + [2] * 10 + ["a"] * 10
    res = correlate_groups(metric, human, groups, n_boot=50, seed=3)
    assert list(res) == ["b", "2", "a", "pooled"]
    assert res["pooled"] == correlate(metric, human, n_boot=50, seed=3)
    assert res["2"] == correlate(metric[10:20], human[10:20], n_boot=50, seed=3)
    assert res["a"]["n"] == 10


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        (["x"] * 5, "groups has 5"),
        (["x"] * 4 + ["y"] * 2, "group 'y' has 2 items"),
        (["pooled"] * 6, "collides"),
        ([1, 1, 1, "1", "1", "1"], "collides"),
    ],
)
def test_correlate_groups_errors(groups, message) -> None:
    metric, human = _data(6)
    with pytest.raises(ValueError, match=message):
        correlate_groups(metric, human, groups, n_boot=5)


# ------------------------------------------------------------------------------------------------ Williams


def _williams_reference(r12: float, r13: float, r23: float, n: int) -> float:
    """Plain re-implementation: K is the determinant of the 3x3 correlation matrix (Steiger 1980, eq. 7)."""
    det = np.linalg.det(np.array([[1.0, r12, r13], [r12, 1.0, r23], [r13, r23, 1.0]]))
    rbar = (r12 + r13) / 2.0
    denominator = 2 * ((n - 1) / (n - 3)) * det + rbar**2 * (1 - r23) ** 3
    return (r12 - r13) * np.sqrt(((n - 1) * (1 + r23)) / denominator)


def test_williams_worked_example() -> None:
    # Example of psych::r.test(n=103, r12=.4, r13=.5, r23=.1) ("t = -0.89, probability 0.37", two-sided).
    # By hand: K = 1 - .16 - .25 - .01 + 2(.4)(.5)(.1) = 0.62;
    # numerator = -0.1 * sqrt(102 * 1.1) = -1.05925; denominator = sqrt(2(.62)(102/100) + (.9^2/4)(.9^3))
    # = sqrt(1.2648 + 0.1476225) = 1.18846; t = -0.89128.
    t, p = williams_test(0.4, 0.5, 0.1, 103)
    assert t == pytest.approx(-0.89128, abs=5e-5)
    assert p > 0.5  # one-sided for r12 > r13, and here r12 < r13
    assert 2 * min(p, 1 - p) == pytest.approx(0.37, abs=0.01)


@pytest.mark.parametrize(
    ("r12", "r13", "r23", "n"), [(0.6, 0.45, 0.7, 60), (0.3, -0.1, 0.2, 25), (0.9, 0.85, 0.95, 500)]
)
def test_williams_matches_independent_implementation(r12, r13, r23, n) -> None:
    t, p = williams_test(r12, r13, r23, n)
    t_ref = _williams_reference(r12, r13, r23, n)
    assert t == pytest.approx(t_ref, rel=1e-10)
    assert p == pytest.approx(1.0 - sps.t.cdf(t_ref, df=n - 3), rel=1e-8)
    t_swapped, p_swapped = williams_test(r13, r12, r23, n)
    assert t_swapped == pytest.approx(-t) and p_swapped == pytest.approx(1.0 - p)


def test_williams_degenerate_and_invalid() -> None:
    assert williams_test(0.5, 0.5, 0.3, 10) == (0.0, 0.5)
    assert all(math.isnan(v) for v in williams_test(float("nan"), 0.5, 0.3, 10))
    with pytest.raises(ValueError, match="n > 3"):
        williams_test(0.5, 0.4, 0.3, 3)
    with pytest.raises(ValueError, match="r23 must be in"):
        williams_test(0.5, 0.4, 1.3, 30)
    with pytest.raises(ValueError, match="inconsistent"):
        williams_test(0.9, -0.9, 0.9, 30)


# ------------------------------------------------------------------------------------------------ compare_metrics


def _three_metrics(n: int = 150, seed: int = 8) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    human = rng.normal(size=n)
    good = human + 0.5 * rng.normal(size=n)
    poor = human + 2.0 * rng.normal(size=n)
    return good, poor, human


@pytest.mark.parametrize("method", METHODS)
def test_compare_metrics_against_scipy_and_williams(method: str) -> None:
    good, poor, human = _three_metrics()
    res = compare_metrics(good, poor, human, method=method, n_boot=200)
    pairs = [(good, human), (poor, human), (good, poor)]
    r_a, r_b, r_ab = (float(SCIPY[method](x, y).statistic) for x, y in pairs)
    assert (res["r_a"], res["r_b"], res["r_ab"]) == pytest.approx((r_a, r_b, r_ab), rel=1e-12)
    assert res["diff"] == pytest.approx(r_a - r_b)
    assert 0.0 < res["ci_low"] < res["diff"] < res["ci_high"]
    assert res["p_bootstrap"] < 0.01 and res["n_boot_used"] == 200
    if method == "kendall":
        assert res["williams_t"] is None and res["williams_p"] is None and "Kendall" in res["note"]
        return
    if method == "spearman":  # Williams on ranks: Pearson correlations of the rank vectors
        ranks = [sps.rankdata(v) for v in (good, poor, human)]
        rank_pairs = [(ranks[0], ranks[2]), (ranks[1], ranks[2]), (ranks[0], ranks[1])]
        r_a, r_b, r_ab = (sps.pearsonr(x, y).statistic for x, y in rank_pairs)
    t, p = williams_test(r_a, r_b, r_ab, len(human))
    assert res["williams_t"] == pytest.approx(t, rel=1e-10) and res["williams_p"] == pytest.approx(p, rel=1e-8)
    assert res["williams_p"] < 0.01


def test_compare_metrics_swapped_and_deterministic() -> None:
    good, poor, human = _three_metrics(n=60, seed=9)
    ab = compare_metrics(good, poor, human, n_boot=100, seed=1)
    assert ab == compare_metrics(good, poor, human, n_boot=100, seed=1)
    ba = compare_metrics(poor, good, human, n_boot=100, seed=1)
    assert ba["diff"] == pytest.approx(-ab["diff"])
    assert (ba["ci_low"], ba["ci_high"]) == pytest.approx((-ab["ci_high"], -ab["ci_low"]))
    assert ba["williams_p"] == pytest.approx(1.0 - ab["williams_p"])
    assert ba["p_bootstrap"] + ab["p_bootstrap"] == pytest.approx(1.0)  # no resample with an exact tie


def test_compare_metrics_errors_and_constant() -> None:
    good, poor, human = _three_metrics(n=10)
    with pytest.raises(ValueError, match="method must be one of"):
        compare_metrics(good, poor, human, method="cosine")
    with pytest.raises(ValueError, match="scores_b has 9"):
        compare_metrics(good, poor[:9], human)
    res = compare_metrics(good, np.ones(10), human, n_boot=20)
    assert "scores_b is constant" in res["note"] and math.isnan(res["diff"]) and res["n_boot_used"] == 0


def test_relative_average_gain_matches_scipy_means_and_is_paired() -> None:
    cells = [_three_metrics(n=40, seed=s) for s in (1, 2, 3)]
    res = relative_average_gain([(g, p, h) for g, p, h in cells], n_boot=200, seed=4)

    def mean_ps(x, h):
        return (sps.pearsonr(x, h).statistic + sps.spearmanr(x, h).statistic) / 2

    mean_a = np.mean([mean_ps(g, h) for g, _, h in cells])
    mean_b = np.mean([mean_ps(p, h) for _, p, h in cells])
    assert (res["mean_a"], res["mean_b"]) == pytest.approx((mean_a, mean_b), rel=1e-12)
    assert res["gain"] == pytest.approx((mean_a - mean_b) / abs(mean_b))
    assert res["difference"] == pytest.approx(mean_a - mean_b)
    assert res["difference_ci_low"] < res["difference"] < res["difference_ci_high"]
    assert [c["n"] for c in res["cells"]] == [40, 40, 40] and res["n_cells"] == 3
    assert res["ci_low"] < res["gain"] < res["ci_high"] and res["n_boot_used"] == 200
    assert res["p_bootstrap"] < 0.05
    assert res == relative_average_gain([(g, p, h) for g, p, h in cells], n_boot=200, seed=4)
    same = relative_average_gain([(g, g, h) for g, _, h in cells], n_boot=50)
    assert same["gain"] == 0.0 and same["ci_low"] == same["ci_high"] == 0.0  # paired resamples: no spread
    assert same["difference_ci_low"] == same["difference_ci_high"] == 0.0 and same["p_bootstrap"] == 1.0


def test_relative_average_gain_names_the_bad_cell() -> None:
    good, poor, human = _three_metrics(n=10)
    with pytest.raises(ValueError, match=r"cells\[1\]: length mismatch"):
        relative_average_gain([(good, poor, human), (good, poor[:9], human)])
    with pytest.raises(ValueError, match="cells is empty"):
        relative_average_gain([])


# ------------------------------------------------------------------------------------------------ discrimination


def test_discrimination_accuracy_with_ties() -> None:
    pos = [[1.0, 2.0], [3.0, 3.0]]
    neg = [[1.0, 0.0], [3.0, 4.0]]
    res = discrimination_accuracy(pos, neg, n_boot=200)
    # context 0: (1,1)=.5 (1,0)=1 (2,1)=1 (2,0)=1 -> 3.5; context 1: (3,3)=.5 (3,4)=0, twice -> 1.0; total 4.5/8
    assert res["accuracy"] == pytest.approx(4.5 / 8)
    assert res["n_pairs"] == 8 and res["n_contexts"] == 2
    # index-paired: (1,1)=.5 (2,0)=1 (3,3)=.5 (3,4)=0 -> 2/4
    assert res["pairwise"] == pytest.approx(0.5) and res["n_pairwise"] == 4
    # only two contexts (per-context accuracies 3.5/4 and 1/4): the bootstrap mean lies between them
    assert 0.25 <= res["ci_low"] <= res["accuracy"] <= res["ci_high"] <= 0.875
    assert res == discrimination_accuracy(pos, neg, n_boot=200)


def test_discrimination_unequal_k_and_one_dimensional() -> None:
    pos, neg = [[2.0], [0.0], [5.0]], [[1.0, 2.0, 3.0], [0.0, -1.0, 1.0], [1.0, 1.0, 1.0]]
    res = discrimination_accuracy(pos, neg)
    # (2: 1, .5, 0) + (0: .5, 1, 0) + (5: 1, 1, 1) = 6/9
    assert res["accuracy"] == pytest.approx(6 / 9) and res["n_pairs"] == 9
    assert res["pairwise"] is None and res["pairwise_ci_low"] is None and res["n_pairwise"] == 0
    flat = discrimination_accuracy([1.0, 2.0, 3.0, 4.0], [0.0, 2.0, 5.0, 1.0], n_boot=50)
    assert flat["accuracy"] == flat["pairwise"] == pytest.approx(2.5 / 4)


def test_discrimination_errors() -> None:
    with pytest.raises(ValueError, match="positive_scores has 2 contexts, negative_scores has 3"):
        discrimination_accuracy([[1.0], [2.0]], [[1.0], [2.0], [3.0]])
    with pytest.raises(ValueError, match=r"negative_scores has a non-finite value \(nan\) at index \(1, 0\)"):
        discrimination_accuracy([[1.0], [2.0]], [[1.0], [float("nan")]])
    with pytest.raises(ValueError, match="non-empty"):
        discrimination_accuracy([], [])


def test_across_context_auc_sees_a_drifting_level() -> None:
    # every context orders its own pair, but context 1's negative is above context 0's positive
    pos, neg = np.array([[0.3], [0.9]]), np.array([[0.1], [0.5]])
    assert discrimination_accuracy(pos, neg, n_boot=50)["accuracy"] == 1.0
    res = across_context_auc(pos, neg, n_boot=50)
    assert res["accuracy"] == pytest.approx(3 / 4) and res["n_pairs"] == 4 and res["n_contexts"] == 2
    assert 0.0 <= res["ci_low"] <= res["accuracy"] <= res["ci_high"] <= 1.0
    # brute force on random scores with ties
    rng = np.random.default_rng(0)
    pos, neg = rng.integers(0, 5, size=(7, 3)).astype(float), rng.integers(0, 5, size=(7, 2)).astype(float)
    p, n = pos.ravel()[:, None], neg.ravel()[None, :]
    assert across_context_auc(pos, neg, n_boot=10)["accuracy"] == pytest.approx(
        ((p > n) + 0.5 * (p == n)).mean())
    with pytest.raises(ValueError, match="length mismatch"):
        across_context_auc(pos, neg[:3])
