"""dialeval.benchmarks: builders, API, export.

Tests marked ``data`` read the real corpora (skipped with a reason when the data directory is absent); the others
run on tiny fixtures written into tmp_path.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections import Counter
from pathlib import Path

import datasets
import pytest
import yaml

from dialeval.benchmarks import (
    BenchmarkAlignmentError,
    BenchmarkDataError,
    benchmark_info,
    benchmark_names,
    expand_benchmark,
    load_benchmark,
)
from dialeval.benchmarks.export import export_all
from dialeval.benchmarks.fed import DIALOGUE_ASPECTS, TURN_ASPECTS, count_continuation_lines
from dialeval.benchmarks.rade import split_of

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
datasets.disable_progress_bars()

ALL = ["grade_eval", "fed_turn", "fed_dialogue", "usr_topicalchat", "usr_personachat", "rade_chitchat",
       "rade_emotion", "rade_persona", "dailydialog_pp", "sanity_turn", "sanity_dialogue", "dailydialog"]


def _mean(xs):
    return math.fsum(xs) / len(xs)


# -- fixtures: tiny data ------------------------------------------------------------------------------------------
def _ratings(aspects, value=1, **override):
    return {a: override.get(a, [value] * 5) for a in aspects}


def write_fed(root: Path, items: list[dict]) -> Path:
    (root / "fed").mkdir(parents=True, exist_ok=True)
    (root / "fed" / "fed_data.json").write_text(json.dumps(items))
    return root


def tiny_fed_items() -> list[dict]:
    return [
        {"context": "User: Hi!\nSystem: Hello there.\nUser: How are you", "response": "System: Fine, thanks.",
         "system": "Meena",
         "annotations": _ratings(TURN_ASPECTS, 2, Correct=[2, "N/A (can't tell)", 1, 2, 0])},
        {"context": "User: Hi!\nSystem: Hello there.\nsecond line of the system turn\nUser: How are you\n"
                    "System: Fine, thanks.", "system": "Meena",
         "annotations": _ratings(DIALOGUE_ASPECTS, 1, **{"Error recovery": ["N/A (No errors)"] * 5})},
    ]


def write_grade(root: Path, *, ctx_lines=None, scores=None) -> Path:
    items = [
        {"ID": 0, "Dataset": "dailydialog_EVAL", "DialogModel": "sysA", "Context": "a1|||a2", "Response": "ra",
         "HumanScores": "[1, 2, 3]"},
        {"ID": 1, "Dataset": "dailydialog_EVAL", "DialogModel": "sysA", "Context": "b1|||b2", "Response": "rb",
         "HumanScores": "[5, 4, 4]"},
    ]
    (root / "grade_eval" / "human_score" / "dailydialog" / "sysA").mkdir(parents=True, exist_ok=True)
    (root / "grade_eval" / "eval_data" / "dailydialog" / "sysA").mkdir(parents=True, exist_ok=True)
    (root / "grade_eval" / "human_score" / "human_judgement.json").write_text(json.dumps(items))
    ctx_lines = ctx_lines or [("a1|||a2", "ra", "refa", "2.0"), ("b1|||b2", "rb", "refb", "4.33")]
    d = root / "grade_eval" / "eval_data" / "dailydialog" / "sysA"
    (d / "human_ctx.txt").write_text("".join(c + "\n" for c, _, _, _ in ctx_lines))
    (d / "human_hyp.txt").write_text("".join(h + "\n" for _, h, _, _ in ctx_lines))
    (d / "human_ref.txt").write_text("".join(r + "\n" for _, _, r, _ in ctx_lines))
    s = scores or [s for _, _, _, s in ctx_lines]
    (root / "grade_eval" / "human_score" / "dailydialog" / "sysA" / "human_score.txt").write_text(
        "".join(x + "\n" for x in s))
    return root


# -- API without data ---------------------------------------------------------------------------------------------
def test_names_groups_and_info():
    assert benchmark_names() == ALL
    assert expand_benchmark("fed") == ["fed_turn", "fed_dialogue"]
    assert expand_benchmark("usr") == ["usr_topicalchat", "usr_personachat"]
    assert expand_benchmark("rade") == ["rade_chitchat", "rade_emotion", "rade_persona"]
    assert expand_benchmark("grade_eval") == ["grade_eval"]
    with pytest.raises(KeyError, match="grade_eval"):
        expand_benchmark("nope")
    info = benchmark_info("fed_dialogue")
    assert (info.kind, info.level, info.aspects, info.default_aspect, info.splits, info.has_references) == (
        "correlation", "dialogue", DIALOGUE_ASPECTS, "Overall", ("test",), False)
    assert benchmark_info("rade_persona").splits == ("train", "validation", "test")
    assert benchmark_info("dailydialog_pp").kind == "discrimination"
    assert benchmark_info("dailydialog").kind == "corpus" and benchmark_info("dailydialog").level is None
    with pytest.raises(KeyError, match="group"):
        benchmark_info("fed")
    with pytest.raises(ValueError, match="splits: test"):
        load_benchmark("fed_turn", split="train")


def test_rade_split_rule():
    ctx = ["hello", "hi there"]
    bucket = int(hashlib.sha256("hello\nhi there".encode()).hexdigest()[:8], 16)
    assert split_of(ctx, "rade_chitchat") == ("train" if bucket % 7 < 5 else "validation" if bucket % 7 == 5
                                              else "test")
    assert split_of(ctx, "rade_persona") == ("train" if bucket % 8 < 6 else "validation" if bucket % 8 == 6
                                             else "test")
    counts = {"rade_chitchat": {}, "rade_emotion": {}}
    for i in range(7000):
        for name, c in counts.items():
            split = split_of([f"context {i}"], name)
            c[split] = c.get(split, 0) + 1
    assert abs(counts["rade_chitchat"]["train"] / 7000 - 5 / 7) < 0.02
    assert abs(counts["rade_emotion"]["test"] / 7000 - 1 / 8) < 0.02


# -- fixture builds -----------------------------------------------------------------------------------------------
def test_fed_na_excluded_and_counted(tmp_path):
    root = write_fed(tmp_path / "data", tiny_fed_items())
    cache = tmp_path / "cache"
    turn = load_benchmark("fed_turn", data_dir=root, cache_dir=cache)
    assert turn.num_rows == 1
    row = turn[0]
    c = TURN_ASPECTS.index("Correct")
    assert row["excluded"][c] == 1 and row["ratings"][c] == [2.0, 1.0, 2.0, 0.0]
    assert row["human"][c] == pytest.approx(1.25)
    assert sum(row["excluded"]) == 1
    assert row["response"] == "Fine, thanks." and row["id"] == "fed_turn/0"
    assert [(t["speaker"], t["text"]) for t in row["context"]] == [
        ("User", "Hi!"), ("System", "Hello there."), ("User", "How are you")]
    dial = load_benchmark("fed_dialogue", data_dir=root, cache_dir=cache)[0]
    e = DIALOGUE_ASPECTS.index("Error recovery")
    assert dial["excluded"][e] == 5 and dial["human"][e] is None and dial["ratings"][e] == []
    assert dial["response"] is None and dial["id"] == "fed_dialogue/1"
    # a line without a speaker prefix continues the previous turn
    assert dial["context"][1] == {"speaker": "System", "text": "Hello there.\nsecond line of the system turn"}
    assert len(dial["context"]) == 4


def test_malformed_item_names_file_index_and_field(tmp_path):
    items = tiny_fed_items()
    items.insert(1, dict(items[0], annotations=_ratings(TURN_ASPECTS, 1, Overall=[1, 2, None, 3, 4])))
    root = write_fed(tmp_path / "data", items)
    with pytest.raises(BenchmarkDataError) as err:
        load_benchmark("fed_turn", data_dir=root, cache_dir=tmp_path / "cache")
    msg = str(err.value)
    assert "fed_data.json" in msg and "item 1" in msg and "annotations.Overall[2]" in msg
    assert err.value.index == 1

    rade = tmp_path / "data" / "rade" / "emotion"
    rade.mkdir(parents=True)
    good = {"context": ["a", "b"], "output": "o", "reference": "r", "s_output": 3.0, "s_reference": 4}
    (rade / "data.jsonl").write_text(json.dumps(good) + "\n" + json.dumps({**good, "s_output": "x"}) + "\n")
    with pytest.raises(BenchmarkDataError, match=r"item 1, field 's_output'"):
        load_benchmark("rade_emotion", data_dir=root, cache_dir=tmp_path / "cache")


def test_usr_context_and_references(tmp_path):
    def resp(model, text, v=1):
        return {"response": text, "model": model, **{a: [v, v, v] for a in (
            "Understandable", "Natural", "Maintains Context", "Engaging", "Uses Knowledge", "Overall")}}

    items = [{"context": "turn one \n turn two \n\n", "fact": "a fact\n", "annotators": ["x"],
              "responses": [resp("Original Ground Truth", "truth \n"), resp("Model", " other\n", 2)]}]
    (tmp_path / "data" / "usr").mkdir(parents=True)
    (tmp_path / "data" / "usr" / "tc_usr_data.json").write_text(json.dumps(items))
    ds = load_benchmark("usr_topicalchat", data_dir=tmp_path / "data", cache_dir=tmp_path / "cache")
    assert [r["id"] for r in ds] == ["usr_topicalchat/0/0", "usr_topicalchat/0/1"]
    assert [t["text"] for t in ds[1]["context"]] == ["turn one", "turn two"]
    assert ds[1]["response"] == "other" and ds[1]["references"] == ["truth"] and ds[1]["knowledge"] == "a fact\n"
    assert ds[1]["subset"] == "Model" and ds[1]["human"] == [2.0] * 6

    items[0]["context"] = "turn one\n\nturn two\n"
    (tmp_path / "data" / "usr" / "tc_usr_data.json").write_text(json.dumps(items))
    with pytest.raises(BenchmarkDataError, match="item 0, field 'context turn 1'"):
        load_benchmark("usr_topicalchat", data_dir=tmp_path / "data", cache_dir=tmp_path / "cache")


def test_grade_eval_alignment(tmp_path):
    root = write_grade(tmp_path / "ok")
    ds = load_benchmark("grade_eval", data_dir=root, cache_dir=tmp_path / "cache")
    assert ds["id"] == ["grade_eval/dailydialog/sysA/0", "grade_eval/dailydialog/sysA/1"]
    assert ds[0]["context"] == [{"speaker": None, "text": "a1"}, {"speaker": None, "text": "a2"}]
    assert ds["references"] == [["refa"], ["refb"]] and ds["human"] == [[2.0], [pytest.approx(13 / 3)]]

    # txt lines in another order: recovered by (context, response), json order kept
    swapped = write_grade(tmp_path / "swapped", ctx_lines=[("b1|||b2", "rb", "refb", "4.33"),
                                                           ("a1|||a2", "ra", "refa", "2.0")])
    ds = load_benchmark("grade_eval", data_dir=swapped, cache_dir=tmp_path / "cache")
    assert ds["response"] == ["ra", "rb"] and ds["references"] == [["refa"], ["refb"]]
    assert ds["id"] == ["grade_eval/dailydialog/sysA/1", "grade_eval/dailydialog/sysA/0"]

    bad = write_grade(tmp_path / "bad", ctx_lines=[("a1|||a2", "ra", "refa", "2.0"), ("x|||y", "rb", "refb", "4.33")])
    with pytest.raises(BenchmarkAlignmentError, match="item 1"):
        load_benchmark("grade_eval", data_dir=bad, cache_dir=tmp_path / "cache")

    off = write_grade(tmp_path / "off", scores=["2.0", "4.2"])
    with pytest.raises(BenchmarkAlignmentError, match="HumanScores"):
        load_benchmark("grade_eval", data_dir=off, cache_dir=tmp_path / "cache")


def test_cache_keyed_on_data_dir_and_content(tmp_path):
    cache = tmp_path / "cache"
    a = write_fed(tmp_path / "a", tiny_fed_items())
    items = tiny_fed_items()
    items[0]["system"] = "Mitsuku"
    b = write_fed(tmp_path / "b", items)
    first = load_benchmark("fed_turn", data_dir=a, cache_dir=cache)
    again = load_benchmark("fed_turn", data_dir=a, cache_dir=cache)
    assert again.cache_files == first.cache_files  # re-run hits the cache
    assert load_benchmark("fed_turn", data_dir=b, cache_dir=cache)["system"] == ["Mitsuku"]
    # same directory, edited content -> rebuilt
    write_fed(a, items)
    assert load_benchmark("fed_turn", data_dir=a, cache_dir=cache)["system"] == ["Mitsuku"]


def test_export_writes_parquet_and_card(tmp_path):
    root = write_fed(tmp_path / "data", tiny_fed_items())
    out = tmp_path / "out"
    result = export_all(out, data_dir=root, names=["fed"], cache_dir=tmp_path / "cache")
    for name in ("fed_turn", "fed_dialogue"):
        path = out / "data" / name / "test-00000-of-00001.parquet"
        assert path.is_file()
        ds = datasets.load_dataset("parquet", data_files={"test": str(path)}, split="test",
                                   cache_dir=str(tmp_path / "rt"))
        assert ds.num_rows == 1 and ds.features == load_benchmark(name, data_dir=root, cache_dir=tmp_path / "cache").features
    text = (out / "README.md").read_text()
    header = yaml.safe_load(text.split("---\n")[1])
    assert [c["config_name"] for c in header["configs"]] == ["fed_turn", "fed_dialogue"]
    assert header["configs"][0]["data_files"] == [{"split": "test", "path": "data/fed_turn/test-00000-of-00001.parquet"}]
    assert "| fed_dialogue | Error recovery | 5 |" in text and "| fed_turn | Correct | 1 |" in text
    assert "{{" not in text
    assert result.fed_excluded["fed_dialogue"]["Error recovery"] == 5
    with pytest.raises(FileNotFoundError, match="template"):
        export_all(out, data_dir=root, names=["fed"], template=tmp_path / "missing.md")


# -- real data ----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def load(data_dir, tmp_path_factory):
    cache = tmp_path_factory.mktemp("benchmark-cache")
    memo = {}

    def _load(name, split="test"):
        if (name, split) not in memo:
            memo[name, split] = load_benchmark(name, split=split, data_dir=data_dir, cache_dir=cache)
        return memo[name, split]

    return _load


def _check_means(ds):
    for row in ds:
        assert len(row["aspects"]) == len(row["human"]) == len(row["ratings"]) == len(row["excluded"])
        for h, r in zip(row["human"], row["ratings"]):
            assert (h is None and not r) or h == pytest.approx(_mean(r), abs=1e-12)


@pytest.mark.data
def test_real_grade_eval(load, data_dir):
    ds = load("grade_eval")
    assert ds.num_rows == 1200
    counts = Counter(ds["subset"])
    assert len(counts) == 8 and set(counts.values()) == {150}
    src = json.loads((data_dir / "grade_eval/human_score/human_judgement.json").read_text())
    assert ds["response"] == [x["Response"].strip() for x in src]
    assert [[t["text"] for t in c] for c in ds["context"]] == [x["Context"].split("|||") for x in src]
    assert [r for r in ds["ratings"]] == [[[float(v) for v in json.loads(x["HumanScores"])]] for x in src]
    _check_means(ds)
    for sub in counts:
        scores = (data_dir / "grade_eval/human_score" / sub / "human_score.txt").read_text().split()
        refs = (data_dir / "grade_eval/eval_data" / sub / "human_ref.txt").read_text().splitlines()
        rows = ds.filter(lambda s: s == sub, input_columns="subset")
        assert [h[0] for h in rows["human"]] == pytest.approx([float(s) for s in scores], abs=0.005 + 1e-9)
        assert [r[0] for r in rows["references"]] == [r.strip() for r in refs]


@pytest.mark.data
def test_real_fed(load, data_dir):
    src = json.loads((data_dir / "fed/fed_data.json").read_text())
    turn, dial = load("fed_turn"), load("fed_dialogue")
    assert (turn.num_rows, dial.num_rows) == (375, 125)
    # order and content match the source
    turn_src = [(i, x) for i, x in enumerate(src) if "response" in x]
    dial_src = [(i, x) for i, x in enumerate(src) if "response" not in x]
    assert turn["id"] == [f"fed_turn/{i}" for i, _ in turn_src]
    assert dial["id"] == [f"fed_dialogue/{i}" for i, _ in dial_src]
    assert all(count_continuation_lines(x["context"]) == 0 for x in src)  # no continuation lines in the release
    for ds, pairs in ((turn, turn_src), (dial, dial_src)):
        for row, (_, x) in zip(ds, pairs):
            lines = [line.split(":", 1) for line in x["context"].split("\n")]
            assert [(t["speaker"], t["text"]) for t in row["context"]] == [(s, t.strip()) for s, t in lines]
            assert row["system"] == row["subset"] == x["system"]
            if "response" in x:
                assert "System: " + row["response"] == x["response"].strip()
    # excluded counts sum to the non-numeric ratings in the file, per aspect
    expected = Counter((("response" in x), a) for x in src for a, r in x["annotations"].items()
                       for v in r if not isinstance(v, (int, float)))
    got = Counter()
    for ds, is_turn in ((turn, True), (dial, False)):
        for row in ds:
            for a, n in zip(row["aspects"], row["excluded"]):
                got[is_turn, a] += n
    assert +got == expected and sum(expected.values()) == 167
    _check_means(turn)
    _check_means(dial)


@pytest.mark.data
def test_real_usr(load, data_dir):
    for name, fname, n, per in (("usr_topicalchat", "tc_usr_data.json", 360, 6),
                                ("usr_personachat", "pc_usr_data.json", 300, 5)):
        ds = load(name)
        assert ds.num_rows == n
        src = json.loads((data_dir / "usr" / fname).read_text())
        assert ds["response"] == [r["response"].strip() for x in src for r in x["responses"]]
        assert ds["system"] == [r["model"] for x in src for r in x["responses"]]
        assert ds["knowledge"] == [x["fact"] for x in src for _ in x["responses"]]
        assert len(Counter(ds["subset"])) == per
        assert all(len(r) == 1 for r in ds["references"])
        _check_means(ds)


@pytest.mark.data
def test_real_rade(load, data_dir):
    for name, total in (("rade_chitchat", 2590), ("rade_emotion", 4822), ("rade_persona", 4800)):
        splits = {s: load(name, s) for s in ("train", "validation", "test")}
        assert sum(d.num_rows for d in splits.values()) == total
        src = [json.loads(line) for line in
               (data_dir / "rade" / name.removeprefix("rade_") / "data.jsonl").read_text().splitlines()]
        where = {}
        for s, d in splits.items():
            idx = [int(i.rsplit("/", 1)[1]) for i in d["id"]]
            assert idx == sorted(idx)  # file order within a split
            where.update(dict.fromkeys(idx, s))
        assert sorted(where) == list(range(total))  # every row kept once
        # swapped pairs (and all rows of a context) share a split
        by_pair = {}
        for i, x in enumerate(src):
            by_pair.setdefault((tuple(x["context"]), frozenset((x["output"], x["reference"]))), set()).add(where[i])
        assert all(len(s) == 1 for s in by_pair.values())
        test = splits["test"]
        row = test[0]
        x = src[int(row["id"].rsplit("/", 1)[1])]
        assert row["human"] == [x["s_output"], x["s_reference"]] and row["references"] == [x["reference"]]
        _check_means(test)


@pytest.mark.data
def test_real_dailydialog(load, data_dir):
    val, test = load("dailydialog_pp", "validation"), load("dailydialog_pp", "test")
    assert (val.num_rows, test.num_rows) == (1028, 1142)
    src = [json.loads(line) for line in (data_dir / "dailydialog_plusplus/test.json").read_text().splitlines()]
    assert test["id"] == [x["id"] for x in src] and test[5]["context"] == src[5]["context"]
    counts = {s: load("dailydialog", s).num_rows for s in ("train", "validation", "test")}
    assert counts == {"train": 11118, "validation": 1000, "test": 1000}
    dd = load("dailydialog", "validation")
    first = json.loads((data_dir / "dailydialog/derived/validation.jsonl").read_text().splitlines()[0])
    assert {k: dd[0][k] for k in first} == first
