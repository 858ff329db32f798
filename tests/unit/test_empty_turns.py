"""The empty-turn policy: "error" names the item and field; "skip" keeps the item in place with no score."""

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

import dialeval
from dialeval.cli import app
from dialeval.schema import (
    EmptyTurnError,
    InputError,
    ScoringItem,
    SkippedItem,
    normalize_dialogues,
    normalize_items,
)

CONTEXTS = ["how was the trip?", ["hi", "  "], "what did you eat?", "any plans?"]
RESPONSES = ["it was long but fun", "hello", "", "we go to the coast tomorrow"]
REFERENCES = ["long and fun", "hello there", "pasta", "the coast"]


def test_error_policy_names_item_and_field():
    with pytest.raises(EmptyTurnError, match=r"contexts\[1\]\[1\] is empty") as err:
        normalize_items(CONTEXTS, RESPONSES)
    assert isinstance(err.value, InputError) and err.value.where == "contexts[1][1]"
    with pytest.raises(EmptyTurnError, match=r"dialogues\[0\]\[1\]\.content is empty"):
        normalize_dialogues([[{"role": "a", "content": "hi"}, {"role": "b", "content": ""}]])


def test_skip_policy_keeps_every_position_and_says_why():
    items = normalize_items(CONTEXTS, RESPONSES, REFERENCES, empty_turns="skip")
    assert len(items) == 4
    assert [type(i) for i in items] == [ScoringItem, SkippedItem, SkippedItem, ScoringItem]
    assert items[1] == SkippedItem(1, "empty (or whitespace-only) text at contexts[1][1]")
    assert items[2].index == 2 and "responses[2]" in items[2].reason
    both = normalize_items([""], [" "], [""], empty_turns="skip")[0]
    assert both.reason == "empty (or whitespace-only) text at contexts[0], responses[0], references[0]"


def test_skip_policy_still_raises_every_other_problem():
    with pytest.raises(InputError, match=r"responses\[1\] has type int"):
        normalize_items(["", "b"], ["a", 5], empty_turns="skip")
    with pytest.raises(InputError, match=r"contexts\[0\] is None"):
        normalize_items([None], ["a"], empty_turns="skip")
    with pytest.raises(InputError, match=r"dialogues\[0\] has 1 turn"):
        normalize_dialogues([[""]], min_turns=2, empty_turns="skip")
    with pytest.raises(KeyError, match="did you mean 'skip'"):
        normalize_items(["a"], ["b"], empty_turns="skp")


def test_scorer_skip_scores_the_rest_unchanged():
    scorer = dialeval.load_scorer("bleu4")
    out = scorer.score(contexts=CONTEXTS, responses=RESPONSES, references=REFERENCES, empty_turns="skip")
    alone = scorer.score(contexts=[CONTEXTS[0], CONTEXTS[3]], responses=[RESPONSES[0], RESPONSES[3]],
                         references=[REFERENCES[0], REFERENCES[3]])
    assert out.scores[1] is None and out.scores[2] is None
    assert [out.scores[0], out.scores[3]] == alone.scores
    assert out.system_score == pytest.approx(float(np.mean(alone.scores)))
    assert out.metadata["n_items"] == 4 and out.metadata["n_scored"] == 2
    assert [s["index"] for s in out.metadata["skipped"]] == [1, 2]
    assert "contexts[1][1]" in out.metadata["skipped"][0]["reason"]
    json.dumps(out.to_dict())
    with pytest.raises(EmptyTurnError, match=r"contexts\[1\]\[1\]"):
        scorer.score(contexts=CONTEXTS, responses=RESPONSES, references=REFERENCES)


def test_item_indices_in_metric_metadata_are_input_positions():
    scorer = dialeval.load_scorer("rougeL")
    out = scorer.score(contexts=["a", "b", "c"], responses=["", "fine", "!!!"], references=["x", "fine", "ok"],
                       empty_turns="skip")
    assert out.scores[0] is None and out.scores[1] == 1.0
    assert out.metadata["without_tokens_items"] == [2]  # "!!!" has no token; it is the input's third item


def test_every_item_skipped_gives_no_system_score():
    out = dialeval.load_scorer("bleu4").score(contexts=["a"], responses=[""], references=["b"], empty_turns="skip")
    assert out.scores == [None] and math.isnan(out.system_score) and out.metadata["n_scored"] == 0


def test_dialogues_skip_and_turn_scores_keep_positions():
    scorer = dialeval.load_scorer("context_cosine", device="cpu")
    dialogues = [["hi", "hello, how are you?", "fine thanks"], ["hi", ""], ["what time is it?", "noon"]]
    out = scorer.score_dialogues(dialogues=dialogues, empty_turns="skip")
    alone = scorer.score_dialogues(dialogues=[dialogues[0], dialogues[2]])
    assert out.scores[1] is None and [out.scores[0], out.scores[2]] == alone.scores
    assert out.metadata["turn_scores"][1] is None and len(out.metadata["turn_scores"][0]) == 2
    assert out.metadata["skipped"] == [{"index": 1, "reason": "empty (or whitespace-only) text at dialogues[1][1]"}]


def test_score_batch_skip_returns_a_reason_column():
    scorer = dialeval.load_scorer("bleu4")
    batch = {"contexts": CONTEXTS, "responses": RESPONSES, "references": REFERENCES}
    out = scorer.score_batch(batch, empty_turns="skip")
    assert out["score"][1] is None and out["score"][2] is None and isinstance(out["score"][0], float)
    assert out["skipped_reason"][0] is None and "responses[2]" in out["skipped_reason"][2]
    with pytest.raises(EmptyTurnError):
        scorer.score_batch(batch)


def test_cli_skip_writes_null_scores_and_reasons(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"r{i}", "context": c, "response": r, "references": ref}) + "\n"
                           for i, (c, r, ref) in enumerate(zip(CONTEXTS, RESPONSES, REFERENCES))))
    out = tmp_path / "out.jsonl"
    runner = CliRunner()
    res = runner.invoke(app, ["score", "--metric", "bleu4", "-i", str(src), "-o", str(out), "--empty-turns", "skip"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["r0", "r1", "r2", "r3"]
    assert rows[1]["score"] is None and rows[1]["skipped_reason"].endswith("at field 'context', entry 1")
    assert rows[2]["score"] is None and rows[2]["skipped_reason"].endswith("at field 'response'")
    assert isinstance(rows[0]["score"], float) and "skipped_reason" not in rows[0]
    mean = (rows[0]["score"] + rows[3]["score"]) / 2
    assert f"pairs: 4 (2 skipped)  system score: {mean:.4f}" in res.stdout
    assert "summary: 4 items (2 skipped)" in res.stderr
    refused = runner.invoke(app, ["score", "--metric", "bleu4", "-i", str(src)])
    assert refused.exit_code == 2 and f"{src}:2: field 'context', entry 1 is empty" in refused.stderr
