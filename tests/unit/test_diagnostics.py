"""Score diagnostics beside the correlations: between-context share, length bias, mean over sets; mean over a
sanity benchmark's checks."""

import math

import numpy as np
import pytest

from dialeval.evaluation.diagnostics import (
    MIN_SHARED_CONTEXTS,
    between_context_share,
    diagnose,
    format_diagnostics,
    length_bias,
    mean_over_checks,
    mean_over_sets,
    systems_apart,
)


def test_between_context_share_by_hand():
    # context a: 1, 3 (mean 2); context b: 5, 7 (mean 6); grand mean 4
    # total SS = 9 + 1 + 1 + 9 = 20; between SS = 2 * 4 + 2 * 4 = 16 -> 0.8
    share = between_context_share([1, 3, 5, 7, 100], ["a", "a", "b", "b", "alone"])
    assert share == {"share": pytest.approx(0.8), "contexts": 2, "items": 4}  # the single-reply context is left out


def test_a_pure_offset_is_all_between_and_no_offset_is_none():
    assert between_context_share([1, 1, 5, 5], ["a", "a", "b", "b"])["share"] == pytest.approx(1.0)
    assert between_context_share([1, 5, 1, 5], ["a", "a", "b", "b"])["share"] == pytest.approx(0.0)
    assert between_context_share([1, 2], ["a", "b"]) is None
    assert math.isnan(between_context_share([2, 2], ["a", "a"], min_contexts=1)["share"])
    with pytest.raises(ValueError, match="3 scores but 2 contexts"):
        between_context_share([1, 2, 3], ["a", "b"])


def test_length_bias_follows_length_and_is_nan_for_constants():
    lengths = [1, 2, 3, 4, 5]
    assert length_bias([0.1, 0.2, 0.3, 0.4, 0.5], lengths)["spearman"] == pytest.approx(1.0)
    assert length_bias([5, 4, 3, 2, 1], lengths)["pearson"] == pytest.approx(-1.0)
    assert math.isnan(length_bias([1, 1, 1, 1, 1], lengths)["pearson"])


def _row(aspect, subset, p, s):
    return {"aspect": aspect, "subset": subset, "pearson_r": p, "spearman_r": s}


def test_mean_over_sets_leaves_the_pooled_row_out():
    rows = [_row("x", "c/1", 0.2, 0.4), _row("x", "c/2", 0.0, 0.2), _row("x", "pooled", 0.9, 0.9),
            _row("y", "c/1", 0.5, 0.5)]
    assert mean_over_sets(rows) == {"x": {"mean": pytest.approx(0.2), "spearman": pytest.approx(0.3), "sets": 2},
                                    "y": {"mean": 0.5, "spearman": 0.5, "sets": 1}}


def test_diagnose_turn_and_dialogue_level():
    contexts = [["hi", "how are you"], ["hi", "how are you"], ["bye"]]
    turn = diagnose(np.array([0.1, 0.3, 0.9]), level="turn", contexts=contexts,
                    responses=["fine", "very fine thanks", "see you"], rows=[_row("x", "c/1", 0.2, 0.4)])
    assert turn["between_context"] is None  # one context with two replies: too few for a share
    assert turn["length_bias"]["n"] == 3 and turn["length_unit"] == "words per reply"
    assert format_diagnostics("m", "b", turn) == (
        "m on b: mean over 1 sets 0.300, Spearman within a set 0.400 (x); length bias r=0.24 / rho=0.50 "
        "(words per reply)")
    many = [[f"context {i}"] for i in range(MIN_SHARED_CONTEXTS) for _ in range(2)]
    offsets = np.repeat(np.arange(MIN_SHARED_CONTEXTS, dtype=float), 2)  # a pure per-context offset
    turn = diagnose(offsets, level="turn", contexts=many, responses=["a reply"] * len(many), rows=[])
    assert turn["between_context"] == {"share": pytest.approx(1.0), "contexts": MIN_SHARED_CONTEXTS,
                                       "items": 2 * MIN_SHARED_CONTEXTS}
    assert f"between-context share 1.00 ({MIN_SHARED_CONTEXTS} contexts" in format_diagnostics("m", "b", turn)
    dialogue = diagnose(np.array([0.1, 0.3, 0.9]), level="dialogue", contexts=contexts, responses=None, rows=[])
    assert dialogue["between_context"] is None and dialogue["length_unit"] == "mean words per turn"
    assert "between-context" not in format_diagnostics("m", "b", dialogue)
    with pytest.raises(ValueError, match="responses"):
        diagnose(np.zeros(3), level="turn", contexts=contexts, responses=None, rows=[])


def test_between_context_share_needs_enough_shared_contexts():
    scores, contexts = [1, 3, 5, 7, 9], ["a", "a", "b", "b", "c"]
    assert between_context_share(scores, contexts, min_contexts=2)["contexts"] == 2
    assert between_context_share(scores, contexts, min_contexts=3) is None


def test_systems_apart_orders_subsets_by_their_human_mean():
    scores = [0.9, 0.8, 0.1, 0.2, 0.5, 0.5]
    subsets = ["bot", "bot", "human", "human", "other", "other"]
    human = [1.0, 2.0, 5.0, 4.0, 3.0, None]
    apart = systems_apart(scores, subsets, human)
    assert [(a["higher"], a["lower"]) for a in apart] == [("human", "other"), ("human", "bot"), ("other", "bot")]
    assert [a["auc"] for a in apart] == [0.0, 0.0, 0.0] and all(a["human_auc"] == 1.0 for a in apart)
    assert systems_apart([0.1, 0.2], ["a", "a"], [1.0, 2.0]) is None  # one subset: nothing to tell apart
    line = format_diagnostics("m", "b", diagnose(np.array(scores, dtype=float), level="dialogue",
                                                 contexts=[["x"]] * 6, responses=None, rows=[], subsets=subsets,
                                                 human=human))
    assert line.endswith("AUC human>other 0.00 (humans 1.00), human>bot 0.00 (humans 1.00), other>bot 0.00 "
                         "(humans 1.00)")


def test_mean_over_checks_per_source_and_its_line():
    rows = [{"aspect": "gold>random", "subset": "dailydialog", "accuracy": 0.9},
            {"aspect": "gold>shuffled", "subset": "dailydialog", "accuracy": 0.6},
            {"aspect": "original>shuffled", "subset": "fed", "accuracy": 0.5}]
    means = mean_over_checks(rows)
    assert list(means) == ["dailydialog", "fed"]
    assert means["dailydialog"]["checks"] == 2 and means["dailydialog"]["mean"] == pytest.approx(0.75)
    assert format_diagnostics("m", "sanity_turn", {"mean_over_checks": means}) == (
        "m on sanity_turn: mean over 2 checks 0.750 (dailydialog); mean over 1 check 0.500 (fed)")
