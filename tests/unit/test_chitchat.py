"""The CCC chit-chat corpus as a builder (turns, speakers, split, bad data, missing package) and as DynaEval's
second training corpus (``--corpus``: the pairs, the statistics, the manifest and the refusal), on a tiny fake
``chitchat_dataset`` package: the real one is not installed by the test command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TINY_DIALOGUES, write_dailydialog
from typer.testing import CliRunner

from dialeval.benchmarks.chitchat import (
    ChitChatNotInstalled,
    chitchat_folder,
    conversation_turns,
    load_chitchat,
    split_ids,
)
from dialeval.benchmarks.common import BenchmarkDataError
from dialeval.cli import app
from dialeval.metrics.dynaeval.data import PairSet
from dialeval.metrics.dynaeval.options import DynaEvalTrainingOptions
from dialeval.training.options import TrainingOptionsError

pytestmark = pytest.mark.usefixtures("one_torch_thread")

A, B = "11111111-aaaa", "22222222-bbbb"

#: Chats of the fake package: typed as several short messages, as the real ones are.
CHATS = [
    ["hey there", "how was your weekend?", "pretty good, went hiking", "oh nice, where did you go?",
     "up the canyon near my house", "sounds fun, i should try that"],
    ["do you like cooking?", "yes, mostly pasta", "what kind of pasta?", "anything with garlic honestly",
     "same here, garlic makes it"],
    ["what music are you into", "mostly jazz lately", "any favourite artists?", "miles davis for sure",
     "kind of blue is a classic"],
    ["are you a student", "yeah, studying biology", "that sounds hard", "it is, lots of memorising",
     "good luck with your exams"],
    ["cats or dogs?", "dogs all the way", "why dogs?", "they are always happy to see you", "fair point"],
    ["what did you eat today", "just cereal", "that's it?", "i forgot to buy groceries", "happens to me too"],
    ["any plans for summer", "visiting my grandparents", "where do they live", "a farm in idaho",
     "must be peaceful there"],
    ["do you play sports", "some basketball", "are you any good", "not really but it's fun",
     "that's what counts"],
]


def message(text: str, sender: str) -> dict:
    return {"text": text, "timestamp": "2018-05-02T19:38:15Z", "sender": sender}


def chat(turns: list[str]) -> dict:
    """Turns of two senders alternating, each turn one group; a turn of several sentences as several messages."""
    groups = []
    for k, turn in enumerate(turns):
        sender = A if k % 2 == 0 else B
        groups.append([message(part.strip(), sender) for part in turn.split(",")])
    return {"prompt": "", "start": "2018-05-02T19:38:00Z", "messages": groups}


def fake_corpus() -> dict[str, dict]:
    data = {f"chat-{i:02d}": chat(turns) for i, turns in enumerate(CHATS)}
    data["one-sender"] = {"messages": [[message("hello?", A), message("anyone there?", A)]]}
    data["short"] = chat(["hi", "hello", "bye"])
    data["long"] = chat([f"turn {k} of a long chat" for k in range(65)])  # windows of 30, 30 and 5 turns
    # an empty message between two of one sender's groups (the file splits no run into two groups otherwise)
    data["empty-message"] = {"messages": [[message("hi", A)], [message("hey", B), message("how are you", B)],
                                          [message("   ", A)], [message("good", B), message("you?", B)],
                                          [message("fine thanks", A)], [message("great", B)]]}
    return data


def write_package(root: Path, data: dict) -> Path:
    """A ``chitchat_dataset`` package folder under ``root`` holding ``data`` as its ``dataset.json``."""
    package = root / "chitchat_dataset"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""A stand-in for the chitchat-dataset package."""\n')
    (package / "dataset.json").write_text(json.dumps(data))
    return root


@pytest.fixture
def fake_package(tmp_path, monkeypatch) -> Path:
    """The fake package importable ahead of any installed one; returns its folder."""
    monkeypatch.syspath_prepend(str(write_package(tmp_path / "site", fake_corpus())))
    return tmp_path / "site" / "chitchat_dataset"


# -- the builder ------------------------------------------------------------------------------------------------------


def test_turns_merge_one_senders_messages_and_skip_empty_ones():
    row = conversation_turns(fake_corpus()["empty-message"], Path("dataset.json"), "empty-message")
    # the empty message of A sat between B's two groups: B's four messages are one turn
    assert row["utterances"] == ["hi", "hey how are you good you?", "fine thanks", "great"]
    assert row["speakers"] == [0, 1, 0, 1] and row["messages"] == [1, 4, 1, 1]
    row = conversation_turns(chat(["a, b", "c", "d, e, f"]), Path("dataset.json"), "x")
    assert row == {"dialogue_id": "x", "utterances": ["a b", "c", "d e f"], "speakers": [0, 1, 0],
                   "messages": [2, 1, 3]}
    one = conversation_turns(fake_corpus()["one-sender"], Path("dataset.json"), "one-sender")
    assert one["utterances"] == ["hello? anyone there?"] and one["speakers"] == [0]


def test_builder_reads_the_installed_package_and_splits_by_the_fixed_seed(fake_package):
    assert chitchat_folder() == fake_package
    train, validation = load_chitchat("train"), load_chitchat("validation")
    ids = {"train": list(train["dialogue_id"]), "validation": list(validation["dialogue_id"])}
    everything = list(fake_corpus())
    assert len(ids["validation"]) == round(0.1 * len(everything)) == 1
    assert sorted(ids["train"] + ids["validation"]) == sorted(everything)
    assert ids["train"] == [i for i in everything if i in set(ids["train"])]  # file order
    assert split_ids(everything) == split_ids(list(reversed(everything)))  # the order of the file does not matter
    rows = {row["dialogue_id"]: row for ds in (train, validation) for row in ds}
    assert rows["chat-00"]["utterances"][:3] == ["hey there", "how was your weekend?", "pretty good went hiking"]
    assert rows["chat-00"]["speakers"] == [0, 1, 0, 1, 0, 1] and rows["one-sender"]["speakers"] == [0]
    with pytest.raises(ValueError, match="no split 'test'"):
        load_chitchat("test")


def test_a_larger_corpus_splits_a_tenth_off_whatever_its_order():
    ids = [f"c{i:04d}" for i in range(1000)]
    splits = split_ids(ids)
    assert sum(s == "validation" for s in splits.values()) == 100
    assert splits == split_ids(list(reversed(ids)))


def test_bad_data_names_the_conversation_and_the_field(tmp_path):
    data = fake_corpus()
    del data["chat-03"]["messages"][2][0]["sender"]
    write_package(tmp_path / "bad", data)
    with pytest.raises(BenchmarkDataError, match=r"item chat-03, field 'sender'"):
        load_chitchat("train", data_dir=tmp_path / "bad" / "chitchat_dataset")
    data = fake_corpus()
    data["chat-05"]["messages"][1][0]["text"] = 7
    write_package(tmp_path / "bad2", data)
    with pytest.raises(BenchmarkDataError, match=r"item chat-05, field 'messages\[1\]\[0\]\.text'"):
        load_chitchat("train", data_dir=tmp_path / "bad2" / "chitchat_dataset")
    with pytest.raises(BenchmarkDataError, match="item silent, field 'messages': has no message with text"):
        conversation_turns({"messages": [[message(" ", A)]]}, Path("dataset.json"), "silent")
    with pytest.raises(FileNotFoundError, match="chitchat-dataset"):
        load_chitchat("train", data_dir=tmp_path)


def test_long_dialogues_are_cut_into_windows():
    from dialeval.metrics.dynaeval.data import dialogue_windows

    assert dialogue_windows([3, 4, 30, 31, 34, 65]) == [(1, 0, 4), (2, 0, 30), (3, 0, 30), (4, 0, 30), (4, 30, 34),
                                                       (5, 0, 30), (5, 30, 60), (5, 60, 65)]
    assert dialogue_windows([9], min_utterances=2, max_utterances=4) == [(0, 0, 4), (0, 4, 8)]


def test_a_missing_package_names_the_install_command(monkeypatch):
    import dialeval.benchmarks.chitchat as chitchat

    monkeypatch.setattr(chitchat, "find_spec", lambda name: None)
    with pytest.raises(ChitChatNotInstalled, match=r"pip install 'dialeval\[chitchat\]'"):
        load_chitchat("train")


# -- DynaEval's --corpus ----------------------------------------------------------------------------------------------


def test_corpus_option_defaults_to_dailydialog_and_refuses_unknown_names(tmp_path):
    opts = DynaEvalTrainingOptions(output_dir=str(tmp_path))
    assert opts.corpus == "dailydialog" and opts.preparation_options()["corpus"] == "dailydialog"
    assert DynaEvalTrainingOptions(output_dir=str(tmp_path), corpus="dailydialog, chitchat").corpus_list == (
        "dailydialog", "chitchat")
    for bad in ("dailydialog,persona", "", "chitchat,chitchat"):
        with pytest.raises(TrainingOptionsError, match="--corpus must name distinct corpora among dailydialog, "
                                                       "chitchat"):
            DynaEvalTrainingOptions(output_dir=str(tmp_path), corpus=bad).check()


@pytest.fixture
def dailydialog(tmp_path) -> Path:
    d = TINY_DIALOGUES
    return write_dailydialog(tmp_path / "data", {"train": d * 2, "validation": d[:4], "test": d[3:]})


def invoke(out: Path, data: Path, *extra: str):
    return CliRunner().invoke(app, ["train", "dynaeval", "--output-dir", str(out), "--data-dir", str(data),
                                    "--perturbations", "4", "--device", "cpu", "--threads", "1", *extra])


def test_dynaeval_prepares_pairs_from_both_corpora(fake_package, dailydialog, tmp_path):
    out = tmp_path / "both"
    res = invoke(out, dailydialog, "--corpus", "dailydialog,chitchat", "--prepare-only")
    assert res.exit_code == 0, res.output
    stats = json.loads((out / "corpus_stats.json").read_text())
    train_ids = set(load_chitchat("train")["dialogue_id"])
    assert "long" in train_ids  # (the fixed split puts it there)
    kept = train_ids - {"one-sender", "short", "long"} | {"long/0", "long/30", "long/60"}  # two speakers, 4-30 turns
    assert stats["chitchat_train"] == {
        "dialogues": len(train_ids), "two_speakers": len(train_ids) - 1, "kept_4_to_30": len(kept) - 3,
        "longer_than_30": 1, "windows": 3, "used": len(kept), "pairs": stats["chitchat_train"]["pairs"],
        "messages_kept": stats["chitchat_train"]["messages_kept"], "utterances": stats["chitchat_train"]["utterances"],
        "unique_texts": stats["chitchat_train"]["unique_texts"]}
    assert stats["train"]["used"] == 12 and set(stats) == {"train", "chitchat_train", "validation", "test"}

    pairs = PairSet.load(out / "pairs_train.npz")
    by_corpus = {"dailydialog": [p for p in pairs.pairs if p.dialogue_id.startswith("train-")],
                 "chitchat": [p for p in pairs.pairs if not p.dialogue_id.startswith("train-")]}
    assert len(by_corpus["dailydialog"]) + len(by_corpus["chitchat"]) == len(pairs.pairs)
    assert {p.dialogue_id for p in by_corpus["chitchat"]} == kept
    assert len(by_corpus["chitchat"]) == stats["chitchat_train"]["pairs"] > 0
    chitchat_texts = {pairs.texts[t] for p in by_corpus["chitchat"] for t in p.original}
    windows = {p.dialogue_id: [pairs.texts[t] for t in p.original] for p in by_corpus["chitchat"]
               if p.dialogue_id.startswith("long/")}
    assert windows["long/30"] == [f"turn {k} of a long chat" for k in range(30, 60)] and len(windows["long/60"]) == 5
    originals = {p.dialogue_id: p.original for p in by_corpus["chitchat"]}
    assert stats["chitchat_train"]["utterances"] == sum(len(d) for d in originals.values())
    raw = fake_corpus()
    assert stats["chitchat_train"]["messages_kept"] == 65 + sum(  # the long chat: one message a turn
        bool(m["text"].strip()) for i in kept if "/" not in i for group in raw[i]["messages"] for m in group)
    for p in by_corpus["chitchat"]:  # a replacement comes from the same corpus
        assert {pairs.texts[t] for t in p.perturbed} <= chitchat_texts
    # DailyDialog's pairs are those of a run on it alone
    alone = tmp_path / "alone"
    assert invoke(alone, dailydialog, "--prepare-only").exit_code == 0
    only = PairSet.load(alone / "pairs_train.npz")
    text = lambda s, d: tuple(s.texts[t] for t in d)  # noqa: E731
    assert [(p.dialogue_id, p.kind, text(pairs, p.a), text(pairs, p.b), p.label) for p in by_corpus["dailydialog"]] \
        == [(p.dialogue_id, p.kind, text(only, p.a), text(only, p.b), p.label) for p in only.pairs]
    for split in ("validation", "test"):
        assert (out / f"pairs_{split}.npz").read_bytes() == (alone / f"pairs_{split}.npz").read_bytes()

    manifest = json.loads((out / "prepared.json").read_text())
    assert manifest["options"]["corpus"] == "dailydialog,chitchat"
    assert str(fake_package / "dataset.json") in manifest["data"]

    # a run prepared with other corpora is refused in one line naming the option
    refused = invoke(alone, dailydialog, "--corpus", "dailydialog,chitchat")
    assert refused.exit_code == 2, refused.output
    lines = refused.output.strip().splitlines()
    assert len(lines) == 1 and "corpus='dailydialog' (now 'dailydialog,chitchat')" in lines[0], refused.output
    # a folder prepared before --corpus existed is DailyDialog's
    manifest = json.loads((alone / "prepared.json").read_text())
    del manifest["options"]["corpus"]
    (alone / "prepared.json").write_text(json.dumps(manifest))
    assert invoke(alone, dailydialog, "--corpus", "chitchat").exit_code == 2
    assert invoke(alone, dailydialog, "--prepare-only").exit_code == 0


def test_chitchat_without_the_package_is_one_line_with_the_install_command(dailydialog, tmp_path, monkeypatch):
    import dialeval.benchmarks.chitchat as chitchat

    monkeypatch.setattr(chitchat, "find_spec", lambda name: None)
    res = invoke(tmp_path / "run", dailydialog, "--corpus", "dailydialog,chitchat", "--prepare-only")
    assert res.exit_code == 2, res.output
    assert res.output.strip().splitlines()[-1].startswith("error: ") and "dialeval[chitchat]" in res.output
