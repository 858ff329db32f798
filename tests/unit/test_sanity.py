"""Sanity-check benchmarks: the perturbations, the builders on tiny data, and the runner's accuracies."""

from __future__ import annotations

import json

import datasets
import numpy as np
import pytest
from conftest import TINY_DIALOGUES, write_dailydialog

from dialeval import load_scorer
from dialeval.benchmarks import benchmark_info, expand_benchmark, load_benchmark
from dialeval.benchmarks.fed import DIALOGUE_ASPECTS
from dialeval.benchmarks.sanity import DIALOGUE_KINDS, TURN_KINDS
from dialeval.evaluation import run_benchmark
from dialeval.perturb import (
    SimilarTexts,
    drop_words,
    repeat_speaker,
    shuffle_turns,
    shuffle_words,
    swap_adjacent,
    truncate_words,
)

datasets.disable_progress_bars()


def _rng(seed=0):
    return np.random.default_rng(seed)


# -- perturbations ------------------------------------------------------------------------------------------------
def test_word_perturbations_change_the_text_and_keep_what_they_promise():
    text = "I will bring sandwiches and cold water"
    shuffled = shuffle_words(text, _rng())
    assert shuffled != text and sorted(shuffled.split()) == sorted(text.split())
    dropped = drop_words(text, _rng()).split()
    assert len(dropped) == 7 - round(0.4 * 7)
    assert [w for w in text.split() if w in dropped] == dropped  # order kept
    assert truncate_words(text) == "I will bring"
    assert shuffle_words("yes yes yes", _rng()) is None  # nothing to reorder
    assert drop_words("two words", _rng()) is None and truncate_words("only three words") is None


def test_turn_perturbations():
    turns = ["a", "b", "c", "d"]
    shuffled = shuffle_turns(turns, _rng())
    assert shuffled != turns and sorted(shuffled) == turns
    swapped = swap_adjacent(turns, _rng(3))
    i = next(k for k in range(3) if swapped[k] != turns[k])
    assert swapped[i:i + 2] == [turns[i + 1], turns[i]] and swapped[i + 2:] == turns[i + 2:]
    assert swap_adjacent(["x", "x", "x"], _rng()) is None and shuffle_turns(["x", "x"], _rng()) is None
    assert repeat_speaker(turns, [0, 1, 0, 1]) == ["a", "b", "c", "b"]
    assert repeat_speaker(["a", "b", "c", "b"], [0, 1, 0, 1]) is None  # already repeating itself
    with pytest.raises(ValueError, match="speakers"):
        repeat_speaker(turns, [0, 1])


def test_similar_texts_skip_the_own_dialogue_and_the_excluded_texts():
    pool = ["the red car is fast", "a red bike", "we eat soup", "a red car"]
    similar = SimilarTexts(pool, owners=[0, 1, 2, 0])
    assert similar.most_similar("the red car is fast", owner=2) == "a red car"  # the query itself is skipped
    assert similar.most_similar("red car fast", owner=0) == "a red bike"  # dialogue 0's own texts are skipped
    assert similar.most_similar("red car fast", owner=2, exclude=["The red car is fast "]) == "a red car"
    assert similar.most_similar("nothing shared here", owner=0) is None


# -- builders -----------------------------------------------------------------------------------------------------
def ds_dialogues(root, split: str) -> list[list[str]]:
    lines = (root / "dailydialog" / "derived" / f"{split}.jsonl").read_text().splitlines()
    return [json.loads(line)["utterances"] for line in lines]


def _fed_dialogues() -> list[dict]:
    text = ("User: Hi there, how is your day going?\nSystem: Pretty good, I went for a long walk.\n"
            "User: Where did you walk to?\nSystem: Down by the river near my house.")
    other = ("System: Hello! How was your day?\nUser: Good, I walked to the river.\n"
             "System: A long walk by the river is great.\nUser: Yes, my house is near it.")
    return [{"context": c, "system": s, "annotations": {a: [3] * 5 for a in DIALOGUE_ASPECTS}}
            for c, s in ((text, "Human"), (other, "Meena"))]


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory):
    # Each dialogue beside a reworded copy, so that every turn has a similar turn in another dialogue.
    copies = [["Okay, " + t[0].lower() + t[1:] for t in d] for d in TINY_DIALOGUES]
    root = write_dailydialog(tmp_path_factory.mktemp("data"), {"validation": TINY_DIALOGUES[:3] + copies[:3],
                                                               "test": TINY_DIALOGUES[3:] + copies[3:]})
    (root / "fed").mkdir()
    (root / "fed" / "fed_data.json").write_text(json.dumps(_fed_dialogues()))
    return root


def test_the_sanity_group_and_its_metadata():
    assert expand_benchmark("sanity") == ["sanity_turn", "sanity_dialogue"]
    assert benchmark_info("sanity_turn").level == "turn" and benchmark_info("sanity_dialogue").kind == "sanity"


def test_turn_rows_hold_every_perturbation_of_a_real_reply(tiny_data):
    ds = load_benchmark("sanity_turn", split="test", data_dir=tiny_data)
    assert len(ds) == 6  # one reply per dialogue, every test dialogue qualifies
    for row in ds:
        context = [t["text"] for t in row["context"]]
        source = next(d for d in ds_dialogues(tiny_data, "test") if d[: len(context)] == context)
        assert row["response"] == source[len(context)]  # the gold is the turn that followed
        assert row["kinds"] == list(TURN_KINDS)
        made = dict(zip(row["kinds"], row["perturbed"]))
        assert made["context_copy"] == context[-1]
        assert made["random"] not in source and made["similar"] not in source  # other dialogues only
        assert all(p != row["response"] for p in row["perturbed"])
    again = load_benchmark("sanity_turn", split="test", data_dir=tiny_data, cache_dir=tiny_data / "other_cache")
    assert again.to_list() == ds.to_list()  # seeded: rebuilt from scratch, the same rows


def test_dialogue_rows_add_fed_to_the_test_split_only(tiny_data):
    test = load_benchmark("sanity_dialogue", split="test", data_dir=tiny_data)
    validation = load_benchmark("sanity_dialogue", split="validation", data_dir=tiny_data)
    assert test["source"] == ["dailydialog"] * 6 + ["fed"] * 2 and set(validation["source"]) == {"dailydialog"}
    fed = test[6]
    assert [t["speaker"] for t in fed["dialogue"]] == ["User", "System", "User", "System"]
    for perturbed in fed["perturbed"]:
        assert [t["speaker"] for t in perturbed] == ["User", "System", "User", "System"]  # speakers stay put
        assert [t["text"] for t in perturbed] != [t["text"] for t in fed["dialogue"]]
    repeated = dict(zip(fed["kinds"], fed["perturbed"]))["repeated"]
    assert [t["text"] for t in repeated][1::2] == ["Pretty good, I went for a long walk."] * 2
    assert test[0]["kinds"] == list(DIALOGUE_KINDS)


# -- the runner ---------------------------------------------------------------------------------------------------
def test_runner_pairs_each_original_with_its_own_copies(tiny_data):
    """Length is a scorer whose answers are known: a truncated or word-dropped reply is always shorter."""
    res = run_benchmark(load_scorer("utterance_length"), "sanity_turn", data_dir=tiny_data, n_boot=50)
    acc = {r["aspect"]: r["accuracy"] for r in res.rows}
    assert acc["gold>truncated"] == 1.0 and acc["gold>dropped"] == 1.0
    assert acc["gold>shuffled"] == 0.5  # same words, same length: a tie counts one half
    assert {r["subset"] for r in res.rows} == {"dailydialog"} and all(r["n_contexts"] == 6 for r in res.rows)
    assert len(res.scores) == 6 * (1 + len(TURN_KINDS))
    mean = res.diagnostics["mean_over_checks"]["dailydialog"]
    assert mean["checks"] == len(TURN_KINDS) and mean["mean"] == pytest.approx(np.mean(list(acc.values())))
    dialogue = run_benchmark(load_scorer("utterance_length"), "sanity_dialogue", data_dir=tiny_data, n_boot=50)
    shuffled = [r for r in dialogue.rows if r["aspect"] == "original>shuffled"]
    assert [(r["subset"], r["accuracy"]) for r in shuffled] == [("dailydialog", 0.5), ("fed", 0.5)]
