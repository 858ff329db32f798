"""The ensemble on the real pieces: the shipped checkpoint loads its members from the registry and scores an item
alone as in a batch; members that run the same encoder share it without changing a score; on the real data, the
human-rated and calibration sets hold what the design says and the leave-one-out command writes its table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dialeval
from dialeval.metrics.ensemble.members import load_members, member_turn_scores
from dialeval.metrics.ensemble.roster import MEMBER_SETS, MEMBERS
from dialeval.schema import normalize_items

CONTEXTS = [["Do you want to go to the beach on Sunday?"], ["I need to buy a new phone.", "What happened to yours?"],
            ["Can you help me cook dinner?"]]
RESPONSES = ["Sure, I love swimming in the sea.", "I dropped it in the water.", "Of course, what are we making?"]


@pytest.fixture(scope="module")
def fast_ensemble(one_torch_thread):
    return dialeval.load_scorer("ensemble", member_set="fast", device="cpu")


def test_the_shipped_checkpoint_scores_an_item_alone_as_in_a_batch(fast_ensemble):
    together = fast_ensemble.score(contexts=CONTEXTS, responses=RESPONSES, batch_size=2)
    alone = [fast_ensemble.score(contexts=[c], responses=[r]).scores[0] for c, r in zip(CONTEXTS, RESPONSES)]
    assert np.asarray(together.scores).tobytes() == np.asarray(alone).tobytes()
    members = fast_ensemble.chosen.members
    assert together.metadata["members"] == list(members)
    assert set(members) <= set(MEMBER_SETS["fast"])  # those the member rule admitted
    assert "member_set:fast" in together.signature and f"|members:{','.join(members)}" in together.signature
    assert len(together.signature) < 300, together.signature  # one readable line (issue 50), not ~900 characters


def test_the_evaluate_module_scores_as_the_scorer_and_reloads_for_another_member_set(fast_ensemble):
    import evaluate

    module = evaluate.load(str(Path(__file__).resolve().parents[2] / "metrics" / "ensemble"))
    assert module._scorer is None  # nothing loads until compute() names its member set
    direct = fast_ensemble.score(contexts=CONTEXTS, responses=RESPONSES)
    out = module.compute(predictions=RESPONSES, contexts=CONTEXTS, member_set="fast")
    assert out["scores"] == direct.scores and out["signature"] == direct.signature
    assert module._scorer.member_set == "fast"
    with pytest.raises(dialeval.errors.UnknownNameError, match="nonesuch"):
        module.compute(predictions=RESPONSES, contexts=CONTEXTS, member_set="nonesuch")


def test_members_on_one_encoder_share_it_and_score_as_when_loaded_apart(one_torch_thread):
    names = ["pone", "bert_ruber_unref", "context_cosine"]
    shared = load_members([MEMBERS[m] for m in names], device="cpu")
    assert shared["pone"].encoder is shared["bert_ruber_unref"].encoder is shared["context_cosine"].encoder
    items = normalize_items(CONTEXTS, RESPONSES)
    for name in names:
        apart = dialeval.load_scorer(name, device="cpu")
        a, _ = member_turn_scores(MEMBERS[name], shared[name], items)
        b, _ = member_turn_scores(MEMBERS[name], apart, items)
        assert a.tobytes() == b.tobytes(), name


@pytest.mark.parametrize("name,metric,minilm", [("bert_ruber_unref_base", "bert_ruber_unref", "bert_ruber_unref"),
                                                 ("pone_base", "pone", "pone")])
def test_the_base_sets_base_heads_are_the_shipped_base_heads_the_checkpoint_pins(one_torch_thread, name, metric,
                                                                                 minilm):
    from dialeval.backbone import encoders
    from dialeval.metrics.ensemble.checkpoint import EnsembleConfig
    from dialeval.metrics.ensemble.members import identity
    from dialeval.scoring.checkpoints import resolve_checkpoint

    try:
        encoders.installed_folder("all-mpnet-base-v2")
    except encoders.EncoderNotInstalled as err:
        pytest.skip(str(err))
    spec = MEMBERS[name]
    member = load_members([spec], device="cpu")[spec.name]
    direct = dialeval.load_scorer(metric, checkpoint="base", device="cpu")
    scores, _ = member_turn_scores(spec, member, normalize_items(CONTEXTS, RESPONSES))
    assert scores.tobytes() == np.asarray(direct.score(contexts=CONTEXTS, responses=RESPONSES).scores).tobytes()
    shipped = EnsembleConfig.load(resolve_checkpoint(None, "ensemble", "dialeval train ensemble"))
    # the rule admitted every member but DynaEval's base head (not established above 0 on two training sets)
    assert shipped.member_sets["base"].members == tuple(m for m in MEMBER_SETS["base"] if m != "dynaeval_base")
    assert list(shipped.member_sets["base"].extra["excluded"]) == ["dynaeval_base"]
    assert shipped.identities[spec.name] == identity(member) != shipped.identities[minilm]
    assert identity(member)["checkpoint"] == "base"


@pytest.mark.data
def test_the_sets_hold_what_the_design_says(data_dir):
    from dialeval.metrics.ensemble.sets import (
        HELD_OUT,
        load_human_set,
        sanity_check_set,
        training_sets,
        turn_calibration,
    )

    sizes = {h.key: len(load_human_set(h, data_dir)) for h in (*HELD_OUT, *training_sets("validation"))}
    assert sizes == {"grade_eval/convai2": 600, "grade_eval/dailydialog": 300, "grade_eval/empatheticdialogues": 300,
                     "usr_topicalchat": 360, "usr_personachat": 300, "fed_turn": 375, "fed_dialogue": 125,
                     "rade_chitchat/test": 418, "rade_emotion/test": 596, "rade_persona/test": 602,
                     "rade_chitchat/validation": 414, "rade_emotion/validation": 542,
                     "rade_persona/validation": 562, "dailydialog_pp/test": 900}
    discrimination = load_human_set(HELD_OUT[-1], data_dir)  # per context: a human reply, two negatives
    assert discrimination.human[:6].tolist() == [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    assert all(it.references == discrimination.items[0].references for it in discrimination.items[:3])
    assert discrimination.items[0].references[0] != discrimination.items[0].response
    calibration = turn_calibration(data_dir, dialogues=20, seed=0)
    assert calibration.kinds == ("positive",) * 20 + ("negative",) * 20
    assert [it.context for it in calibration.items[:20]] == [it.context for it in calibration.items[20:]]
    assert all(p.response != n.response for p, n in zip(calibration.items[:20], calibration.items[20:]))
    assert turn_calibration(data_dir, dialogues=20, seed=0).content == calibration.content  # seeded
    checks = sanity_check_set(data_dir)  # sanity_turn's validation split: each gold reply, then its perturbations
    assert checks.key == "checks/sanity_turn/validation" and len(checks.items) == 300 * 7
    assert checks.kinds[:7] == ("gold", "random", "similar", "shuffled", "dropped", "context_copy", "truncated")
    assert checks.items[5].response == checks.items[0].context[-1].text  # the copy repeats the last context turn
    assert all("/validation/" in i for i in checks.ids)


@pytest.mark.data
def test_the_leave_one_out_command_fits_on_the_eleven_sets_and_names_a_fold_it_cannot_fit(data_dir, tmp_path):
    """Length alone (a control: no model, so the sets score in seconds) agrees with DailyDialog++'s labels at about
    -0.5, so without RADE's emotion set, where it agrees at about +0.5, its mean over a fold's training sets is below
    0 and correlation re-scaling has no member to weigh: the command stops and names that fold's sets (DailyDialog++
    among them). The table itself on real data comes from `dialeval train ensemble` (the card); the unit tests
    check how it is built."""
    from typer.testing import CliRunner

    from dialeval.cli import app

    result = CliRunner().invoke(app, [
        "ensemble", "loo", "--output-dir", str(tmp_path / "loo"), "--cache-dir", str(tmp_path / "cache"),
        "--data-dir", str(data_dir), "--members", "utterance_length", "--calibration-dialogues", "20",
        "--dialogue-calibration-dialogues", "20", "--bootstrap", "20"])
    assert result.exit_code != 0
    assert ("mme_crs: no member correlates positively with the human ratings of the training sets (grade_eval/convai2"
            in result.output)
    assert "dailydialog_pp/test, rade_chitchat/validation, rade_persona/validation)" in result.output
    assert "dailydialog_pp/test (900 turns)" in result.output  # the discrimination set was scored
