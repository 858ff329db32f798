"""The ensemble's leave-one-benchmark-out never reads the held-out set's group when fitting, leaves out a member whose
agreement with the humans changes sign, chooses the candidate by its count of sets above the set's best member before
its mean, and reports wins and in-domain cells; the member score cache keys scores by member signature and set
content. Tiny synthetic score tables, no model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dialeval.errors import InputFileError
from dialeval.metrics.ensemble.cache import MemberScoreCache, signature_key
from dialeval.scoring.calibration import EmpiricalCdf
from dialeval.metrics.ensemble.combiners import (SIGN_Z, CombinerError, Unit, admitted, agreement, fit_candidate,
                                                sign_established)
from dialeval.metrics.ensemble.loo import choose, leave_one_out
from dialeval.metrics.ensemble.pipeline import Cell, MemberSetData, member_set_data
from dialeval.metrics.ensemble.roster import MemberSpec
from dialeval.metrics.ensemble.sets import ItemSet
from dialeval.schema import normalize_items

MEMBERS = ("a", "b")
SPECS = {m: MemberSpec(m, m) for m in MEMBERS}
IDENTITY = {m: EmpiricalCdf.fit(np.linspace(0.0, 1.0, 101), source="uniform", points=101) for m in MEMBERS}


def _draw(rng, n, mix):
    """Member scores in [0, 1] and a human target ``mix[0] * a + mix[1] * b`` plus a little noise."""
    X = rng.uniform(size=(n, 2))
    return X, X @ np.asarray(mix) + 0.05 * rng.normal(size=n)


def _data(seed=0):
    """Four groups. In g0 the humans follow member b; everywhere else they follow a and dislike b."""
    rng = np.random.default_rng(seed)
    units, cells = [], []
    for g in range(4):
        mix = (0.0, 1.0) if g == 0 else (1.0, -0.15)
        X, y = _draw(rng, 200, mix)
        units.append((f"g{g}", Unit(f"train/g{g}", MEMBERS, X, y)))
        Xc, yc = _draw(rng, 150, mix)
        cells.append(Cell(f"held/g{g}", "turn", f"g{g}", ("a",) if g == 3 else (), yc,
                          {"a": Xc[:, 0], "b": Xc[:, 1]}, 0))
    return MemberSetData(MEMBERS, MEMBERS, units, cells, {}, {})


def test_the_fit_for_a_held_out_set_never_reads_its_group():
    data = _data()
    report = leave_one_out(data, IDENTITY, IDENTITY, member_set="t", n_boot=20, specs=SPECS)
    row = next(r for r in report.rows if r["set"] == "held/g0")
    assert row["training_sets"] == ["train/g1", "train/g2", "train/g3"]
    # fitted without g0 (where b is what humans follow), b agrees negatively on every training set: the rule drops it
    assert list(row["fits"]["mme_crs"]["weights"]) == ["a"] and list(row["excluded"]) == ["b"]
    # ... and the figure is that of a fit on the other groups alone, by hand
    fold = [u for g, u in data.units if g != "g0"]
    by_hand = fit_candidate("mme_crs", fold).apply({m: IDENTITY[m](data.cells[0].raw[m]) for m in MEMBERS})
    assert row["candidates"]["mme_crs"] == pytest.approx(agreement(by_hand, data.cells[0].human))
    # had g0 leaked into its own fit with b kept (pinned), b would weigh something
    leaked = fit_candidate("mme_crs", [u for _, u in data.units], pinned=("b",))
    assert leaked.weights["b"] > 0.0


def _signs(signs, seed=3):
    """One unit per entry of ``signs``: humans follow member a, and member b with that sign."""
    rng = np.random.default_rng(seed)
    units = []
    for i, sign in enumerate(signs):
        X, y = _draw(rng, 150, (1.0, sign * 0.8))
        units.append(Unit(f"train/s{i}", MEMBERS, X, y))
    return units


def test_a_member_whose_agreement_changes_sign_stays_out_of_every_fit():
    flips = _signs((1, 1, -1, -1))
    members, excluded = admitted(flips)
    assert members == ("a",) and list(excluded) == ["b"]
    assert "not established above 0 on 2 of 4 training sets: train/s2 -" in excluded["b"]
    for kind in ("mean", "mme_crs", "ridge", "power_0.25"):
        assert list(fit_candidate(kind, flips).weights) == ["a"]
    # one set against it is allowed (SIGN_EXCEPTIONS), and a control the member set names is in whatever its sign
    assert admitted(_signs((1, 1, 1, -1))) == (("a", "b"), {})
    assert admitted(flips, pinned=("b",)) == (("a", "b"), {})
    with pytest.raises(CombinerError, match="no member agrees with the humans established above 0"):
        admitted([u.select(("b",)) for u in flips])


def test_a_member_near_0_is_not_taken_for_a_positive_one():
    # the lower end of the 95% Fisher-z interval decides: on 150 items a needs atanh(a) > 1.96 / sqrt(147)
    edge = float(np.tanh(SIGN_Z / np.sqrt(147)))
    assert sign_established(edge + 1e-6, 150) and not sign_established(edge - 1e-6, 150)
    assert not sign_established(float("nan"), 150) and not sign_established(0.99, 3)
    assert sign_established(edge - 1e-6, 2000)  # the same agreement on more items is established
    # member b follows the humans only weakly on every set: above 0 everywhere, established on none
    rng = np.random.default_rng(5)
    weak = []
    for i in range(4):
        y = rng.normal(size=150)
        a = (y - y.min()) / np.ptp(y)
        noise = rng.normal(size=150)
        b = 0.03 * y + noise
        b = b if np.corrcoef(b, y)[0, 1] > 0 else 0.03 * y - noise
        weak.append(Unit(f"train/w{i}", MEMBERS, np.column_stack([a, (b - b.min()) / np.ptp(b)]), y))
    assert all(u.agreements()[1] > 0 for u in weak)
    assert all(not sign_established(u.agreements()[1], 150) for u in weak)
    members, excluded = admitted(weak)
    assert members == ("a",) and "not established above 0 on 4 of 4" in excluded["b"]


def test_the_report_chooses_by_wins_over_each_sets_best_member_then_the_mean():
    report = leave_one_out(_data(), IDENTITY, IDENTITY, member_set="t", n_boot=50, specs=SPECS)
    s = report.summary
    for k in report.candidates:
        assert s["above_best_member"][k] == sum(r["candidates"][k] > max(r["members"].values()) for r in report.rows)
    assert report.chosen == choose(report.candidates, s["above_best_member"], s["candidate_mean"])
    assert s["n_sets"] == 4 and s["n_sets_out_of_domain"] == 3
    assert s["candidate_mean_out_of_domain"][report.chosen] == pytest.approx(
        np.mean([r["candidates"][report.chosen] for r in report.rows if not r["in_domain"]]))
    for m in MEMBERS:
        assert s["wins"][m]["wins"] == sum(r["candidates"][report.chosen] > r["members"][m] for r in report.rows)
    for r in report.rows:
        ci = r["versus_best_member"]
        assert ci["ci_low"] <= ci["difference"] <= ci["ci_high"]
        assert r["best_member"] == max(MEMBERS, key=lambda m: r["members"][m])
    assert json.loads(json.dumps(report.to_json()))["chosen"] == report.chosen


def test_a_candidate_with_the_better_mean_but_fewer_sets_above_the_best_member_loses():
    above, means = {"mean": 6, "ridge": 8, "power_0": 8}, {"mean": 0.40, "ridge": 0.35, "power_0": 0.36}
    assert choose(("mean", "ridge", "power_0"), above, means) == "power_0"  # 8 sets beat 6, the mean breaks the tie
    assert choose(("mean", "ridge"), above, means) == "ridge"
    assert choose(("mean",), above, means) == "mean"  # only what the sanity bar admitted is eligible


# -- the member score cache -----------------------------------------------------------------------------------------
def _set(responses):
    items = tuple(normalize_items(["Hi there."] * len(responses), responses))
    return ItemSet("toy/set", "turn", tuple(f"id{i}" for i in range(len(responses))), items=items)


def test_the_cache_keys_scores_by_member_signature_and_set_content(tmp_path):
    cache = MemberScoreCache(tmp_path)
    signature = "metric:pone|checkpoint:default|checkpoint_sha256:abc|cpu_threads:1|torch:2"
    toy = _set(["Hello!", "Hey, how are you?"])
    path = cache.put("pone", signature, toy, np.array([0.25, 0.5]), seconds=1.5)
    found = cache.get("pone", signature.replace("cpu_threads:1", "cpu_threads:8"), toy)  # thread count: same key
    assert found is not None and found.scores.tolist() == [0.25, 0.5] and found.path == path
    assert signature_key(signature) != signature_key(signature.replace("sha256:abc", "sha256:def"))
    assert cache.get("pone", signature.replace("sha256:abc", "sha256:def"), toy) is None  # a new checkpoint
    assert cache.get("pone", signature, _set(["Hello!", "Hey, how are you doing?"])) is None  # another text
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "ids": ["id0", "other"]}))
    with pytest.raises(InputFileError, match="do not match set toy/set; delete it"):
        cache.get("pone", signature, toy)


# -- the shipped combination: chosen by the leave-one-out, refitted on every training set, saved and read back --------
def _prepared(seed=1, b_signs=(1, 1, 1, 1)):
    """A Prepared of two members on four groups (humans follow 0.7 a + 0.3 b, b's sign in group g
    ``b_signs[g]``), a dialogue cell too."""
    from dialeval.metrics.ensemble.collect import MemberRun, ScoreTables
    from dialeval.metrics.ensemble.pipeline import FitSettings, Prepared
    from dialeval.metrics.ensemble.sets import HumanSet

    rng = np.random.default_rng(seed)
    scores, sets, training, held_out = {}, {}, [], []

    def add(key, level, n, sign=1):
        X, y = _draw(rng, n, (0.7, 0.3 * sign))
        if level == "turn":
            items = tuple(normalize_items(["Hi."] * n, ["Hello."] * n))
            sets[key] = ItemSet(key, "turn", tuple(f"{key}/{i}" for i in range(n)), items=items, human=y)
        else:
            from dialeval.schema import normalize_dialogues

            dialogues = tuple(normalize_dialogues([["Hi.", "Hello."]] * n, min_turns=2))
            sets[key] = ItemSet(key, "dialogue", tuple(f"{key}/{i}" for i in range(n)), dialogues=dialogues, human=y)
        scores[key] = {"a": X[:, 0], "b": X[:, 1]}

    for g in range(4):
        add(f"train/g{g}", "turn", 120, b_signs[g])
        add(f"held/g{g}", "turn", 80, b_signs[g])
        training.append(HumanSet(f"train/g{g}", "x", "test", "overall", "turn", f"g{g}"))
        held_out.append(HumanSet(f"held/g{g}", "x", "test", "overall", "turn", f"g{g}"))
    add("held/dialogues", "dialogue", 60)
    held_out.append(HumanSet("held/dialogues", "x", "test", "overall", "dialogue", "g0"))
    runs = {m: MemberRun(SPECS[m], f"metric:{m}", {"metric": m}) for m in MEMBERS}
    return Prepared(ScoreTables(scores, sets, runs), dict(IDENTITY), dict(IDENTITY),
                    {m: {"turn": 0.9, "dialogue": 0.6} for m in MEMBERS}, tuple(training), tuple(held_out),
                    FitSettings(), SPECS, {"turn": "calibration/turn"})


def test_the_chosen_candidate_is_refitted_on_every_training_set_and_saved(tmp_path):
    from dialeval.metrics.ensemble.checkpoint import EnsembleConfig
    from dialeval.metrics.ensemble.fit import build_config, fit_member_set

    prepared = _prepared()
    member_set, report = fit_member_set(prepared, "full", MEMBERS, n_boot=20)
    assert [r["set"] for r in report.rows] == [h.key for h in prepared.held_out]
    assert member_set.turn.kind == report.chosen
    assert member_set.extra["training_sets"] == [f"train/g{g}" for g in range(4)]
    units = [u for _, u in member_set_data(prepared, MEMBERS).units]
    assert member_set.turn == fit_candidate(report.chosen, units)  # the refit reads every training set
    assert member_set.dialogue.weights == member_set.turn.weights  # no shared weight between these members
    config = build_config(prepared, {"full": member_set}, default="full")
    config.save(tmp_path)
    loaded = EnsembleConfig.load(tmp_path)
    assert loaded.member_sets["full"].turn == member_set.turn and loaded.identities == {m: {"metric": m}
                                                                                        for m in MEMBERS}
    assert loaded.to_json() == config.to_json()


def test_the_shipped_member_set_holds_the_members_the_rule_admitted_on_every_training_set():
    from dialeval.metrics.ensemble.fit import fit_member_set

    member_set, report = fit_member_set(_prepared(b_signs=(1, 1, -1, -1)), "full", MEMBERS, n_boot=20)
    assert member_set.members == ("a",) and member_set.dialogue_members == ("a",)
    assert list(member_set.turn.weights) == ["a"] and member_set.extra["pool"] == ["a", "b"]
    assert list(member_set.extra["excluded"]) == ["b"]
    # fold by fold: without g2 or g3, b is below 0 on one training set only (allowed) and joins that fold's fit
    assert {r["set"]: list(r["excluded"]) for r in report.rows} == {
        "held/g0": ["b"], "held/g1": ["b"], "held/g2": [], "held/g3": [], "held/dialogues": ["b"]}
    assert list(report.rows[2]["fits"][report.chosen]["weights"]) == ["a", "b"]


# -- the sanity bar: a candidate that prefers a parrot is not chosen, however well it agrees with humans -------------
def _with_checks(prepared, rows=60, seed=2):
    """A check set of ``rows`` (gold, copy) pairs: member a sees the copy for what it is (gold 0.7-1, copy 0-0.1),
    member b prefers it (gold 0-0.2, copy 0.9-1), as the cosines prefer a reply that repeats the context."""
    rng = np.random.default_rng(seed)
    kinds = ("gold", "copy") * rows
    items = tuple(normalize_items(["Hi."] * len(kinds), ["Hello."] * len(kinds)))
    prepared.tables.sets["checks/toy"] = ItemSet("checks/toy", "turn", tuple(f"c{i}" for i in range(len(kinds))),
                                                 items=items, kinds=kinds)
    a = np.ravel(np.column_stack([rng.uniform(0.7, 1.0, rows), rng.uniform(0.0, 0.1, rows)]))
    b = np.ravel(np.column_stack([rng.uniform(0.0, 0.2, rows), rng.uniform(0.9, 1.0, rows)]))
    prepared.tables.scores["checks/toy"] = {"a": a, "b": b}
    prepared.check_set = "checks/toy"
    return prepared


def test_check_accuracies_pair_each_gold_with_the_perturbations_of_its_own_row():
    from dialeval.metrics.ensemble.checks import check_accuracies

    kinds = ["gold", "copy", "shuffled", "gold", "copy", "shuffled"]
    assert check_accuracies([0.9, 0.1, 0.9, 0.2, 0.8, 0.1], kinds) == {"copy": 0.5, "shuffled": 0.75}
    with pytest.raises(ValueError, match="must start each row with its gold item"):
        check_accuracies([0.1, 0.2], ["copy", "gold"])


def test_the_leave_one_out_chooses_only_among_candidates_that_clear_the_sanity_bar():
    from dialeval.metrics.ensemble.fit import fit_member_set

    prepared = _with_checks(_prepared())
    member_set, report = fit_member_set(prepared, "full", MEMBERS, candidates=("mean", "power_0"), n_boot=20)
    c = report.checks
    assert c["applies"] and c["required"] == ["copy"]  # member a reaches the bar there, so the bar applies
    assert c["members"]["a"]["copy"] == 1.0 and c["members"]["b"]["copy"] == 0.0
    assert c["failing"] == {"mean": ["copy"], "power_0": []} and c["passing"] == ["power_0"]
    # the humans follow a linear mix, so the mean agrees with them better, yet the bar rules it out
    assert report.summary["candidate_mean"]["mean"] > report.summary["candidate_mean"]["power_0"]
    assert report.chosen == member_set.turn.kind == "power_0" and report.summary["admissible"] == ["power_0"]
    assert member_set.extra["checks"]["met"] and member_set.extra["checks"]["chosen_accuracy"]["copy"] >= 0.85
    from dialeval.metrics.ensemble.report import format_loo

    assert "misses it (copy)" in format_loo(report) and "clears it" in format_loo(report)


def test_without_a_candidate_that_clears_the_bar_the_leave_one_out_alone_chooses_and_says_so():
    from dialeval.metrics.ensemble.fit import fit_member_set
    from dialeval.metrics.ensemble.report import format_loo

    prepared = _with_checks(_prepared())
    member_set, report = fit_member_set(prepared, "full", MEMBERS, candidates=("mean",), n_boot=20)
    assert report.checks["passing"] == [] and report.chosen == "mean"
    assert member_set.extra["checks"]["met"] is False
    assert "no candidate clears the bar" in format_loo(report)
    unchecked, plain = fit_member_set(_prepared(), "full", MEMBERS, candidates=("mean", "power_0"), n_boot=20)
    assert plain.checks == {"applies": False, "why": "no check set was prepared", "bar": 0.85,
                            "passing": ["mean", "power_0"]}
    assert plain.chosen == "mean" and unchecked.extra["checks"] == {"applies": False,
                                                                   "why": "no check set was prepared"}
