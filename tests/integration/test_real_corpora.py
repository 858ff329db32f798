"""Metric data pipelines on the real corpora (``../shared/data``): skipped with the reason when the data is absent."""

from collections import Counter

import pytest

from dialeval.benchmarks import load_benchmark
from dialeval.metrics.bert_ruber.data import dailydialog_pairs
from dialeval.metrics.dynaeval.data import build_pairs, filter_dialogues, subsample
from dialeval.metrics.grade.conceptnet import read_cn100k
from dialeval.metrics.grade.graph import ConceptGraph


@pytest.mark.data
def test_dynaeval_pairs_from_real_dailydialog(data_dir):
    ds = load_benchmark("dailydialog", split="validation", data_dir=data_dir)
    dialogues = list(ds["utterances"])
    kept = filter_dialogues(dialogues)
    assert len(dialogues) == 1000 and len(kept) == 932
    chosen = subsample(kept, 40, seed=1, split="validation")
    pairs = build_pairs([dialogues[i] for i in chosen], [str(i) for i in chosen], split="validation", seed=1,
                        perturbations=20)
    per_dialogue = Counter(p.dialogue_id for p in pairs.pairs)
    assert len(per_dialogue) == 40 and max(per_dialogue.values()) == 20
    kinds = Counter(p.kind for p in pairs.pairs)
    assert kinds["ur"] == 400 and 0 < kinds["ss"] <= 400


@pytest.mark.data
def test_bert_ruber_pairs_from_real_dailydialog(data_dir):
    pairs = dailydialog_pairs("validation", context_turns=2, limit=None, seed=0, data_dir=str(data_dir))
    assert 6_000 < len(pairs) < 8_000
    assert all(1 <= len(p.context) <= 2 and p.response.strip() for p in pairs)
    assert len(set(pairs)) == len(pairs)
    sub = dailydialog_pairs("validation", context_turns=2, limit=100, seed=0, data_dir=str(data_dir))
    assert len(sub) == 100 and sub == dailydialog_pairs("validation", context_turns=2, limit=100, seed=0,
                                                        data_dir=str(data_dir))


@pytest.mark.data
def test_grade_concept_graph_from_real_cn100k(data_dir):
    triples, stats = read_cn100k(data_dir / "conceptnet_cn100k")
    assert stats["train.txt"] == {"rows": 100000, "kept": 100000, "negatives_dropped": 0}
    assert stats["dev1.txt"]["negatives_dropped"] == 600 and stats["dev2.txt"]["negatives_dropped"] == 600
    assert stats["test.txt"]["negatives_dropped"] == 0
    g = ConceptGraph.from_cn100k(data_dir)
    assert g.n_nodes == 78334 and g.n_edges == 99847
    assert g.lookup("hockey") is not None and g.lookup("yo-yo") is not None
    assert g.lookup("play_on_ice") == g.index["play on ice"]
    assert ("IsA", "land", "gas") not in set(triples)  # a corrupted dev triple


@pytest.mark.data
@pytest.mark.parametrize("name", ["rade_chitchat", "rade_emotion", "rade_persona"])
def test_rade_splits_keep_contexts_and_swapped_pairs_together(data_dir, name):
    from dialeval.benchmarks.rade import PROPORTIONS

    splits = {s: load_benchmark(name, split=s, data_dir=data_dir) for s in ("train", "validation", "test")}
    contexts = {s: {tuple(t["text"] for t in row["context"]) for row in ds} for s, ds in splits.items()}
    assert not (contexts["train"] & contexts["validation"] or contexts["train"] & contexts["test"]
                or contexts["validation"] & contexts["test"])
    for ds in splits.values():  # every pair's swapped copy is in the same split
        pairs = Counter((tuple(t["text"] for t in row["context"]), row["response"], row["references"][0])
                        for row in ds)
        assert all(pairs[(c, ref, out)] for c, out, ref in pairs)
    total = sum(len(c) for c in contexts.values())
    train, validation, test = PROPORTIONS[name]
    assert abs(len(contexts["train"]) / total - train / (train + validation + test)) < 0.05
    assert sum(ds.num_rows for ds in splits.values()) == {"rade_chitchat": 2590, "rade_emotion": 4822,
                                                          "rade_persona": 4800}[name]


def test_chitchat_corpus_from_the_installed_package():
    pytest.importorskip("chitchat_dataset", reason="the chitchat corpus is not installed: pip install "
                                                   "'dialeval[chitchat]' (or pip install --no-deps chitchat-dataset)")
    import json

    from dialeval.benchmarks.chitchat import SOURCE_FILE, chitchat_folder, load_chitchat

    raw = json.loads((chitchat_folder() / SOURCE_FILE).read_text(encoding="utf-8"))
    messages = [m for chat in raw.values() for group in chat["messages"] for m in group]
    assert len(raw) == 7168 and len(messages) == 258145  # the package's own statistics
    splits = {s: load_chitchat(s) for s in ("train", "validation")}
    assert len(splits["validation"]) == 717 and len(splits["train"]) == 7168 - 717
    rows = [row for ds in splits.values() for row in ds]
    assert sum(sum(r["messages"]) for r in rows) == sum(bool(m["text"].strip()) for m in messages)
    for r in rows:  # turns alternate between the speakers; a chat of one sender id is one turn
        assert all(a != b for a, b in zip(r["speakers"], r["speakers"][1:])) and max(r["speakers"]) <= 1
        assert len(r["utterances"]) == len(r["speakers"]) == len(r["messages"])
        assert all(u.strip() == u and u for u in r["utterances"])
