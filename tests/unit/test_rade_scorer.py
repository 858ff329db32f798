"""RADE's scorer on a tiny checkpoint (MiniLM's vocabulary, tiny layers): references required unless a retriever is
configured, several references averaged (or the best kept), BM25 pseudo-references from a corpus, scores that do not
depend on the batch, bad input named, and the shipped default on the public API."""

from __future__ import annotations

import json

import numpy as np
import pytest

import dialeval
from dialeval.errors import EmptyTurnError, InputError
from dialeval.metrics.rade.retrieval import PseudoReferences

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
    with pytest.raises(InputError, match="needs references"):
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
    assert retriever.retrieve(CONTEXTS[0], RESPONSES[0]) == "I love the sea."  # the candidate itself is skipped
    with pytest.raises(InputError, match="no pseudo-reference"):
        retriever.retrieve(["Zzzq xyzzy"], "Hello")

    pseudo = dialeval.load_scorer("rade", checkpoint=checkpoint, device="cpu", pseudo_references=str(corpus))
    assert pseudo.requires_references is False and "pseudo_references:corpus.jsonl" in pseudo.signature
    out = pseudo.score(contexts=CONTEXTS, responses=RESPONSES)
    firsts = [[r[0]] for r in REFERENCES]
    assert out.scores == scorer.score(contexts=CONTEXTS, responses=RESPONSES, references=firsts).scores
    assert out.metadata["pseudo_references"] == 3
    given = pseudo.score(contexts=CONTEXTS, responses=RESPONSES, references=REFERENCES)  # given ones win
    assert given.scores == scorer.score(contexts=CONTEXTS, responses=RESPONSES, references=REFERENCES).scores
    assert given.metadata["pseudo_references"] == 0

    corpus.write_text('{"context": "Hi", "response": "Hello"}\n{"context": 3, "response": "x"}\n')
    with pytest.raises(InputError, match=r"corpus.jsonl:2: 'context' must be"):
        PseudoReferences.from_source(str(corpus))
    with pytest.raises(FileNotFoundError, match="neither 'dailydialog' nor a JSONL file"):
        PseudoReferences.from_source(str(tmp_path / "missing.jsonl"))


def test_a_checkpoint_without_reference_input_needs_no_reference(tmp_path):
    plain = dialeval.load_scorer("rade", checkpoint=_save(tmp_path / "plain", use_reference=False), device="cpu")
    assert plain.requires_references is False
    without = plain.score(contexts=CONTEXTS, responses=RESPONSES).scores
    assert without == plain.score(contexts=CONTEXTS, responses=RESPONSES, references=REFERENCES).scores


def test_the_shipped_default_scores_offline():
    out = dialeval.score("rade", contexts=CONTEXTS[:1], responses=RESPONSES[:1], references=REFERENCES[:1])
    assert 1 <= out.scores[0] <= 5 and "metric:rade|checkpoint:default" in out.signature
