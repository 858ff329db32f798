"""RADE's scorer on a tiny checkpoint (MiniLM's vocabulary, tiny layers): references required unless a retriever is
configured, several references averaged (or the best kept), pseudo-references from a corpus (BM25, or the
token-embedding fallback for a context BM25 cannot match, each route counted), scores that do not depend on the
batch, bad input named, and the shipped default on the public API (with the scorer's options)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import dialeval
from dialeval.errors import EmptyTurnError, InputError, UnknownNameError
from dialeval.metrics.rade.retrieval import BM25, EMBEDDING, PseudoReference, PseudoReferences

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TINY = {"vocab_size": 30522, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
        "intermediate_size": 64, "max_position_embeddings": 128, "type_vocab_size": 2, "pad_token_id": 0}
CONTEXTS = [["Do you like the beach?"], ["What did you cook?", "Pasta with tomato sauce."], ["Any plans tonight?"]]
RESPONSES = ["Yes, I swim there every week.", "It sounds delicious, share the recipe!", "Bananas are yellow."]
REFERENCES = [["I love the sea."], ["Yum, can I have some?", "Nice, I like pasta."], ["A movie with friends."]]


def _save(path, **config):
    import torch

    from dialeval.modeling.rade import RadeConfig, RadeModel

    torch.manual_seed(0)
    model = RadeModel(RadeConfig(encoder_config=dict(TINY), regressor_dims=[8], max_seq_length=96,
                                 max_reference_length=24, use_decoder=False, **config))
    model.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return _save(tmp_path_factory.mktemp("rade") / "ckpt")


@pytest.fixture(scope="module")
def scorer(checkpoint):
    return dialeval.load_scorer("rade", checkpoint=checkpoint, device="cpu")


def test_scores_are_on_the_human_scale_and_batch_independent(scorer):
    out = scorer.score(contexts=CONTEXTS, responses=RESPONSES, references=REFERENCES, batch_size=1)
    again = scorer.score(contexts=CONTEXTS, responses=RESPONSES, references=REFERENCES, batch_size=64)
    assert out.scores == again.scores and all(1 < s < 5 for s in out.scores)
    assert out.metadata["references_read"] == 4 and "reference_aggregation:mean" in out.signature


def test_several_references_are_averaged_or_the_best_is_kept(checkpoint, scorer):
    single = [scorer.score(contexts=[CONTEXTS[1]], responses=[RESPONSES[1]], references=[[r]]).scores[0]
              for r in REFERENCES[1]]
    both = scorer.score(contexts=[CONTEXTS[1]], responses=[RESPONSES[1]], references=[REFERENCES[1]]).scores[0]
    assert both == pytest.approx(np.mean(single), abs=1e-12)
    best = dialeval.load_scorer("rade", checkpoint=checkpoint, device="cpu", reference_aggregation="max")
    assert best.score(contexts=[CONTEXTS[1]], responses=[RESPONSES[1]], references=[REFERENCES[1]]).scores[0] == \
        pytest.approx(max(single), abs=1e-12)
    with pytest.raises(ValueError, match="reference_aggregation must be one of mean, max"):
        dialeval.load_scorer("rade", checkpoint=checkpoint, reference_aggregation="median")


def test_bad_input_is_named(scorer):
    with pytest.raises(InputError, match=r"needs references; pass references=\[...\] \(one per item\); or load it "
                                         r"with pseudo_references='dailydialog' .* in the data directory"):
        scorer.score(contexts=CONTEXTS, responses=RESPONSES)
    with pytest.raises(InputError, match="references has 2 items but responses has 3"):
        scorer.score(contexts=CONTEXTS, responses=RESPONSES, references=REFERENCES[:2])
    with pytest.raises(EmptyTurnError, match=r"references\[2\]"):
        scorer.score(contexts=CONTEXTS, responses=RESPONSES, references=[*REFERENCES[:2], "  "])
    skipped = scorer.score(contexts=CONTEXTS, responses=RESPONSES, references=[*REFERENCES[:2], ""],
                           empty_turns="skip")
    assert skipped.scores[2] is None and skipped.scores[:2] == scorer.score(
        contexts=CONTEXTS[:2], responses=RESPONSES[:2], references=REFERENCES[:2]).scores


def test_pseudo_references_come_from_the_most_similar_corpus_context(checkpoint, scorer, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    rows = [{"context": ["Do you like the beach?"], "response": "Yes, I swim there every week."},  # = the candidate
            {"context": "Do you like the beach in summer?", "response": "I love the sea."},
            {"context": ["What did you cook?", "Pasta with tomato sauce."], "response": "Yum, can I have some?"},
            {"context": "Any plans tonight?", "response": "A movie with friends."}]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    retriever = PseudoReferences.from_source(str(corpus))
    # the candidate itself is skipped
    assert retriever.retrieve(CONTEXTS[0], RESPONSES[0]) == PseudoReference("I love the sea.", BM25)
    assert retriever.retrieve(["Zzzq xyzzy"], "Hello").route == EMBEDDING  # no shared word: the fallback

    pseudo = dialeval.load_scorer("rade", checkpoint=checkpoint, device="cpu", pseudo_references=str(corpus))
    assert pseudo.requires_references is False and "pseudo_references:corpus.jsonl" in pseudo.signature
    out = pseudo.score(contexts=CONTEXTS, responses=RESPONSES)
    firsts = [[r[0]] for r in REFERENCES]
    assert out.scores == scorer.score(contexts=CONTEXTS, responses=RESPONSES, references=firsts).scores
    assert out.metadata["pseudo_references"] == 3
    assert out.metadata["pseudo_reference_routes"] == {BM25: 3, EMBEDDING: 0}
    given = pseudo.score(contexts=CONTEXTS, responses=RESPONSES, references=REFERENCES)  # given ones win
    assert given.scores == scorer.score(contexts=CONTEXTS, responses=RESPONSES, references=REFERENCES).scores
    assert given.metadata["pseudo_references"] == 0
    assert given.metadata["pseudo_reference_routes"] == {BM25: 0, EMBEDDING: 0}

    corpus.write_text('{"context": "Hi", "response": "Hello"}\n{"context": 3, "response": "x"}\n')
    with pytest.raises(InputError, match=r"corpus.jsonl:2: 'context' must be"):
        PseudoReferences.from_source(str(corpus))
    with pytest.raises(FileNotFoundError, match="neither 'dailydialog' nor a JSONL file"):
        PseudoReferences.from_source(str(tmp_path / "missing.jsonl"))


def test_contexts_bm25_cannot_match_score_beside_a_normal_one(checkpoint, scorer, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    rows = [{"context": "Do you like the beach in summer?", "response": "I love the sea."},
            {"context": "Why?", "response": "Because it is cheaper."},
            {"context": "What did you cook?", "response": "Yum, can I have some?"}]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pseudo = dialeval.load_scorer("rade", checkpoint=checkpoint, device="cpu", pseudo_references=str(corpus))
    odd = [["?"], ["Is it?", "..."]]  # no word at all; only stop words and punctuation
    out = pseudo.score(contexts=[CONTEXTS[0], *odd], responses=[RESPONSES[0], "Sure.", "Okay."])
    assert all(1 < s < 5 for s in out.scores)
    assert out.metadata["pseudo_references"] == 3
    assert out.metadata["pseudo_reference_routes"] == {BM25: 1, EMBEDDING: 2}
    alone = pseudo.score(contexts=[CONTEXTS[0]], responses=[RESPONSES[0]])
    assert out.scores[0] == alone.scores[0] and alone.metadata["pseudo_reference_routes"] == {BM25: 1, EMBEDDING: 0}
    # each score is the model's score against the retrieved reply, the same as passing that reply as the reference
    found = [pseudo.retriever.retrieve(c, r) for c, r in zip(odd, ["Sure.", "Okay."])]
    assert found[0] == PseudoReference("Because it is cheaper.", EMBEDDING) and found[1].route == EMBEDDING
    explicit = scorer.score(contexts=odd, responses=["Sure.", "Okay."], references=[[f.text] for f in found])
    assert out.scores[1:] == explicit.scores


def test_pseudo_references_through_the_one_off_api(checkpoint, scorer, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"context": "Do you like the beach in summer?", "response": "I love the sea."})
                      + "\n")
    out = dialeval.score("rade", checkpoint=checkpoint, device="cpu", pseudo_references=str(corpus),
                         contexts=CONTEXTS[:1], responses=RESPONSES[:1], batch_size=2)
    assert out.scores == scorer.score(contexts=CONTEXTS[:1], responses=RESPONSES[:1],
                                      references=[["I love the sea."]]).scores
    assert "pseudo_references:corpus.jsonl" in out.signature and out.metadata["pseudo_references"] == 1
    with pytest.raises(UnknownNameError, match=r"unknown 'rade' option 'pseudo_reference'; did you mean "
                                               r"'pseudo_references'.*choices: checkpoint, .*, data_dir, contexts"):
        dialeval.score("rade", checkpoint=checkpoint, pseudo_reference=str(corpus), contexts=CONTEXTS[:1],
                       responses=RESPONSES[:1])


def test_a_checkpoint_without_reference_input_needs_no_reference(tmp_path):
    plain = dialeval.load_scorer("rade", checkpoint=_save(tmp_path / "plain", use_reference=False), device="cpu")
    assert plain.requires_references is False
    without = plain.score(contexts=CONTEXTS, responses=RESPONSES).scores
    assert without == plain.score(contexts=CONTEXTS, responses=RESPONSES, references=REFERENCES).scores


def test_the_shipped_default_scores_offline():
    out = dialeval.score("rade", contexts=CONTEXTS[:1], responses=RESPONSES[:1], references=REFERENCES[:1])
    assert 1 <= out.scores[0] <= 5 and "metric:rade|checkpoint:default" in out.signature


def test_the_command_line_without_references_names_pseudo_references_and_the_data_directory(checkpoint, tmp_path):
    """Issue 50: `dialeval score --metric rade` on rows without references names the option that finds one and the
    data directory it reads; with the option and a missing data directory the error names the directory once and
    says why it is read; `--data-dir` points at one, and the rows are scored (counted as pairs)."""
    from typer.testing import CliRunner

    from conftest import TINY_DIALOGUES, write_dailydialog
    from dialeval.cli import app

    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"context": c, "response": r}) + "\n" for c, r in zip(CONTEXTS, RESPONSES)))
    base = ["score", "--metric", "rade", "--checkpoint", str(checkpoint), "-i", str(rows)]
    runner = CliRunner()
    res = runner.invoke(app, base)
    assert res.exit_code == 2
    assert (f"error: {rows}:1: no 'references' field; metric 'rade' needs references; or load it with "
            "pseudo_references='dailydialog' (`dialeval score --option pseudo_references=dailydialog`), which "
            "retrieves one for each item from DailyDialog's training dialogues in the data directory (data_dir= or "
            "--data-dir, else $DIALEVAL_DATA_DIR, else ../shared/data)") in res.stderr

    missing = tmp_path / "no-data"
    res = runner.invoke(app, [*base, "--option", "pseudo_references=dailydialog", "--data-dir", str(missing)])
    assert res.exit_code == 2
    assert ("error: pseudo_references='dailydialog' reads DailyDialog's training dialogues from the data directory: "
            f"data directory not found (tried: {missing}); pass data_dir=... / --data-dir") in res.stderr

    data = write_dailydialog(tmp_path / "data", {split: TINY_DIALOGUES for split in ("train", "validation", "test")})
    res = runner.invoke(app, [*base, "--option", "pseudo_references=dailydialog", "--data-dir", str(data)])
    assert res.exit_code == 0, res.stderr
    assert "pairs: 3  system score: " in res.stdout and "pseudo_references:dailydialog" in res.stdout

