"""RADE's training recipe (``dialeval train rade``) on a tiny fixture of the RADE sets and of DailyDialog++:

- stage 2 prepared here trains in a process where ``datasets`` cannot be imported and the data directory does not
  exist; its summary reports validation and test correlations per set, ``best/`` keeps the decoder (to train
  further from) and ``scoring/`` leaves it out and holds only the trained encoder layers and the regressor;
- stage 1 builds graded synthetic candidates, never sharing a context between train and validation; stage 2
  continues from it with ``--init-from``;
- the loss terms follow the options (the ablations), and bad option combinations are refused in one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from conftest import run_cli_blocking
from typer.testing import CliRunner

from dialeval.cli import app
from dialeval.metrics.rade.data import STAGE1_GRADES, stage1_examples, stage1_split_of, stage2_examples
from dialeval.metrics.rade.options import RadeTrainingOptions
from dialeval.training.options import TrainingOptionsError

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TOPICS = ["the beach", "dinner", "a movie", "the weather", "work", "music", "football", "a trip", "books", "coffee",
          "the train", "a party", "school", "shopping", "the garden", "cooking"]
TINY = ["--batch-size", "4", "--max-seq-length", "64", "--max-reference-length", "16", "--trainable-encoder-layers",
        "1", "--device", "cpu", "--threads", "1"]


def _rows(name: str) -> list[dict]:
    rows = []
    for i, topic in enumerate(TOPICS):
        context = [f"Shall we talk about {topic} ({name})?", f"Yes, {topic} is nice."]
        good, bad = f"I really like {topic}, tell me more.", "Bananas."
        s_good, s_bad = 4.0 + (i % 3) / 3, 1.0 + (i % 4) / 4
        rows.append({"context": context, "output": bad, "reference": good, "s_output": s_bad, "s_reference": s_good})
        rows.append({"context": context, "output": good, "reference": bad, "s_output": s_good, "s_reference": s_bad})
    return rows


def _positives(topic: str) -> list[str]:
    return [f"I love {topic} very much indeed.", f"{topic} is fine by me, my friend.", f"Sure, {topic}."]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("rade-data")
    for name in ("chitchat", "emotion", "persona"):
        (root / "rade" / name).mkdir(parents=True)
        (root / "rade" / name / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows(name)))
    ddpp = root / "dailydialog_plusplus"
    ddpp.mkdir()
    topics = [f"{t} {k}" for k in ("today", "lately", "at all") for t in TOPICS]
    lines = [{"dialog_id": i, "context": [f"What do you think of {t}?"], "positive_responses": _positives(t)}
             for i, t in enumerate(topics)]
    (ddpp / "data_positives.json").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root


def invoke(out: Path, *extra: str):
    return CliRunner().invoke(app, ["train", "rade", "--output-dir", str(out), *TINY, *extra])


def test_stage2_examples_keep_both_copies_of_a_pair_in_one_split(data):
    seen: dict[tuple, list] = {}
    for split in ("train", "validation", "test"):
        for ex in stage2_examples(data, ["chitchat"], split):
            seen.setdefault(ex.context, []).append((split, ex))
    assert len(seen) == len(TOPICS)
    assert {split for copies in seen.values() for split, _ in copies} == {"train", "validation", "test"}
    for copies in seen.values():  # the two rows of a pair: one split, roles and scores swapped
        (split_a, a), (split_b, b) = copies
        assert split_a == split_b and (a.reference, a.candidate) == (b.candidate, b.reference)
        assert a.labels == b.labels[::-1] and a.source == "chitchat"


def test_stage1_candidates_are_graded_and_contexts_do_not_cross_splits(data):
    train = stage1_examples(data, "train", max_contexts=None, seed=0)
    validation = stage1_examples(data, "validation", max_contexts=None, seed=0)
    assert {e.context for e in train}.isdisjoint({e.context for e in validation})
    assert all(stage1_split_of(e.context) == "train" for e in train)
    assert {e.kind for e in train} == set(STAGE1_GRADES)
    for e in train:
        assert e.candidate_score == STAGE1_GRADES[e.kind] and e.reference != e.candidate
        own = _positives(e.context[0].removeprefix("What do you think of ").removesuffix("?"))
        assert (e.candidate in own) == (e.kind == "human")  # the random one answers another context
    assert len(stage1_examples(data, "train", max_contexts=5, seed=0)) <= 20


def test_loss_terms_follow_the_options(tmp_path):
    stage1 = RadeTrainingOptions(output_dir=str(tmp_path), stage=1).loss_weights()
    assert (stage1.reference_mse, stage1.ranking, stage1.generation, stage1.candidate_mse) == (0, 0, 1, 1)
    ablation = RadeTrainingOptions(output_dir=str(tmp_path), ranking=False, generation=False).loss_weights()
    assert (ablation.reference_mse, ablation.ranking, ablation.generation) == (1, 0, 0)


@pytest.mark.parametrize("values,message", [
    ({"stage": 3}, "stage must be 1 or 2"),
    ({"sets": "chitchat,news"}, "sets must name some of"),
    ({"stage": 1, "ranking": False}, "stage 2 ablations"),
    ({"use_reference": False}, "--no-ranking --no-reference-mse"),
    ({"frozen_cache": True, "trainable_encoder_layers": -1}, "freezes none"),
    ({"trainable_encoder_layers": -1}, "add --no-frozen-cache"),  # the cache is the default
    ({"frozen_cache": False, "frozen_cache_dir": "states"}, "--no-frozen-cache turns the cache off"),
])
def test_bad_option_combinations_are_refused(tmp_path, values, message):
    with pytest.raises(TrainingOptionsError, match=message):
        RadeTrainingOptions(output_dir=str(tmp_path), **values)


def test_stage2_trains_from_a_prepared_folder_without_datasets_and_writes_a_scoring_checkpoint(data, tmp_path):
    run = tmp_path / "ts"
    res = invoke(run, "--data-dir", str(data), "--prepare-only")
    assert res.exit_code == 0, res.output
    manifest = json.loads((run / "prepared.json").read_text())
    assert set(manifest["files"]) == {f"examples_{s}.jsonl.gz" for s in ("train", "validation", "test")}
    assert set(manifest["data"]) == {f"rade/{s}/data.jsonl" for s in ("chitchat", "emotion", "persona")}

    nowhere = tmp_path / "no-data-here"
    proc = run_cli_blocking(["train", "rade", "--output-dir", run, *TINY, "--epochs", "1", "--max-steps", "3"],
                            blocked=["datasets", "bm25s"], cwd=tmp_path, env={"DIALEVAL_DATA_DIR": str(nowhere)})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "stage 2: best val_correlation" in proc.stdout and "test chitchat Pearson" in proc.stdout
    summary = json.loads((run / "summary.json").read_text())
    assert summary["finished"] and summary["steps"] == 3 and summary["examples_seen"] == 12
    assert set(summary["test_correlations"]) == {"chitchat", "emotion", "persona", "all"}
    assert summary["loss_weights"] == {"reference_mse": 1.0, "candidate_mse": 1.0, "generation": 1.0,
                                       "ranking": 1.0, "ranking_margin": 0.1}

    from safetensors import safe_open

    with safe_open(str(run / "best" / "model.safetensors"), "pt") as fh:
        best_keys = set(fh.keys())
    with safe_open(str(run / "scoring" / "model.safetensors"), "pt") as fh:
        scoring = {k: fh.get_tensor(k) for k in fh.keys()}
    scoring_keys = set(scoring)
    assert any(k.startswith("decoder.") for k in best_keys)
    assert scoring_keys == {k for k in best_keys if not k.startswith("decoder.")}
    assert {k.split(".")[3] for k in scoring_keys if k.startswith("encoder.encoder.layer.")} == {"5"}  # top layer
    # by default the layer itself trains: the checkpoint holds it, and the regressor, in float16
    assert "encoder.encoder.layer.5.attention.self.query.weight" in scoring_keys
    assert not any("lora_" in k for k in scoring_keys)
    assert {t.dtype for t in scoring.values()} == {torch.float16}
    assert not any(k.startswith("encoder.embeddings.") for k in scoring_keys)
    config = json.loads((run / "scoring" / "config.json").read_text())
    assert config["use_decoder"] is False and config["encoder_weights_in_checkpoint"] is False

    # the scoring checkpoint scores like the run's best (the decoder plays no part in a score; float16 storage
    # rounds the trained weights)
    import dialeval

    item = {"contexts": [["Shall we talk about music?"]], "responses": ["I like music."], "references": ["Sure."]}
    assert dialeval.load_scorer("rade", checkpoint=run / "scoring", device="cpu").score(**item).scores == \
        pytest.approx(dialeval.load_scorer("rade", checkpoint=run, device="cpu").score(**item).scores, abs=2e-3)


def test_stage2_continues_from_stage1(data, tmp_path):
    from safetensors import safe_open

    pt, ts = tmp_path / "pt", tmp_path / "ts"
    res = invoke(pt, "--data-dir", str(data), "--stage", "1", "--epochs", "1", "--max-steps", "2", "--lora-rank", "2")
    assert res.exit_code == 0, res.output
    summary = json.loads((pt / "summary.json").read_text())
    assert summary["stage"] == 1 and set(summary) >= {"validation_correlations"}
    assert "test_correlations" not in summary
    res = invoke(ts, "--data-dir", str(data), "--sets", "emotion", "--init-from", str(pt), "--max-steps", "2",
                 "--no-ranking", "--lora-rank", "2")
    assert res.exit_code == 0, res.output
    summary = json.loads((ts / "summary.json").read_text())
    assert set(summary["test_correlations"]) == {"emotion", "all"} and summary["loss_weights"]["ranking"] == 0
    refused = invoke(tmp_path / "other", "--data-dir", str(data), "--init-from", str(pt), "--max-seq-length", "80",
                     "--lora-rank", "2")
    assert refused.exit_code == 2 and "max_seq_length=64 (now 80)" in refused.output, refused.output
    refused = invoke(tmp_path / "other", "--data-dir", str(data), "--init-from", str(pt), "--trainable-encoder-layers",
                     "2", "--lora-rank", "2")
    assert refused.exit_code == 2 and "trainable_encoder_layers=1 (now 2)" in refused.output, refused.output
    with safe_open(str(ts / "scoring" / "model.safetensors"), "pt") as fh:  # adapters, not the layer
        assert {k.rpartition(".")[2] for k in fh.keys() if k.startswith("encoder.")} == {"lora_A", "lora_B"}


def test_the_frozen_cache_is_the_default_and_can_be_turned_off(tmp_path):
    default = RadeTrainingOptions(output_dir=str(tmp_path))
    assert (default.frozen_cache, default.length_buckets, default.precision) == (True, 0, "fp32")
    every_layer = RadeTrainingOptions(output_dir=str(tmp_path), trainable_encoder_layers=-1, frozen_cache=False)
    assert not every_layer.frozen_cache


def test_frozen_cache_computes_each_row_once_and_later_batches_reuse_it(data, tmp_path):
    run = tmp_path / "cached"
    res = invoke(run, "--data-dir", str(data), "--sets", "emotion", "--epochs", "2", "--no-ranking", "--frozen-cache")
    assert res.exit_code == 0, res.output
    summary = json.loads((run / "summary.json").read_text())
    cache, rows_per_epoch = summary["frozen_cache"], summary["steps_per_epoch"] * 4
    assert summary["finished"] and (run / "scoring" / "model.safetensors").is_file()
    # every example asks twice (its evaluator input and its context); each distinct row was computed once
    assert cache["hits"] + cache["misses"] == 2 * 2 * rows_per_epoch
    assert cache["misses"] == cache["rows"] and cache["hits"] > 0 and cache["tokens"] > 0
    # a context's two examples (the swapped pair) share its states; every evaluator input is its own row
    assert rows_per_epoch < cache["rows"] < 2 * summary["examples"]["train"]
