"""The ensemble's member sets and training options: references and controls (length, turn count) never join by
default, a dialogue-level weight comes from the turn-level one, and the ensemble's commands offer none of the
training loop's options (it has no loop)."""

from __future__ import annotations

import pytest

from dialeval.metrics.ensemble.combiners import Combiner
from dialeval.metrics.ensemble.members import dialogue_combiner
from dialeval.metrics.ensemble.options import EnsembleLooOptions, EnsembleTrainingOptions
from dialeval.metrics.ensemble.roster import (
    CONTROLS,
    MEMBER_SETS,
    MEMBERS,
    WITH_REFERENCES,
    MemberSpec,
    dialogue_members,
)
from dialeval.training.options import TrainingOptionsError


def test_only_the_counterpart_with_references_reads_them():
    for name, members in MEMBER_SETS.items():
        reads = any(MEMBERS[m].reads_references for m in members)
        assert reads == (name in WITH_REFERENCES.values()), name
    assert set(MEMBER_SETS["fast"]) <= set(MEMBER_SETS["full"])


def test_the_base_set_is_full_with_the_base_heads_in_place_of_their_minilm_heads():
    heads = {"bert_ruber_unref": "bert_ruber_unref_base", "pone": "pone_base", "dynaeval": "dynaeval_base"}
    assert MEMBER_SETS["base"] == tuple(heads.get(m, m) for m in MEMBER_SETS["full"])
    for minilm, name in heads.items():
        base = MEMBERS[name]
        assert (base.metric, dict(base.options), base.levels) == (minilm, {"checkpoint": "base"}, ("turn", "dialogue"))
        assert MemberSpec.from_json(base.to_json(), where="config.json") == base  # the checkpoint keeps the option


def test_a_control_is_only_in_the_set_that_names_it():
    for name, members in MEMBER_SETS.items():
        assert any(m in CONTROLS for m in members) == (name == "full+length"), name
    assert dialogue_members(MEMBER_SETS["full"]) == MEMBER_SETS["full"]  # no turn count beside it either
    assert dialogue_members(MEMBER_SETS["full+length"])[-2:] == CONTROLS


def test_the_dialogue_weights_are_the_turn_weights_with_length_shared_by_turn_count():
    members = ("grade", "utterance_length", "dynaeval")
    assert dialogue_members(members) == ("grade", "utterance_length", "turn_count", "dynaeval")
    turn = Combiner("ridge", {"grade": 0.5, "utterance_length": 0.2, "dynaeval": -0.1}, intercept=0.3)
    dialogue = dialogue_combiner(turn)
    assert dialogue.weights == {"grade": 0.5, "utterance_length": 0.1, "turn_count": 0.1, "dynaeval": -0.1}
    assert dialogue.intercept == 0.3 and dialogue.kind == "ridge"
    with pytest.raises(ValueError, match="member rade has no dialogue-level score"):
        dialogue_combiner(Combiner("mean", {"grade": 0.5, "rade": 0.5}))


@pytest.mark.parametrize("bad, message", [
    (dict(full_members="grade,rade"), "never by default"),
    (dict(full_members="grade,grade"), "named twice"),
    (dict(fast_members="pone,bleu"), "unknown member 'bleu'"),
    (dict(full_members="grade,turn_count"), "turn_count is a dialogue-level member"),
    (dict(full_members="grade,utterance_length"), "full_members: utterance_length is a control"),
    (dict(fast_members="pone,utterance_length"), "fast_members: utterance_length is a control"),
    (dict(base_members="grade,rade"), "base_members: a member that reads references cannot be in 'base'"),
    (dict(base_members="grade,utterance_length"), "base_members: utterance_length is a control"),
])
def test_options_the_ensemble_cannot_use_are_refused_naming_the_option(bad, message):
    with pytest.raises(TrainingOptionsError, match=message):
        EnsembleTrainingOptions(output_dir="runs/x", **bad)


@pytest.mark.parametrize("command", [["train", "ensemble"], ["ensemble", "loo"]])
def test_the_ensemble_offers_none_of_the_loops_options(command):
    from typer.testing import CliRunner

    from dialeval.cli import app

    res = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "--batch-size" in res.output and "--cache-dir" in res.output
    for flag in ("--epochs", "--learning-rate", "--eval-every", "--max-steps", "--max-minutes",
                 "--gradient-accumulation", "--precision", "--fused-optimizer", "--dataloader-workers"):
        assert flag not in res.output, flag
    assert "Not used" not in res.output
    with pytest.raises(TypeError, match="epochs"):
        EnsembleLooOptions(output_dir="runs/x", epochs=3)


def test_the_member_sets_of_the_options():
    lists = EnsembleTrainingOptions(output_dir="runs/x").member_lists()
    assert lists == {name: MEMBER_SETS[name] for name in ("full", "fast", "base", "full+rade", "full+length")}
    custom = EnsembleLooOptions(output_dir="runs/x", members="pone,amr_eval").member_lists()
    assert custom == {"custom": ("pone", "amr_eval")}
    assert EnsembleTrainingOptions(output_dir="runs/x", full_members="grade,pone").member_lists()["full+length"] == (
        "grade", "pone", "utterance_length")
