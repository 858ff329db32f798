"""The ensemble's calibration (an empirical CDF stored as quantiles) and combiners (mean, MME-CRS-style correlation
re-scaling, ridge, power means): monotone, flat beyond the ends, item by item; the fitted weights are the known ones;
a setting is chosen inside the training sets only. Pure numpy, no model."""

from __future__ import annotations

import numpy as np
import pytest

from dialeval.errors import InputError
from dialeval.scoring.calibration import CalibrationError, EmpiricalCdf
from dialeval.metrics.ensemble.combiners import (
    GEOMETRIC_FLOOR,
    Combiner,
    CombinerError,
    Unit,
    admitted,
    agreement,
    fit_candidate,
    fit_mean,
    fit_mme_crs,
    fit_ridge,
)

RNG = np.random.default_rng(7)


# -- calibration ----------------------------------------------------------------------------------------------------
def test_the_calibration_is_monotone_in_0_1_and_flat_beyond_the_stored_quantiles():
    cdf = EmpiricalCdf.fit(RNG.normal(size=400), source="synthetic", points=21)
    x = np.linspace(-6, 6, 2001)
    y = cdf(x)
    assert np.all(np.diff(y) >= 0) and y.min() == 0.0 and y.max() == 1.0
    assert np.all(y[x <= cdf.quantiles[0]] == 0.0) and np.all(y[x >= cdf.quantiles[-1]] == 1.0)
    # the stored quantiles map to their probabilities
    np.testing.assert_allclose(cdf(np.asarray(cdf.quantiles)), cdf.probabilities, atol=1e-12)


def test_a_tied_quantile_maps_to_the_middle_of_the_probabilities_it_spans():
    lengths = np.array([1, 2, 2, 2, 2, 2, 2, 3, 4, 5], dtype=float)  # a length in words: many ties
    cdf = EmpiricalCdf.fit(lengths, source="lengths", points=11)
    spanned = cdf.probabilities[np.asarray(cdf.quantiles) == 2.0]
    assert cdf(np.array([2.0]))[0] == pytest.approx((spanned.min() + spanned.max()) / 2)
    assert cdf(np.array([1.9]))[0] < cdf(np.array([2.0]))[0] < cdf(np.array([2.1]))[0]


def test_an_item_is_calibrated_alone_as_in_any_batch_bit_for_bit():
    cdf = EmpiricalCdf.fit(RNG.gamma(2.0, size=300), source="synthetic")
    batch = RNG.gamma(2.0, size=97) * 1.7 - 0.3
    together = cdf(batch)
    alone = np.array([cdf(np.array([v]))[0] for v in batch])
    reversed_ = cdf(batch[::-1])[::-1]
    assert together.tobytes() == alone.tobytes() == reversed_.tobytes()


def test_the_calibration_round_trips_through_json_and_refuses_what_it_cannot_use():
    cdf = EmpiricalCdf.fit(np.arange(50.0), source="s", points=5)
    assert EmpiricalCdf.from_json(cdf.to_json(), member="m") == cdf
    with pytest.raises(CalibrationError, match="grade on s: all 4 scores are 1.0"):
        EmpiricalCdf.fit([1.0, 1.0, 1.0, 1.0], source="s", member="grade")
    with pytest.raises(CalibrationError, match="score 2 is nan"):
        EmpiricalCdf.fit([1.0, 2.0, np.nan], source="s", member="pone")
    with pytest.raises(CalibrationError, match="calibration of pone: no field 'quantiles'"):
        EmpiricalCdf.from_json({"source": "s", "n": 3}, member="pone")
    with pytest.raises(CalibrationError, match="not in increasing order"):
        EmpiricalCdf.from_json({"quantiles": [3, 2, 1], "source": "s", "n": 3}, member="pone")
    assert issubclass(CalibrationError, InputError)


# -- combiners ------------------------------------------------------------------------------------------------------
MEMBERS = ("a", "b", "c")


def _units(weights, n_sets=5, n=300, noise=0.3, seed=0):
    """Sets whose human target is a known linear mix of the members plus noise (each set its own offset/scale)."""
    rng = np.random.default_rng(seed)
    units = []
    for s in range(n_sets):
        X = rng.uniform(size=(n, len(MEMBERS)))
        y = 3.0 * s + (1 + s) * (X @ np.asarray(weights) + noise * rng.normal(size=n))
        units.append(Unit(f"set{s}", MEMBERS, X, y))
    return units


def test_ridge_recovers_the_known_weights_up_to_scale():
    units = _units([0.6, 0.3, 0.0], noise=0.05)
    fitted = fit_ridge(units, alpha=1e-4)
    w = np.array([fitted.weights[m] for m in MEMBERS])
    np.testing.assert_allclose(w / w[0], [1.0, 0.5, 0.0], atol=0.03)


def test_mme_crs_weights_are_the_positive_correlations_to_the_power_k():
    units = _units([0.6, 0.3, -0.2])
    r = {m: np.mean([agreement(u.X[:, j], u.y) for u in units]) for j, m in enumerate(MEMBERS)}
    fitted = fit_mme_crs(units, k=2.0)
    expected = {m: max(0.0, v) ** 2 for m, v in r.items()}
    total = sum(expected.values())
    for m in MEMBERS:
        assert fitted.weights[m] == pytest.approx(expected[m] / total)
    assert fitted.weights["c"] == 0.0 and sum(fitted.weights.values()) == pytest.approx(1.0)


def test_the_mean_weights_every_member_alike_and_a_combiner_scores_item_by_item():
    units = _units([1.0, 1.0, 1.0])
    assert fit_mean(units).weights == {m: 1 / 3 for m in MEMBERS}
    combiner = fit_ridge(units, alpha=0.1)
    X = RNG.uniform(size=(61, 3))
    together = combiner.apply_matrix(MEMBERS, X)
    alone = np.concatenate([combiner.apply_matrix(MEMBERS, X[i:i + 1]) for i in range(len(X))])
    assert together.tobytes() == alone.tobytes()


def test_a_power_mean_is_the_formula_item_by_item_and_lets_one_low_member_weigh_more():
    units = _units([1.0, 1.0, 1.0])
    X = RNG.uniform(size=(40, 3))
    X[0] = [0.0, 1.0, 1.0]
    half, geometric = fit_candidate("power_0.5", units), fit_candidate("power_0", units)
    assert half.weights == geometric.weights == {m: 1 / 3 for m in MEMBERS} and half.setting == {"p": 0.5}
    np.testing.assert_allclose(half.apply_matrix(MEMBERS, X), np.mean(np.sqrt(X), axis=1) ** 2, rtol=1e-12)
    floored = np.maximum(X, GEOMETRIC_FLOOR)
    np.testing.assert_allclose(geometric.apply_matrix(MEMBERS, X), np.prod(floored, axis=1) ** (1 / 3), rtol=1e-12)
    # a reply two members like and one rejects: the mean still gives it 2/3, the lower powers far less
    scores = [fit_candidate(k, units).apply_matrix(MEMBERS, X[:1])[0] for k in ("mean", "power_0.5", "power_0")]
    assert scores[0] == pytest.approx(2 / 3) and scores[0] > scores[1] > scores[2] > 0
    together = geometric.apply_matrix(MEMBERS, X)
    alone = np.concatenate([geometric.apply_matrix(MEMBERS, X[i:i + 1]) for i in range(len(X))])
    assert together.tobytes() == alone.tobytes()
    assert Combiner.from_json(half.to_json(), where="config.json") == Combiner("power_0.5", half.weights,
                                                                              setting={"p": 0.5})


def test_a_power_mean_refuses_weights_and_scores_it_is_not_defined_for():
    with pytest.raises(CombinerError, match="config.json: a power mean's weights must be >= 0 and sum to 1"):
        Combiner.from_json({"kind": "power_0", "weights": {"a": 0.7, "b": 0.7}}, where="config.json")
    geometric = Combiner("power_0", {"a": 0.5, "b": 0.5}, setting={"p": 0.0})
    with pytest.raises(CombinerError, match=r"member b's calibrated score of item 1 is 1\.5, outside \[0, 1\]"):
        geometric.apply({"a": np.array([0.2, 0.3]), "b": np.array([0.4, 1.5])})


def test_a_setting_is_chosen_by_leave_one_set_out_inside_the_given_sets_only():
    units = _units([0.6, 0.3, 0.0])
    fitted = fit_candidate("ridge", units, grid=(0.01, 1.0, 100.0))
    assert set(fitted.selection) == {"0.01", "1.0", "100.0"}
    assert fitted.setting["alpha"] == max((0.01, 1.0, 100.0), key=lambda a: fitted.selection[repr(a)])
    # the same choice again by hand, on the members the rule admits: fit on all sets but one, score the one left out
    kept = admitted(units)[0]
    assert tuple(fitted.weights) == kept
    units = [u.select(kept) for u in units]
    by_hand = np.mean([agreement(fit_ridge([u for u in units if u is not held], 1.0).apply_matrix(kept, held.X),
                                 held.y) for held in units])
    assert fitted.selection["1.0"] == pytest.approx(by_hand)


def test_training_data_a_combiner_cannot_use_is_an_error_naming_the_set():
    X = RNG.uniform(size=(10, 3))
    with pytest.raises(CombinerError, match="set s1: X has a non-finite value at item 4"):
        Unit("s1", MEMBERS, np.where(np.arange(30).reshape(10, 3) == 13, np.nan, X), np.arange(10.0))
    with pytest.raises(CombinerError, match="set s2: every human score is 3.0"):
        Unit("s2", MEMBERS, X, np.full(10, 3.0))
    with pytest.raises(CombinerError, match="set s3: 10 items but 9 human scores"):
        Unit("s3", MEMBERS, X, np.arange(9.0))
    t = np.linspace(0.05, 1.0, 10)  # every member rises with t, the humans fall with it
    rising = np.column_stack([t, t ** 2, np.sqrt(t)])
    negative = [Unit(f"s{i}", MEMBERS, rising, -t + i) for i in range(3)]
    with pytest.raises(CombinerError, match="no member correlates positively"):
        fit_mme_crs(negative, k=1.0)
    with pytest.raises(CombinerError, match="weight of member 'a' is nan"):
        Combiner.from_json({"kind": "mean", "weights": {"a": float("nan")}}, where="config.json")
