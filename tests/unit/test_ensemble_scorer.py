"""The ensemble scorer over fake members declared from this test (registry.register): an item's score is the same
alone as in a batch, bit for bit; references join only when asked for and are then required; a member that changed
since the fit is refused; the scorer works through load_scorer, dialeval.score and `dialeval score`. A tiny checkpoint
is written by hand; no model, no data."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from typer.testing import CliRunner

import dialeval
from dialeval.cli import app
from dialeval.errors import InputError
from dialeval.scoring.calibration import EmpiricalCdf
from dialeval.metrics.ensemble.checkpoint import CheckpointError, EnsembleConfig, MemberSetConfig
from dialeval.metrics.ensemble.combiners import Combiner
from dialeval.metrics.ensemble.members import identity, identity_text
from dialeval.metrics.ensemble.roster import MemberSpec
from dialeval.metrics.ensemble.scorer import MemberChanged
from dialeval.scoring import registry
from dialeval.scoring.base import Scorer
from dialeval.scoring.spec import MetricSpec


class FakeWords(Scorer):
    """Words of the response, scaled by a setting (a member small enough to declare in a test)."""

    name = "fake_words"

    def __init__(self, *, scale: float = 1.0, device=None) -> None:
        super().__init__()
        self.scale = scale

    def _score_items(self, items, *, batch_size, progress_bar):
        return np.array([self.scale * len(it.response.split()) for it in items], dtype=np.float64)

    def fingerprint(self):
        return {"scale": str(self.scale)}


class FakeOverlap(Scorer):
    """Share of the response's words found in the context (another fake member)."""

    name = "fake_overlap"

    def _score_items(self, items, *, batch_size, progress_bar):
        out = []
        for it in items:
            context = set(" ".join(t.text for t in it.context).lower().split())
            words = it.response.lower().split()
            out.append(sum(w in context for w in words) / len(words))
        return np.array(out, dtype=np.float64)


class FakeReference(Scorer):
    """Share of the response's words found in its reference; finds a pseudo-reference when asked to."""

    name = "fake_reference"

    def __init__(self, *, pseudo_references: str | None = None, data_dir=None, device=None) -> None:
        super().__init__()
        self.pseudo_references = pseudo_references
        self.requires_references = pseudo_references is None

    def _score_items(self, items, *, batch_size, progress_bar):
        out = []
        for it in items:
            reference = set((it.references[0] if it.references else "pseudo reply").lower().split())
            words = it.response.lower().split()
            out.append(sum(w in reference for w in words) / len(words))
        return np.array(out, dtype=np.float64)

    def fingerprint(self):
        return {"pseudo_references": str(self.pseudo_references)} if self.pseudo_references else {}


FAKES = [MetricSpec(name=cls.name, scorer=f"{__name__}:{cls.__name__}", kind="baseline")
         for cls in (FakeWords, FakeOverlap, FakeReference)]
SPECS = {"words": MemberSpec("words", "fake_words", {"scale": 2.0}), "overlap": MemberSpec("overlap", "fake_overlap"),
         "reference": MemberSpec("reference", "fake_reference", levels=("turn",), reads_references=True),
         "turn_count": MemberSpec("turn_count", None, levels=("dialogue",))}
RNG = np.random.default_rng(3)


@pytest.fixture(scope="module")
def fake_members():
    for spec in FAKES:
        registry.register(spec)
    try:
        yield
    finally:
        for spec in FAKES:
            registry.unregister(spec.name)


def _cdf(values):
    return EmpiricalCdf.fit(values, source="synthetic", points=11)


def _config(**identity_override) -> EnsembleConfig:
    identities = {"words": identity(FakeWords(scale=2.0)), "overlap": identity(FakeOverlap()),
                  "reference": identity(FakeReference()), "turn_count": {"metric": "turn_count",
                                                                         "definition": "number_of_turns"}}
    identities.update(identity_override)
    turn = Combiner("ridge", {"words": 0.4, "overlap": 1.1}, intercept=-0.3, setting={"alpha": 0.1})
    with_ref = Combiner("mean", {"words": 1 / 3, "overlap": 1 / 3, "reference": 1 / 3})
    dialogue = Combiner("ridge", {"words": 0.2, "overlap": 1.1, "turn_count": 0.2}, intercept=-0.3)
    base = MemberSetConfig("full", ("words", "overlap"), ("words", "overlap", "turn_count"), False, turn, dialogue,
                           {"with_references": "full+ref"})
    refs = MemberSetConfig("full+ref", ("words", "overlap", "reference"), (), True, with_ref, None)
    return EnsembleConfig(
        members=SPECS, identities=identities,
        turn_calibration={"words": _cdf(RNG.integers(2, 40, 50)), "overlap": _cdf(RNG.uniform(size=50)),
                          "reference": _cdf(RNG.uniform(size=50))},
        dialogue_calibration={"words": _cdf(RNG.uniform(2, 40, 50)), "overlap": _cdf(RNG.uniform(size=50)),
                              "turn_count": _cdf(RNG.integers(2, 12, 50))},
        member_sets={"full": base, "full+ref": refs}, default_member_set="full")


@pytest.fixture
def checkpoint(tmp_path, fake_members):
    _config().save(tmp_path / "ens")
    return tmp_path / "ens"


CONTEXTS = [["Do you like the sea?"], ["I lost my keys today.", "Where did you last see them?"], "Any plans?",
            ["The train is late again."], ["What is your favourite book?"]]
RESPONSES = ["Yes, I love the sea in summer.", "I think I left them at the office.", "Not yet.",
             "Let us get a coffee while we wait.", "A long novel about the sea and a whale."]
REFERENCES = [["I love swimming in the sea."], ["Maybe at work."], ["Nothing much."], ["How late is it?"],
              ["Moby Dick, I think."]]


def test_an_item_scores_the_same_alone_as_in_a_batch_bit_for_bit(checkpoint):
    scorer = dialeval.load_scorer("ensemble", checkpoint=checkpoint)
    together = scorer.score(contexts=CONTEXTS, responses=RESPONSES, batch_size=2)
    alone = [scorer.score(contexts=[c], responses=[r], batch_size=1).scores[0] for c, r in zip(CONTEXTS, RESPONSES)]
    reordered = scorer.score(contexts=CONTEXTS[::-1], responses=RESPONSES[::-1]).scores[::-1]
    assert np.asarray(together.scores).tobytes() == np.asarray(alone).tobytes() == np.asarray(reordered).tobytes()
    # the score is the stored combination of the calibrated members
    config = EnsembleConfig.load(checkpoint)
    words = config.turn_calibration["words"](2.0 * np.array([len(r.split()) for r in RESPONSES]))
    overlap = config.turn_calibration["overlap"](np.asarray(together.metadata["overlap_scores"]))
    np.testing.assert_allclose(together.scores, -0.3 + 0.4 * words + 1.1 * overlap, rtol=0, atol=1e-15)
    assert together.metadata["member_set"] == "full" and together.metadata["combiner"] == "ridge"
    assert together.metadata["words_calibrated_scores"] == words.tolist()


def test_references_join_only_when_asked_for_and_are_then_required(checkpoint):
    plain = dialeval.load_scorer("ensemble", checkpoint=checkpoint)
    assert not plain.requires_references and "reference" not in plain.members
    assert plain.score(contexts=CONTEXTS, responses=RESPONSES, references=REFERENCES).metadata["members"] == [
        "words", "overlap"]  # references given to the plain set are not read by anyone
    with_refs = dialeval.load_scorer("ensemble", checkpoint=checkpoint, use_references=True)
    assert with_refs.member_set == "full+ref" and with_refs.requires_references
    with pytest.raises(InputError, match="needs references"):
        with_refs.score(contexts=CONTEXTS, responses=RESPONSES)  # an error, never a silent drop of the member
    out = with_refs.score(contexts=CONTEXTS, responses=RESPONSES, references=REFERENCES)
    assert out.metadata["members"] == ["words", "overlap", "reference"]
    pseudo = dialeval.load_scorer("ensemble", checkpoint=checkpoint, use_references=True, pseudo_references="corpus")
    assert not pseudo.requires_references and "pseudo_references:corpus" in pseudo.signature
    assert len(pseudo.score(contexts=CONTEXTS, responses=RESPONSES).scores) == 5
    with pytest.raises(InputError, match="pseudo_references feeds RADE"):
        dialeval.load_scorer("ensemble", checkpoint=checkpoint, pseudo_references="corpus")
    with pytest.raises(InputError, match="needs references and cannot score dialogues"):
        with_refs.score_dialogues(dialogues=[["Hi!", "Hello."]])
    with pytest.raises(InputError, match="has no dialogue level"):
        pseudo.score_dialogues(dialogues=[["Hi!", "Hello."]])


def test_bad_input_is_an_error_naming_the_item_and_field(checkpoint):
    scorer = dialeval.load_scorer("ensemble", checkpoint=checkpoint)
    with pytest.raises(InputError, match=r"responses\[2\] has type int"):
        scorer.score(contexts=CONTEXTS[:3], responses=["Fine.", "Sure.", 7])
    with pytest.raises(InputError, match=r"contexts\[1\]\[0\]"):
        scorer.score(contexts=[["Hi"], ["  "]], responses=["Hello.", "Hey."])
    skipped = scorer.score(contexts=[["Hi"], ["  "], ["Yo"]], responses=["Hello there.", "Hey.", "Yo yo."],
                           empty_turns="skip")
    assert skipped.scores[1] is None and skipped.metadata["words_scores"][1] is None
    assert skipped.scores[0] == scorer.score(contexts=[["Hi"]], responses=["Hello there."]).scores[0]


def test_dialogues_are_scored_with_the_turn_weights_and_the_turn_count(checkpoint):
    scorer = dialeval.load_scorer("ensemble", checkpoint=checkpoint)
    dialogues = [["Hi!", "Hello, how are you?", "Fine, thanks."], ["Any news?", "None at all.", "Ok.", "Bye."]]
    out = scorer.score_dialogues(dialogues=dialogues)
    assert out.metadata["members"] == ["words", "overlap", "turn_count"]
    assert out.metadata["turn_count_scores"] == [3.0, 4.0]
    alone = [scorer.score_dialogues(dialogues=[d]).scores[0] for d in dialogues]
    assert np.asarray(out.scores).tobytes() == np.asarray(alone).tobytes()


def test_a_member_that_changed_since_the_fit_is_refused(tmp_path, fake_members):
    _config(words={"metric": "fake_words", "scale": "3.0"}).save(tmp_path / "ens")
    with pytest.raises(MemberChanged, match=r"member words .* \(\{'scale': '3.0'\} then, \{'scale': '2.0'\} now\): "
                                            r"refit it with `dialeval train ensemble"):
        dialeval.load_scorer("ensemble", checkpoint=tmp_path / "ens")


def test_a_config_the_scorer_cannot_use_is_an_error_naming_the_field(tmp_path, fake_members):
    data = _config().to_json()
    data["member_sets"]["full"]["turn"]["weights"] = {"words": 0.5}
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match=r"member_sets.full.turn: weights name \['words'\], the set's members"):
        dialeval.load_scorer("ensemble", checkpoint=tmp_path)
    data = _config().to_json()
    del data["calibration"]["turn"]["overlap"]
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match="member 'overlap' has no turn-level calibration"):
        dialeval.load_scorer("ensemble", checkpoint=tmp_path)


def test_the_ensemble_scores_through_dialeval_score_and_the_command_line(checkpoint, tmp_path):
    out = dialeval.score("ensemble", checkpoint=str(checkpoint), member_set="full", contexts=CONTEXTS[:2],
                         responses=RESPONSES[:2])
    assert out.signature.startswith("metric:ensemble|checkpoint:ens|checkpoint_sha256:")
    identities = ",".join(identity_text(m, ident) for m, ident in dialeval.load_scorer(
        "ensemble", checkpoint=str(checkpoint), member_set="full").identities.items())
    assert identities.startswith("words(metric=fake_words;scale=2.0),overlap(metric=fake_overlap),turn_count(")
    members_sha256 = hashlib.sha256(identities.encode()).hexdigest()[:12]  # the identities, one short field
    assert f"|members:words,overlap,turn_count|members_sha256:{members_sha256}|" in out.signature
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"id": f"x{i}", "context": c, "response": r}) + "\n"
                              for i, (c, r) in enumerate(zip(CONTEXTS[:2], RESPONSES[:2]))))
    result = CliRunner().invoke(app, ["score", "--metric", "ensemble", "--checkpoint", str(checkpoint), "-i",
                                      str(source), "-q"])
    assert result.exit_code == 0, result.output
    assert f"x0\t{out.scores[0]:.4f}" in result.output and f"x1\t{out.scores[1]:.4f}" in result.output


def test_the_ensemble_counts_cut_items_once_whichever_members_cut_them(checkpoint, monkeypatch):
    """Two members cut the same item and one of them another: two items, one warning (the ensemble's), and each
    member's items in the metadata."""
    import warnings

    from dialeval.scoring.base import TruncationWarning

    def cuts(items):
        def metadata(self):
            return {"truncated_items": list(items), "truncated_texts": 2 * len(items)}
        return metadata

    monkeypatch.setattr(FakeWords, "_metadata", cuts([1]))
    monkeypatch.setattr(FakeOverlap, "_metadata", cuts([1, 3]))
    scorer = dialeval.load_scorer("ensemble", checkpoint=checkpoint)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        out = scorer.score(contexts=CONTEXTS, responses=RESPONSES)
    assert [str(w.message) for w in said if w.category is TruncationWarning] == [
        "ensemble: 2 of 5 items were cut to fit each member's own input limit (metadata['member_truncated_items'] "
        "says which member cut which item)"]
    assert out.metadata["truncated_items"] == [1, 3]
    assert out.metadata["member_truncated_items"] == {"words": [1], "overlap": [1, 3]}
    assert out.metadata["truncated_texts"] == 6  # the members' own counts, added up, stay beside
