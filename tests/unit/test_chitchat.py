"""The CCC chit-chat corpus as a builder (turns, speakers, split, bad data, missing package), on a tiny fake
``chitchat_dataset`` package: the real one is not installed by the test command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dialeval.benchmarks.chitchat import (
    ChitChatNotInstalled,
    chitchat_folder,
    conversation_turns,
    load_chitchat,
    split_ids,
)
from dialeval.benchmarks.common import BenchmarkDataError

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


def test_a_missing_package_names_the_install_command(monkeypatch):
    import dialeval.benchmarks.chitchat as chitchat

    monkeypatch.setattr(chitchat, "find_spec", lambda name: None)
    with pytest.raises(ChitChatNotInstalled, match=r"pip install 'dialeval\[chitchat\]'"):
        load_chitchat("train")
