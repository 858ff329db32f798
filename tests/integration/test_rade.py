"""RADE on the real data: stage 1's substitute corpus does not leak the GRADE-DailyDialog evaluation contexts, the
RADE sets give every split examples, and BM25 pseudo-references from DailyDialog serve FED's turns."""

from __future__ import annotations

import pytest

from dialeval.metrics.rade.data import RADE_SETS, STAGE1_GRADES, stage1_examples, stage2_examples

pytestmark = pytest.mark.data


def test_stage1_substitute_holds_no_grade_evaluation_context(data_dir):
    from dialeval.benchmarks import load_benchmark

    grade = load_benchmark("grade_eval", split="test", data_dir=data_dir)
    last_turns = {c[-1]["text"].strip().lower() for c, s in zip(grade["context"], grade["subset"])
                  if s.startswith("dailydialog/")}
    train = stage1_examples(data_dir, "train", max_contexts=None, seed=42)
    validation = stage1_examples(data_dir, "validation", max_contexts=None, seed=42)
    contexts = {e.context for e in train} | {e.context for e in validation}
    assert {e.context for e in train}.isdisjoint({e.context for e in validation})
    assert 7000 < len(contexts) <= 7641 and len(validation) < 0.15 * len(train)
    assert not any(c[-1].strip().lower() in last_turns for c in contexts)
    assert {e.kind for e in train} == set(STAGE1_GRADES)


def test_every_rade_set_gives_examples_in_every_split(data_dir):
    sizes = {name: [len(stage2_examples(data_dir, [name], split)) for split in ("train", "validation", "test")]
             for name in RADE_SETS}
    assert sizes == {"chitchat": [1758, 414, 418], "emotion": [3684, 542, 596], "persona": [3636, 562, 602]}


def test_dailydialog_pseudo_references_for_fed_turns(data_dir):
    from dialeval.benchmarks import load_benchmark
    from dialeval.metrics.rade.retrieval import PseudoReferences

    fed = load_benchmark("fed_turn", split="test", data_dir=data_dir)
    retriever = PseudoReferences.from_source("dailydialog", data_dir=data_dir)
    contexts = [[t["text"] for t in c] for c in fed["context"][:20]]
    found = [retriever.retrieve(c, r) for c, r in zip(contexts, fed["response"][:20])]
    assert all(f.text.strip() for f in found) and all(f.text != r for f, r in zip(found, fed["response"][:20]))
    assert {f.route for f in found} == {"bm25"}  # every one of these contexts shares a word with DailyDialog
    assert found == [retriever.retrieve(c, r) for c, r in zip(contexts, fed["response"][:20])]  # deterministic
