"""The shared parts of the `evaluate` modules and the Spaces (dialeval.interfaces), without gradio installed."""

from __future__ import annotations

import re
import runpy
import sys
import types
from pathlib import Path

import datasets
import pytest

from dialeval.interfaces.evaluate_module import dialogue_features, response_features
from dialeval.interfaces.space import Space, split_turns
from dialeval.scoring.base import ScoreOutput

ROOT = Path(__file__).resolve().parents[2]


def test_response_features_cover_list_and_string_forms():
    text = datasets.Value("string")
    plain = response_features()
    assert [f["contexts"] for f in plain] == [datasets.Sequence(text), text]
    assert all(set(f) == {"predictions", "contexts"} and f["predictions"] == text for f in plain)
    with_refs = response_features(references=True)
    assert len(with_refs) == 4 and all(set(f) == {"predictions", "contexts", "references"} for f in with_refs)
    assert len({(repr(f["contexts"]), repr(f["references"])) for f in with_refs}) == 4
    assert [set(f) for f in dialogue_features()] == [{"dialogues"}, {"dialogues"}]


def test_split_turns_drops_blank_lines_and_strips():
    assert split_turns("  Hi there.\n\n   \nHello! \n") == ["Hi there.", "Hello!"]
    assert split_turns("") == []


def _space(fields=("context", "response"), **kwargs) -> Space:
    return Space("pone", title="t", description="d", score_label="PONE score", fields=fields, **kwargs)


def test_request_reads_the_form_into_scorer_arguments():
    assert _space().request("Want lunch?\n\nYes!", "Sure.") == {"contexts": [["Want lunch?", "Yes!"]],
                                                                "responses": ["Sure."]}
    three = _space(("context", "response", "reference"))
    assert three.request("Hi", "Hello", "Hey") == {"contexts": [["Hi"]], "responses": ["Hello"],
                                                   "references": ["Hey"]}
    assert _space(("dialogue",)).request("A\nB\nC") == {"dialogues": [["A", "B", "C"]]}


def test_request_names_what_is_missing():
    assert _space().request(" \n", "Sure.") == "Enter at least one context turn and a response."
    assert _space().request("Hi", "  ") == "Enter at least one context turn and a response."
    three = _space(("context", "response", "reference"))
    assert three.request("Hi", "Hello", "") == "Enter at least one context turn, a response and a reference."
    assert _space(("dialogue",)).request("Only one turn\n") == "Enter at least two turns, one per line."
    with pytest.raises(ValueError):
        _space().request("only the context")


def test_space_rejects_unknown_or_mixed_fields():
    with pytest.raises(ValueError, match="unknown fields"):
        _space(("context", "answer"))
    with pytest.raises(ValueError, match="dialogue"):
        _space(("dialogue", "response"))


def test_report_shows_score_details_and_signature():
    out = ScoreOutput(scores=[0.123456], system_score=0.123456, signature="metric:x|v:1",
                      metadata={"unreferenced_scores": [0.5], "referenced_scores": [0.25]})
    space = _space(details={"unreferenced": "unreferenced_scores", "referenced cosine": "referenced_scores"})
    assert space.report(out) == ("PONE score: 0.1235\nunreferenced: 0.5000\nreferenced cosine: 0.2500\n\n"
                                 "metric:x|v:1")


def _fake_gradio() -> types.ModuleType:
    """Records what a Space asks gradio for (gradio itself is installed on a Space, not here)."""
    gr = types.ModuleType("gradio")
    gr.Textbox = lambda **kwargs: ("Textbox", kwargs)
    gr.Dropdown = lambda **kwargs: ("Dropdown", kwargs)
    gr.Interface = lambda **kwargs: types.SimpleNamespace(**kwargs)
    return gr


@pytest.mark.parametrize("metric,n_boxes,checkpoints", [
    ("grade", 2, None), ("pone", 2, ["default", "base"]), ("dynaeval", 1, ["default", "base"]),
    ("bert_ruber", 3, ["default", "base"]), ("rade", 3, None), ("ensemble", 2, None)])
def test_each_app_builds_its_form(monkeypatch, metric, n_boxes, checkpoints):
    """Its text boxes, and a menu of the shipped checkpoints (default first) where the metric ships more than one."""
    monkeypatch.setitem(sys.modules, "gradio", _fake_gradio())
    demo = runpy.run_path(str(ROOT / "metrics" / metric / "app.py"))["demo"]
    boxes = [box for box in demo.inputs if box[0] == "Textbox"]
    menus = [box[1] for box in demo.inputs if box[0] == "Dropdown"]
    assert len(boxes) == n_boxes and all(box[1]["label"] for box in demo.inputs)
    assert [(m["choices"], m["value"]) for m in menus] == ([(checkpoints, "default")] if checkpoints else [])
    assert demo.fn.__self__.metric == metric and demo.title


def test_app_scores_with_the_shipped_checkpoint(monkeypatch):
    import dialeval

    monkeypatch.setitem(sys.modules, "gradio", _fake_gradio())
    demo = runpy.run_path(str(ROOT / "metrics" / "pone" / "app.py"))["demo"]
    direct = dialeval.load_scorer("pone").score(contexts=[["Want lunch?", "Yes!"]], responses=["Pizza?"],
                                                scale="calibrated")
    raw, calibrated = direct.metadata["raw_scores"][0], direct.scores[0]
    assert demo.fn("Want lunch?\nYes!", "Pizza?", "default") == (  # the menu's default checkpoint
        f"PONE score: {raw:.4f}\ncalibrated: {calibrated:.4f} (higher than {calibrated:.0%} of human replies in "
        f"DailyDialog validation)\n\n{direct.signature}")
    assert demo.fn("", "Pizza?", "default").startswith("Enter")


def test_the_ensemble_space_shows_each_default_members_calibrated_score(monkeypatch):
    """The ensemble's Space (built without launching) shows, under the score, the calibrated score of each turn
    member of the shipped checkpoint's default member set, as the scorer's metadata names them; its words say it
    combines the members and is slower."""
    from dialeval.metrics.ensemble.checkpoint import EnsembleConfig
    from dialeval.scoring.checkpoints import resolve_checkpoint

    monkeypatch.setitem(sys.modules, "gradio", _fake_gradio())
    demo = runpy.run_path(str(ROOT / "metrics" / "ensemble" / "app.py"))["demo"]
    space = demo.fn.__self__
    config = EnsembleConfig.load(resolve_checkpoint(None, "ensemble", "dialeval train ensemble"))
    members = config.member_sets[config.default_member_set].members
    assert list(space.details.values()) == [f"{m}_calibrated_scores" for m in members]
    assert demo.description.startswith("Combines dialeval's metrics") and "slower" in demo.title
    out = ScoreOutput(scores=[0.5], system_score=0.5, signature="metric:ensemble|checkpoint:default",
                      metadata={f"{m}_calibrated_scores": [i / 10] for i, m in enumerate(members)})
    lines = space.report(out).splitlines()
    assert lines[0] == "ensemble score: 0.5000"
    assert lines[1:1 + len(members)] == [f"{m}, calibrated: {i / 10:.4f}" for i, m in enumerate(members)]


# -- evaluate.load("dialeval/<m>") offline -------------------------------------------------------------------------
def test_every_metric_folder_ships_as_an_evaluate_module():
    from dialeval.interfaces.evaluate_cache import module_names

    folders = sorted(d.name for d in (ROOT / "metrics").iterdir() if (d / f"{d.name}.py").is_file())
    assert module_names() == folders == ["amr_eval", "bert_ruber", "dynaeval", "ensemble", "grade", "pone", "rade"]


def test_registered_modules_load_by_name_in_a_fresh_offline_process(tmp_path):
    import json
    import os
    import subprocess

    env = dict(os.environ, HF_MODULES_CACHE=str(tmp_path / "modules"), HF_HUB_OFFLINE="1")
    missing = subprocess.run([sys.executable, "-c", "import evaluate; evaluate.load('dialeval/pone')"], env=env,
                             capture_output=True, text=True, cwd=tmp_path)
    assert missing.returncode != 0  # not registered yet: evaluate cannot find it
    listed = subprocess.run([sys.executable, "-m", "dialeval", "evaluate-modules"], env=env, capture_output=True,
                            text=True, cwd=tmp_path, check=True).stdout
    assert 'evaluate.load("dialeval/grade")' in listed and 'evaluate.load("dialeval/pone")' in listed
    code = ("import evaluate, json, sys, dialeval\n"
            "out = evaluate.load('dialeval/pone').compute(predictions=['Sure, what time?'], contexts=[['Lunch?']])\n"
            "direct = dialeval.load_scorer('pone').score(contexts=[['Lunch?']], responses=['Sure, what time?'])\n"
            "cal = evaluate.load('dialeval/pone').compute(predictions=['Sure, what time?'], contexts=[['Lunch?']],\n"
            "                                             scale='calibrated')\n"
            "direct_cal = dialeval.load_scorer('pone').score(contexts=[['Lunch?']], responses=['Sure, what time?'],\n"
            "                                                scale='calibrated')\n"
            "json.dump({'module': out['scores'], 'direct': direct.scores, 'module_cal': cal['scores'],\n"
            "           'direct_cal': direct_cal.scores, 'signature': cal['signature']}, open(sys.argv[1], 'w'))\n")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "out.json")], env=env, capture_output=True,
                   cwd=tmp_path, check=True)
    result = json.loads((tmp_path / "out.json").read_text())
    assert result["module"] == result["direct"]
    assert result["module_cal"] == result["direct_cal"] != result["direct"]  # compute(scale=...) reaches the scorer
    assert result["signature"].endswith("|scale:calibrated")
    from dialeval.errors import UnknownNameError
    from dialeval.interfaces.evaluate_cache import register

    with pytest.raises(UnknownNameError, match="rouge"):
        register(["rouge"])


# -- a Space's examples ---------------------------------------------------------------------------------------------
def test_bundled_examples_fill_every_box_of_each_space():
    from dialeval.interfaces.space import SPACES, bundled_examples

    for metric, space in SPACES.items():
        examples = bundled_examples(space.fields)
        assert examples and all(len(e.inputs) == len(space.fields) and all(t.strip() for t in e.inputs)
                                for e in examples), metric
        assert isinstance(space.request(*examples[0].inputs), dict), metric  # a complete form
    exam = [e for e in bundled_examples(("context", "response")) if e.note == "demo pair exam-1"][0]
    assert exam.inputs[0] == "I failed my driving test again today."  # a one-turn context stays one line


def test_examples_file_round_trips_and_bad_items_are_named(tmp_path):
    from dialeval.interfaces.space import Example, read_examples, write_examples

    path = tmp_path / "examples.json"
    examples = [Example(("Hi\nHow are you?", "Fine."), "item 1, human 4.2")]
    write_examples(path, examples)
    assert read_examples(path, ("context", "response")) == examples
    bad = {'[{"inputs": ["a"], "note": "n"}]': "example 0: 'inputs' must be a list of 2 texts",
           '[{"inputs": ["a", "b"], "note": "n"}, {"inputs": ["a", " "], "note": "n"}]':
               "example 1: field 'response' must be a non-empty text",
           '[{"inputs": ["a", "b"]}]': "example 0: 'note' must be a text", "[]": "non-empty JSON list"}
    for text, message in bad.items():
        path.write_text(text)
        with pytest.raises(ValueError, match=re.escape(message)):
            read_examples(path, ("context", "response"))


def test_app_shows_the_examples_file_when_there_is_one(monkeypatch, tmp_path):
    from dialeval.interfaces.space import SPACES, Example, write_examples

    monkeypatch.setitem(sys.modules, "gradio", _fake_gradio())
    write_examples(tmp_path / "examples.json", [Example(("A\nB", "C"), "GRADE set x, item 3: human 4.5")])
    demo = SPACES["grade"].build(tmp_path / "examples.json")
    assert demo.examples == [["A\nB", "C"]] and "item 3: human 4.5" in demo.article
    bundled = SPACES["grade"].build(tmp_path / "absent.json")
    assert len(bundled.examples) > 1 and "demo items" in bundled.article
