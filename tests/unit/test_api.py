"""The shared scoring API, exercised through a real encoder metric (context cosine on the bundled MiniLM)."""

import json

import numpy as np
import pytest

import dialeval
from dialeval.schema import InputError

CONTEXTS = [
    ["Do you know a good place for coffee?", "There is a cafe on Elm Street."],
    "I failed my driving test again today.",
    [{"role": "user", "content": "We fly to Lisbon next week."}, {"role": "assistant", "content": "Any plans?"}],
    "I failed my driving test again today.",
    ["short"],
]
RESPONSES = [
    "Great, I will try it tomorrow.",
    "I'm sorry to hear that. What went wrong?",
    "We want to see the old town and eat custard tarts.",
    "Congratulations, that is wonderful news!",
    "A much longer response that has quite a few more tokens than the others in this small batch of examples.",
]


@pytest.fixture(scope="module")
def scorer():
    return dialeval.load_scorer("context_cosine", device="cpu")


def test_output_shape_order_and_system_score(scorer):
    out = scorer.score(contexts=CONTEXTS, responses=RESPONSES)
    assert len(out) == len(RESPONSES)
    assert out.system_score == pytest.approx(float(np.mean(out.scores)))
    # order restored: scoring the items one by one gives the same list
    single = [scorer.score(contexts=[c], responses=[r]).scores[0] for c, r in zip(CONTEXTS, RESPONSES)]
    assert out.scores == single
    assert out.metadata["n_items"] == len(RESPONSES) and out.metadata["level"] == "turn"
    json.dumps(out.to_dict())  # serialisable


def test_relevant_response_beats_irrelevant_one(scorer):
    out = scorer.score(contexts=CONTEXTS, responses=RESPONSES)
    assert out.scores[1] > out.scores[3]


@pytest.mark.parametrize("batch_size", [1, 2, 3, 64])
def test_scores_identical_across_batch_sizes(batch_size):
    fresh = dialeval.load_scorer("context_cosine", device="cpu")  # cold cache: batches really differ
    reference = dialeval.load_scorer("context_cosine", device="cpu").score(
        contexts=CONTEXTS, responses=RESPONSES, batch_size=7
    )
    assert fresh.score(contexts=CONTEXTS, responses=RESPONSES, batch_size=batch_size).scores == reference.scores


def test_repeated_context_is_encoded_once(scorer):
    enc = scorer.encoder
    before = len(enc._cache)
    scorer.score(contexts=["a brand new context"] * 5, responses=["x1", "x2", "x3", "x4", "x5"])
    assert len(enc._cache) - before == 6  # one context + five responses


def test_signature_names_metric_weights_and_versions(scorer):
    sig = scorer.score(contexts=["a"], responses=["b"]).signature
    assert sig.startswith("metric:context_cosine|")
    assert "torch:" in sig and "transformers:" in sig and "dialeval:" in sig
    assert scorer.encoder.fingerprint in sig


def test_dialogue_level_entry(scorer):
    dialogue = [
        {"role": "user", "content": "I adopted a puppy."},
        {"role": "assistant", "content": "Congratulations! What breed is it?"},
        {"role": "user", "content": "A beagle, he sniffs everything."},
    ]
    out = scorer.score_dialogues(dialogues=[dialogue, dialogue[:2]])
    turns = out.metadata["turn_scores"]
    assert [len(t) for t in turns] == [2, 1]
    assert out.scores[0] == pytest.approx(np.mean(turns[0]))
    assert out.scores[1] == pytest.approx(turns[1][0])
    direct = scorer.score(contexts=[dialogue[:1]], responses=[dialogue[1]["content"]]).scores[0]
    assert turns[0][0] == pytest.approx(direct)


def test_score_batch_is_pure_and_matches_score(scorer):
    batch = {"contexts": CONTEXTS, "responses": RESPONSES}
    assert scorer.score_batch(batch)["score"].tolist() == scorer.score(**batch).scores


def test_one_off_function_and_bad_input():
    out = dialeval.score("context_cosine", contexts=["hi"], responses=["hello"], device="cpu")
    assert len(out.scores) == 1
    with pytest.raises(InputError, match=r"responses\[1\] is empty"):
        dialeval.score("context_cosine", contexts=["a", "b"], responses=["ok", ""])
    with pytest.raises(InputError, match="batch_size"):
        dialeval.score("context_cosine", contexts=["a"], responses=["b"], batch_size=0)
    with pytest.raises(KeyError, match="unknown metric"):
        dialeval.load_scorer("no-such-metric")
    with pytest.raises(dialeval.UnknownNameError, match="did you mean 'context_cosine'"):
        dialeval.load_scorer("context_cosin")


def test_device_reported_is_the_device_used(scorer):
    assert scorer.score(contexts=["a"], responses=["b"]).metadata["device"] == str(scorer.encoder.device) == "cpu"
    # Overlap metrics compute with numpy whatever device was asked for, so they report the CPU.
    bleu = dialeval.load_scorer("bleu4", device="cuda:1")
    assert bleu.score(contexts=["a"], responses=["b c"], references=["b c"]).metadata["device"] == "cpu"


def test_progress_bar_appears_only_for_long_jobs_on_a_terminal(monkeypatch, capsys):
    import time

    from dialeval.backbone import batching

    monkeypatch.setattr(batching, "stderr_is_terminal", lambda: True)
    list(batching.progress(range(3), total=3, enabled=None, desc="short"))
    assert capsys.readouterr().err == ""  # a short job prints nothing
    monkeypatch.setattr(batching, "PROGRESS_DELAY_SECONDS", 0.05)
    for _ in batching.progress(range(3), total=3, enabled=None, desc="long"):
        time.sleep(0.15)
    err = capsys.readouterr().err
    assert "long" in err and "/3 [" in err and "it/s" in err and "<" in err  # count, rate, elapsed<left
    for _ in batching.progress(range(3), total=3, enabled=False, desc="off"):
        time.sleep(0.15)
    assert capsys.readouterr().err == ""
    list(batching.progress(range(3), total=3, enabled=True, desc="asked"))
    assert "asked" in capsys.readouterr().err
    monkeypatch.setattr(batching, "stderr_is_terminal", lambda: False)  # a pipe or a file: quiet unless asked
    for _ in batching.progress(range(3), total=3, enabled=None, desc="piped"):
        time.sleep(0.15)
    assert capsys.readouterr().err == ""


def test_progress_scope_labels_each_stage_and_silences_every_stage_of_a_quiet_call(monkeypatch, capsys):
    from dialeval.backbone import batching

    monkeypatch.setattr(batching, "stderr_is_terminal", lambda: True)
    monkeypatch.setattr(batching, "PROGRESS_DELAY_SECONDS", 0.0)
    with batching.progress_scope("grade", True):
        list(batching.progress(range(2), total=2, enabled=None, desc="encoding"))
        with batching.progress_scope("pone", None):  # a member of a combination
            list(batching.progress(range(2), total=2, enabled=None, desc="scoring"))
    err = capsys.readouterr().err
    assert "grade: encoding" in err and "grade/pone: scoring" in err and "/2 [" in err  # with its total
    with batching.progress_scope("grade", False):  # progress_bar=False: even a stage that asks stays quiet
        list(batching.progress(range(2), total=2, enabled=True, desc="encoding"))
        with batching.progress_scope("pone", True):
            list(batching.progress(range(2), total=2, enabled=None, desc="scoring"))
    assert capsys.readouterr().err == ""


def test_a_quiet_call_prints_no_bar_from_any_stage(monkeypatch, capsys):
    """The encoder's own stage asks for no bar in particular: the call's ``progress_bar=False`` silences it."""
    from dialeval.backbone import batching
    from dialeval.scoring.base import Scorer

    monkeypatch.setattr(batching, "stderr_is_terminal", lambda: True)
    monkeypatch.setattr(batching, "PROGRESS_DELAY_SECONDS", 0.0)

    class Staged(Scorer):
        name = "staged"

        def _score_items(self, items, *, batch_size, progress_bar):
            list(batching.progress(range(3), total=3, enabled=None, desc="encoding"))  # a stage that passes None
            return np.zeros(len(items))

    Staged().score(contexts=["a"] * 6, responses=["b"] * 6, progress_bar=False)
    assert capsys.readouterr().err == ""
    Staged().score(contexts=["a"] * 6, responses=["b"] * 6, progress_bar=True)
    assert "staged: encoding" in capsys.readouterr().err


def test_huge_and_non_ascii_inputs_get_defined_scores(scorer):
    huge = " ".join(["word"] * 20_000)
    out = scorer.score(contexts=[huge, "¿Qué tal? 你好 🙂"], responses=["ok " * 10_000, "très bien, merci"])
    assert all(np.isfinite(out.scores))
    assert out.metadata["truncated_texts"] >= 2
