"""Baseline metrics: known values, multi-reference, order, batch-size invariance, determinism, edge inputs.

Runs offline (bundled MiniLM, bundled GloVe); one encoder is loaded for the whole module.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dialeval import InputError, load_scorer
from dialeval.backbone import Encoder, default_encoder_path, weights_fingerprint
from dialeval.baselines.bertscore import BertScoreScorer
from dialeval.baselines.cosine import ContextCosineScorer
from dialeval.baselines.glove import (
    EmbeddingAverageScorer,
    GreedyMatchingScorer,
    VectorExtremaScorer,
    load_glove,
    tokenize,
)
from dialeval.baselines.overlap import Bleu4Scorer, RougeLScorer
from dialeval.scoring.registry import metric_spec

GLOVE = (EmbeddingAverageScorer, VectorExtremaScorer, GreedyMatchingScorer)
MAX_OVER_REFS = (RougeLScorer, *GLOVE, BertScoreScorer)

CONTEXTS = [
    "Hi, how are you?",
    ["Do you have any pets?", "Yes, I have two dogs."],
    "What did you do last weekend?",
    [{"role": "user", "content": "I'm planning a trip to Japan."}, {"role": "assistant", "content": "Nice!"}],
    "Can you recommend a good book?",
    "ok",
    "Where do you work?",
]
RESPONSES = [
    "I'm fine, thanks. And you?",
    "What are their names?",
    "I went hiking in the mountains with my friends.",
    "When are you leaving?",
    "Try 'The Hobbit', it is a classic fantasy novel.",
    "ok",
    "I work at a small bakery downtown, mostly early mornings.",
]
REFERENCES = [
    "Good, and you?",
    ["What breed are they?", "Cool, what are their names?"],
    "I stayed home and watched movies.",
    "Have fun! Which cities will you visit?",
    ["I loved reading Dune last year.", "Have you read The Hobbit?"],
    "sure",
    "At a hospital, I'm a nurse.",
]


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return Encoder(device="cpu")


@pytest.fixture(scope="module")
def scorers(encoder):
    out = {cls: cls() for cls in (Bleu4Scorer, RougeLScorer, *GLOVE)}
    out[BertScoreScorer] = BertScoreScorer(encoder)
    out[ContextCosineScorer] = ContextCosineScorer(encoder)
    return out


def _score(scorer, contexts, responses, references=None, **kw):
    if not scorer.requires_references:
        references = None
    return scorer.score(contexts=contexts, responses=responses, references=references, **kw)


def _single(scorer, response, reference, context="hi"):
    return _score(scorer, [context], [response], [reference]).scores[0]


# -- registry / API --------------------------------------------------------------------------------------------------
def test_registry_names_resolve_to_these_classes():
    expected = {
        "bleu4": Bleu4Scorer,
        "rougeL": RougeLScorer,
        "embedding_average": EmbeddingAverageScorer,
        "vector_extrema": VectorExtremaScorer,
        "greedy_matching": GreedyMatchingScorer,
        "bertscore": BertScoreScorer,
        "context_cosine": ContextCosineScorer,
    }
    for name, cls in expected.items():
        assert metric_spec(name).scorer.endswith(":" + cls.__name__)
        assert cls.name == name
        assert cls.requires_references == (name != "context_cosine")
    assert isinstance(load_scorer("bleu4"), Bleu4Scorer)


@pytest.mark.parametrize("cls", [Bleu4Scorer, RougeLScorer, *GLOVE, BertScoreScorer])
def test_referenced_metric_without_references_names_the_field(scorers, cls):
    with pytest.raises(InputError, match="references"):
        scorers[cls].score(contexts=["hi"], responses=["hello"])


def test_signature_names_metric_and_encoder_hash(scorers):
    sha = weights_fingerprint(default_encoder_path())
    for cls in (BertScoreScorer, ContextCosineScorer):
        sig = scorers[cls].signature
        assert f"metric:{cls.name}" in sig
        assert f"encoder_sha256:{sha}" in sig
        assert "encoder:all-MiniLM-L6-v2" in sig
    # a lazily built scorer (default encoder) has the same signature as one sharing a loaded encoder
    assert BertScoreScorer().signature == scorers[BertScoreScorer].signature
    for cls in (Bleu4Scorer, RougeLScorer, *GLOVE):
        assert scorers[cls].signature.startswith(f"metric:{cls.name}|")
    assert "glove_sha256:" in scorers[EmbeddingAverageScorer].signature


# -- known values ----------------------------------------------------------------------------------------------------
def test_bleu_identical_and_disjoint(scorers):
    bleu = scorers[Bleu4Scorer]
    assert _single(bleu, "I went to the market this morning.", "I went to the market this morning.") == 1.0
    assert _single(bleu, "Yes", "yes") == 1.0  # lower-cased
    assert _single(bleu, "apples bananas cherries", "dogs cats horses") == 0.0
    partial = _single(bleu, "I went to the park today", "I went to the market this morning")
    assert 0.0 < partial < 1.0


def test_bleu_multi_reference_is_sacrebleu_native(scorers):
    from sacrebleu.metrics import BLEU

    bleu = BLEU(lowercase=True, effective_order=True)
    refs = ["I went to the market this morning", "we went to a park"]
    got = _single(scorers[Bleu4Scorer], "I went to the park today", refs)
    assert got == pytest.approx(bleu.sentence_score("I went to the park today", refs).score / 100, abs=1e-12)
    assert _single(scorers[Bleu4Scorer], "we went to a park", refs) == 1.0


def test_rouge_l_hand_computed(scorers):
    rouge = scorers[RougeLScorer]
    # LCS("the cat sat on the mat", "the cat is on the mat") = "the cat on the mat" = 5; P = R = 5/6
    assert _single(rouge, "The cat is on the mat.", "the cat sat on the mat") == pytest.approx(5 / 6, abs=1e-12)
    # LCS = 4 of response length 4 and reference length 6: P = 1, R = 2/3, F = 0.8
    assert _single(rouge, "the cat on mat", "the cat sat on the mat") == pytest.approx(0.8, abs=1e-12)
    assert _single(rouge, "hello", "goodbye") == 0.0


def test_glove_known_values(scorers):
    text = "I really enjoy hiking in the mountains."
    for cls in GLOVE:
        assert _single(scorers[cls], text, text) == pytest.approx(1.0, abs=1e-12)
    # case, curly quotes and spacing do not matter: same tokens
    same_tokens = _single(scorers[EmbeddingAverageScorer], "I don’t KNOW .", "i don't know.")
    assert same_tokens == pytest.approx(1.0, abs=1e-12)
    related = _single(scorers[GreedyMatchingScorer], "I love my dog", "I adore my puppy")
    unrelated = _single(scorers[GreedyMatchingScorer], "I love my dog", "stock markets fell sharply")
    assert related > unrelated


def test_glove_definitions_match_direct_computation(scorers):
    glove = load_glove()
    a, b = "my dog likes long walks", "the cat sleeps all day"

    def mat(text):
        return np.asarray(glove.vectors[[glove.vocab[t] for t in tokenize(text)]], dtype=np.float64)

    x, y = mat(a), mat(b)
    cos = lambda u, v: float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))  # noqa: E731
    ext = lambda m: np.array([c[np.argmax(np.abs(c))] for c in m.T])  # noqa: E731
    xn, yn = x / np.linalg.norm(x, axis=1)[:, None], y / np.linalg.norm(y, axis=1)[:, None]
    sim = xn @ yn.T
    greedy = (sim.max(1).mean() + sim.max(0).mean()) / 2
    assert _single(scorers[EmbeddingAverageScorer], a, b) == pytest.approx(cos(x.sum(0), y.sum(0)), abs=1e-12)
    assert _single(scorers[VectorExtremaScorer], a, b) == pytest.approx(cos(ext(x), ext(y)), abs=1e-12)
    assert _single(scorers[GreedyMatchingScorer], a, b) == pytest.approx(greedy, abs=1e-12)


def test_glove_tokenizer_follows_glove_conventions():
    assert tokenize("I don't know, can't you?") == ["i", "do", "n't", "know", ",", "ca", "n't", "you", "?"]
    assert tokenize("Mr. Smith, U.S. e-mail") == ["mr.", "smith", ",", "u.s.", "e-mail"]


def test_greedy_matching_is_symmetric(scorers):
    greedy = scorers[GreedyMatchingScorer]
    a, b = "I went hiking with my friends", "we stayed home and watched a movie together"
    assert _single(greedy, a, b) == pytest.approx(_single(greedy, b, a), abs=1e-12)


def test_bertscore_known_values(scorers):
    bs = scorers[BertScoreScorer]
    text = "I went hiking in the mountains with my friends."
    assert _single(bs, text, text) == pytest.approx(1.0, abs=1e-5)
    paraphrase = _single(bs, "The weather is lovely today.", "It is a beautiful sunny day.")
    unrelated = _single(bs, "The weather is lovely today.", "My brother plays the guitar in a band.")
    assert paraphrase > unrelated
    out = _score(bs, ["a", "b"], ["same text", "same text"], ["same text", "other text"])
    assert out.metadata["n_texts_encoded"] == 2  # responses and references deduplicated
    assert out.metadata["idf"] is False and out.metadata["rescale_with_baseline"] is False


def test_context_cosine_prefers_relevant_response(scorers):
    cc = scorers[ContextCosineScorer]
    ctx = ["Do you have any pets?", "Yes, I have two dogs and a cat."]
    out = cc.score(contexts=[ctx, ctx], responses=["What are your dogs' names?", "The stock market fell today."])
    assert out.scores[0] > out.scores[1]
    assert all(-1.0 <= s <= 1.0 for s in out.scores)


# -- multi-reference, order, batch size, determinism ----------------------------------------------------------------
@pytest.mark.parametrize("cls", MAX_OVER_REFS)
def test_multi_reference_is_max_over_single_references(scorers, cls):
    scorer = scorers[cls]
    refs = ["What breed are they?", "Cool, what are their names?", "I have a cat."]
    multi = _single(scorer, "What are their names?", refs)
    singles = [_single(scorer, "What are their names?", r) for r in refs]
    assert multi == max(singles)


@pytest.mark.parametrize("cls", [Bleu4Scorer, RougeLScorer, *GLOVE, BertScoreScorer, ContextCosineScorer])
def test_order_preserved(scorers, cls):
    scorer = scorers[cls]
    together = _score(scorer, CONTEXTS, RESPONSES, REFERENCES).scores
    alone = [_score(scorer, [c], [r], [ref]).scores[0] for c, r, ref in zip(CONTEXTS, RESPONSES, REFERENCES)]
    reverse = _score(scorer, CONTEXTS[::-1], RESPONSES[::-1], REFERENCES[::-1]).scores
    assert together == alone
    assert reverse == together[::-1]


@pytest.mark.parametrize("cls", [BertScoreScorer, ContextCosineScorer])
def test_batch_size_invariance_is_exact(scorers, encoder, cls):
    scorer = scorers[cls]
    # many lengths, including very short texts (the regime where CPU kernels depend on the row count)
    responses = RESPONSES + ["yes", "no way", "sure thing, see you", "ok ok ok", "hmm", "Thanks!", "I see."]
    contexts = CONTEXTS + ["hi", "a", "b c", "what?", "d e f g", "x", "y"]
    references = REFERENCES + ["yes", "no", "see you soon", "fine", "hmm", "you're welcome", "great"]
    results = []
    for batch_size in (1, 3, 64):
        encoder._cache.clear()
        results.append(_score(scorer, contexts, responses, references, batch_size=batch_size).scores)
    assert results[0] == results[1] == results[2]


@pytest.mark.parametrize("cls", [Bleu4Scorer, RougeLScorer, *GLOVE, BertScoreScorer, ContextCosineScorer])
def test_deterministic_across_runs(scorers, encoder, cls):
    first = _score(scorers[cls], CONTEXTS, RESPONSES, REFERENCES).scores
    encoder._cache.clear()
    second = _score(scorers[cls], CONTEXTS, RESPONSES, REFERENCES).scores
    assert first == second
    assert all(math.isfinite(s) for s in first)


# -- edge inputs -----------------------------------------------------------------------------------------------------
LONG = " ".join(["the quick brown fox jumps over the lazy dog"] * 2223)  # 20,007 words / tokens
NON_ASCII = ["你好，你今天怎么样？", "Ça va très bien, merci ! 😊", "Привет, как дела?"]


@pytest.mark.parametrize("cls", [Bleu4Scorer, RougeLScorer, *GLOVE, BertScoreScorer, ContextCosineScorer])
def test_non_ascii_and_very_long_inputs_have_defined_scores(scorers, encoder, cls):
    encoder._cache.clear()
    contexts = [LONG, NON_ASCII[0], [NON_ASCII[2], "and you?"], "hi"]
    responses = [LONG, NON_ASCII[0], NON_ASCII[1], "hello"]
    references = ["a fox", NON_ASCII[1], [NON_ASCII[2], LONG], NON_ASCII[0]]
    out = _score(scorers[cls], contexts, responses, references)
    assert len(out.scores) == 4 and all(math.isfinite(s) for s in out.scores)
    meta = out.metadata
    if cls is BertScoreScorer:
        assert meta["truncated_texts"] == 1  # LONG, encoded once although it is a response and a reference
        assert meta["max_length"] == 512
    if cls is ContextCosineScorer:
        assert meta["truncated_contexts"] == 1 and meta["truncated_responses"] == 1 and meta["truncated_texts"] == 2
    if cls in GLOVE:
        # item 1: the Chinese response has no GloVe token; item 3: neither has the Chinese reference
        assert meta["n_without_vocabulary"] == 2 and meta["without_vocabulary_items"] == [1, 3]
        assert out.scores[1] == 0.0
    if cls is RougeLScorer:
        # rouge-score keeps only [a-z0-9]: Chinese (items 1, 3) and the Russian reference (item 2) have no tokens
        assert meta["n_without_tokens"] == 3 and meta["without_tokens_items"] == [1, 2, 3]


def test_context_is_truncated_from_the_left(encoder):
    recent = "do you like dogs"
    ids = encoder.tokenize([LONG + " " + recent], side="left")[0]
    tail = encoder.tokenizer(recent, add_special_tokens=False)["input_ids"]
    assert len(ids) == encoder.max_length
    assert ids[-1 - len(tail) : -1] == tail


# -- length and adjacent-cosine controls ---------------------------------------------------------------------------
def test_utterance_length_counts_words_of_the_reply_and_of_every_turn():
    scorer = load_scorer("utterance_length")
    assert scorer.score(contexts=["a b c d e f", "x"], responses=["one two three", "four"]).scores == [3.0, 1.0]
    out = scorer.score_dialogues(dialogues=[["a b c d", "e f"], ["one", "two three", "four five six"]])
    assert out.scores == [3.0, 2.0]  # every turn counts, the first included


def test_adjacent_cosine_is_the_cosine_with_the_last_context_turn(encoder):
    scorer = load_scorer("adjacent_cosine", encoder=encoder)
    turns = ["Do you have any pets?", "Yes, two dogs.", "What are their names?", "Max and Bella."]
    vectors = encoder.embed(turns, side="right").double().numpy()

    def cos(i, j):
        return float(vectors[i] @ vectors[j] / np.linalg.norm(vectors[i]) / np.linalg.norm(vectors[j]))

    turn = scorer.score(contexts=[turns[:2], turns[:3]], responses=[turns[2], turns[3]]).scores
    assert turn == pytest.approx([cos(1, 2), cos(2, 3)], abs=1e-6)  # the earlier turns play no part
    dialogue = scorer.score_dialogues(dialogues=[turns]).scores[0]
    assert dialogue == pytest.approx(np.mean([cos(0, 1), cos(1, 2), cos(2, 3)]), abs=1e-6)
    assert metric_spec("adjacent_cosine").scorer.endswith(":AdjacentCosineScorer") and not scorer.requires_references
