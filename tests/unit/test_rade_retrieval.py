"""RADE's pseudo-reference retrieval on a corpus made here: BM25 for a context that shares a word with the corpus,
the token-embedding nearest neighbour for one that does not ("?", only stop words), the route of each said, never the
candidate itself, and nothing that depends on what else was retrieved."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dialeval.errors import InputError
from dialeval.metrics.rade.retrieval import BM25, EMBEDDING, PseudoReference, PseudoReferences, TokenEmbeddingIndex

ROWS = [{"context": ["Do you like the beach?"], "response": "Yes, I swim there every week."},
        {"context": "Why?", "response": "Because it is cheaper."},
        {"context": ["The forecast says heavy rain over the northern hills", "tomorrow morning, sadly."],
         "response": "Then we take the umbrellas."},
        {"context": "Are you sure about the price of the tickets?", "response": "Yes, I checked twice."}]


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return path


def test_a_context_with_a_corpus_word_takes_bm25(corpus):
    found = PseudoReferences.from_source(str(corpus)).retrieve(["I went to the beach today."], "Nice!")
    assert found == PseudoReference("Yes, I swim there every week.", BM25)


def test_a_context_bm25_cannot_match_takes_the_nearest_by_token_embeddings(corpus):
    retriever = PseudoReferences.from_source(str(corpus))
    # "?" has no word, "Is it?" only English stop words: BM25 ranks nothing for either
    assert len(retriever._index.ranked("?")) == 0 and len(retriever._index.ranked("Is it?")) == 0
    # "?" is nearest to "Why?" (same punctuation, short), not to the long weather context
    assert retriever.retrieve(["?"], "Hello") == PseudoReference("Because it is cheaper.", EMBEDDING)
    found = retriever.retrieve(["Is it?"], "Hello")
    assert found.route == EMBEDDING and found.text in [r["response"] for r in ROWS]


def test_the_embedding_route_skips_the_candidate_and_depends_on_nothing_else(corpus):
    fresh = PseudoReferences.from_source(str(corpus))
    first = fresh.retrieve(["?"], "Hello").text
    assert fresh.retrieve(["?"], first) != PseudoReference(first, EMBEDDING)  # the candidate is never its reference
    assert fresh.retrieve(["?"], first).route == EMBEDDING

    used = PseudoReferences.from_source(str(corpus))
    for context in (["Is it?"], ["..."], ["Do you like the beach?"]):
        used.retrieve(context, "Hello")
    assert used.retrieve(["?"], "Hello") == fresh.retrieve(["?"], "Hello")


def test_a_text_vector_does_not_depend_on_its_batch():
    index = TokenEmbeddingIndex(["Why?", "Because it is cheaper."])
    alone = index.embed(["?"])
    together = index.embed(["A much longer text with many more tokens than the other one.", "?"])
    assert np.array_equal(alone[0], together[1])
    assert np.linalg.norm(alone[0]) == pytest.approx(1.0, abs=1e-6)
    assert index.ranked("Why?").tolist() == [0, 1]  # the same text is nearest
    assert index.ranked("It is cheaper, because.").tolist() == [1, 0]


def test_a_corpus_of_only_the_candidate_has_no_pseudo_reference(tmp_path):
    path = tmp_path / "same.jsonl"
    path.write_text(json.dumps({"context": "Hi", "response": "Hello"}) + "\n")
    with pytest.raises(InputError, match=r"no pseudo-reference in same.jsonl for the context '\?': every reply"):
        PseudoReferences.from_source(str(path)).retrieve(["?"], "hello ")
