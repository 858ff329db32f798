"""GRADE end to end on tiny fixtures: training command, small checkpoint, scorer, evaluate module."""

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, write_dailydialog
from conftest import TINY_DIALOGUES as DIALOGUES

from dialeval.metrics.grade.train import GradeTrainingOptions, run

TRIPLES = [
    ("AtLocation", "towel", "beach"), ("RelatedTo", "beach", "sea"), ("RelatedTo", "swim", "sea"),
    ("UsedFor", "phone", "call"), ("RelatedTo", "water", "sea"), ("AtLocation", "phone", "store"),
    ("UsedFor", "water", "cook"), ("RelatedTo", "soup", "chicken"), ("RelatedTo", "carrot", "vegetable"),
    ("RelatedTo", "doctor", "medicine"), ("IsA", "dog", "animal"), ("RelatedTo", "movie", "ticket"),
    ("RelatedTo", "popcorn", "movie"), ("AtLocation", "train", "station"), ("RelatedTo", "coffee", "cafe"),
    ("AtLocation", "cafe", "station"), ("RelatedTo", "food", "sandwich"), ("RelatedTo", "onion", "vegetable"),
]


def write_grade_fixture(root: Path) -> Path:
    """A tiny data directory for GRADE training: DailyDialog splits and a ConceptNet-100K ``train.txt`` (also used
    by test_grade_prepared)."""
    write_dailydialog(root, {"train": DIALOGUES * 2, "validation": DIALOGUES[:3], "test": DIALOGUES[3:]})
    cn = root / "conceptnet_cn100k"
    cn.mkdir()
    (cn / "train.txt").write_text("".join(f"{r}\t{h}\t{t}\n" for r, h, t in TRIPLES))
    return root


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    data = write_grade_fixture(tmp_path_factory.mktemp("data"))
    out = tmp_path_factory.mktemp("run")
    opts = GradeTrainingOptions(output_dir=str(out), data_dir=str(data), max_positives=12, max_val_positives=6,
                                max_steps=2, eval_every=1, batch_size=4, device="cpu")
    with pytest.MonkeyPatch.context() as env:  # graph tables are cached here, not in the user's cache
        env.setenv("DIALEVAL_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        summary = run(opts)
    return data, out, summary, opts


def test_training_writes_a_small_best_checkpoint(trained):
    _, out, summary, _ = trained
    assert summary["steps"] == 2 and summary["train_pairs"] == 24 and summary["finished"] is True
    assert summary["device"] == "cpu" and summary["pairs_seen"] == 2 * 4
    best = out / "best"
    for name in ("config.json", "model.safetensors", "keywords.json", "modeling_grade.py", "graph/meta.json"):
        assert (best / name).exists(), name
    assert all(f.stat().st_size < 15_000_000 for f in best.rglob("*") if f.is_file())
    config = json.loads((best / "config.json").read_text())
    assert config["encoder_weights_in_checkpoint"] is False
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log if r["event"] == "eval"] == [1, 2]


def test_training_resumes_where_it_stopped(trained):
    _, out, _, opts = trained
    opts.max_steps = 3
    summary = run(opts)
    assert summary["steps"] == 3
    evals = [json.loads(line)["step"] for line in (out / "log.jsonl").read_text().splitlines()
             if json.loads(line)["event"] == "eval"]
    assert evals == [1, 2, 3]  # steps 1-2 were not repeated


def test_scorer_on_trained_checkpoint_is_deterministic(trained):
    import dialeval

    _, out, _, _ = trained
    scorer = dialeval.load_scorer("grade", checkpoint=out / "best", device="cpu")
    contexts = [d[:2] for d in DIALOGUES] + [["I failed my exam."]]
    responses = [d[2] for d in DIALOGUES] + ["ok"]
    outs = [scorer.score(contexts=contexts, responses=responses, batch_size=b).scores for b in (1, 3, 64)]
    assert outs[0] == outs[1] == outs[2]
    assert all(0.0 < s < 1.0 for s in outs[0])
    again = dialeval.load_scorer("grade", checkpoint=out / "best", device="cpu")
    assert again.score(contexts=contexts, responses=responses).scores == outs[0]
    sig = scorer.score(contexts=contexts[:1], responses=responses[:1]).signature
    assert sig.startswith("metric:grade|") and "checkpoint_sha256:" in sig


def test_shipped_default_checkpoint_scores_offline():
    import dialeval

    scorer = dialeval.load_scorer("grade", device="cpu")
    rows = [json.loads(line) for line in (ROOT / "dialeval/resources/example_dialogues.jsonl").read_text().splitlines()]
    out = scorer.score(contexts=[r["context"] for r in rows], responses=[r["response"] for r in rows], batch_size=3)
    assert len(out.scores) == len(rows) and np.all(np.isfinite(out.scores))
    assert out.scores == scorer.score(contexts=[r["context"] for r in rows],
                                      responses=[r["response"] for r in rows], batch_size=64).scores
    assert "checkpoint:default" in out.signature


def test_evaluate_module_matches_the_scorer():
    import evaluate

    import dialeval

    metric = evaluate.load(str(ROOT / "metrics" / "grade"))
    contexts = [["Want to get lunch?", "Yes, I'm starving."], ["I lost my keys."]]
    predictions = ["Great, the pizza place opens at noon.", "Bananas are yellow."]
    res = metric.compute(predictions=predictions, contexts=contexts)
    direct = dialeval.load_scorer("grade", device="cpu").score(contexts=contexts, responses=predictions)
    assert res["scores"] == pytest.approx(direct.scores, abs=0)
    assert res["mean_score"] == pytest.approx(direct.system_score)
    assert res["signature"] == direct.signature
