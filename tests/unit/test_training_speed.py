"""``dialeval train-speed``: settings parse, rows regroup by length, and a tiny RADE run measures every setting as
asked (two steps each): bf16 autocast on only where asked, the threads and batch size observed in the steps, the
same rows bucketed with less padding, the first setting the ratio's reference, and the prepared folder untouched."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from dialeval.cli import app
from dialeval.training.capture import LoopInputsCaptured, capture_loop_inputs, capturing_loop_inputs
from dialeval.training.device import cpu_bf16_instructions
from dialeval.training.speed import (
    TABLE_COLUMNS,
    SettingResult,
    SpeedBenchmarkError,
    SpeedReport,
    SpeedSetting,
    bucketed,
    copy_prepared,
    format_table,
    parse_settings,
    row_tokens,
    run_speed_benchmark,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TOPICS = ["the beach", "dinner", "a movie", "the weather", "work", "music", "football", "a trip", "books", "coffee",
          "the train", "a party", "school", "shopping", "the garden", "cooking"]
TINY = ["--sets", "chitchat", "--batch-size", "4", "--max-seq-length", "64", "--max-reference-length", "16",
        "--trainable-encoder-layers", "1", "--device", "cpu", "--threads", "1"]


def test_settings_parse_in_any_order_and_mistakes_are_named():
    first, second = parse_settings("fp32, batch=32+bucket+bf16+threads=4")
    assert first == SpeedSetting() and first.name == "fp32"
    assert second == SpeedSetting(precision="bf16", padding="bucket", threads=4, batch_size=32)
    assert second.name == "batch=32+bucket+bf16+threads=4"  # as written
    assert SpeedSetting(precision="bf16", padding="bucket", threads=4, batch_size=32).name == \
        "bf16+bucket+threads=4+batch=32"
    cached = parse_settings("fused+frozen-cache+bucket")[0]
    assert cached == SpeedSetting(padding="bucket", frozen_cache=True, fused_optimizer=True)
    assert dataclasses.replace(cached, label="").name == "fp32+bucket+frozen-cache+fused"
    for text, message in [("fp16", "unknown part 'fp16'"), ("bf16+fp32", "names its precision twice"),
                          ("batch=0", "above 0"), ("fused+fused", "names its fused_optimizer twice"),
                          ("threads=x", "whole number"),
                          ("fp32,longest", "'fp32' and 'longest' are the same"), (" , ", "no setting")]:
        with pytest.raises(SpeedBenchmarkError, match=message):
            parse_settings(text)


def test_bucketing_regroups_the_same_rows_by_length_into_batches_of_the_same_sizes():
    raws = [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    lengths = [np.array([9, 1, 5]), np.array([2, 8, 3]), np.array([7, 4, 6])]
    batches = bucketed(raws, lengths, seed=0)
    assert sorted(map(len, batches)) == [3, 3, 3] and all(isinstance(b, list) for b in batches)
    assert sorted(i for b in batches for i in b) == list(range(9))
    by_row = dict(zip(range(9), np.concatenate(lengths)))
    assert sorted(sorted(by_row[i] for i in b) for b in batches) == [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    arrays = bucketed([np.array([0, 1]), np.array([2, 3])], [np.array([5, 1]), np.array([4, 2])], seed=1)
    assert all(isinstance(b, np.ndarray) for b in arrays)
    assert sorted(sorted(b.tolist()) for b in arrays) == [[0, 2], [1, 3]]  # lengths 5, 1, 4, 2


def test_row_tokens_sum_every_mask_of_a_row():
    mask = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0]])
    batch = ({"input_ids": mask, "attention_mask": mask}, {"attention_mask": mask[:, :2], "other": [mask]})
    padded, real = row_tokens(batch, 2)
    assert padded.tolist() == [6, 6] and real.tolist() == [5, 2]
    assert row_tokens({"input_ids": mask}, 2) is None


def test_capture_hands_over_the_loop_inputs_and_only_inside_the_block(tmp_path):
    from dialeval.training import TrainingArguments, train

    model = torch.nn.Linear(2, 1)

    def recipe(opts):
        return train(model, args=TrainingArguments(output_dir=str(tmp_path / "run"), head_learning_rate=1e-3),
                     options=opts,
                     epoch_batches=lambda epoch: iter([torch.ones(1, 2)] * 4), steps_per_epoch=4,
                     loss_fn=lambda m, b: m(b).sum(), evaluate_fn=lambda m: {"v": 0.0},
                     save_best=lambda m, p: None, selection_key="v", greater_is_better=True,
                     learning_rate_of=lambda name: 1e-3 if name == "bias" else 2e-5)

    inputs = capture_loop_inputs(recipe, None)
    assert inputs.model is model and inputs.batches_per_epoch == 4 and inputs.collate is None
    assert (inputs.learning_rate_of("bias"), inputs.learning_rate_of("weight")) == (1e-3, 2e-5)
    assert not (tmp_path / "run").exists()  # the loop wrote nothing
    with capturing_loop_inputs(), pytest.raises(LoopInputsCaptured):
        recipe(None)
    with pytest.raises(RuntimeError, match="without calling the training loop"):
        capture_loop_inputs(lambda opts: {}, None)


def _rows() -> list[dict]:
    """Swapped pairs of 32 contexts of varied lengths (every split of the set gets some)."""
    rows = []
    for i, topic in enumerate(f"{t} {when}" for when in ("today", "tomorrow") for t in TOPICS):
        context = [f"Shall we talk about {topic}?" + " Tell me everything you know about it." * (i % 4)]
        good, bad = f"I really like {topic}, tell me more." + " Really." * (i % 5), "Bananas."
        rows.append({"context": context, "output": bad, "reference": good, "s_output": 1.0 + (i % 4) / 4,
                     "s_reference": 4.0 + (i % 3) / 3})
        rows.append({"context": context, "output": good, "reference": bad, "s_output": 4.0 + (i % 3) / 3,
                     "s_reference": 1.0 + (i % 4) / 4})
    return rows


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("rade-data")
    (data / "rade" / "chitchat").mkdir(parents=True)
    (data / "rade" / "chitchat" / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    out = tmp_path_factory.mktemp("runs") / "rade"
    res = CliRunner().invoke(app, ["train", "rade", "--output-dir", str(out), "--data-dir", str(data), *TINY,
                                   "--prepare-only"])
    assert res.exit_code == 0, res.output
    return out


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_copy_prepared_leaves_what_training_wrote(prepared, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    for name, text in _files(prepared).items():
        (run / name).write_bytes(text)
    (run / "best").mkdir()
    (run / "best" / "model.safetensors").write_bytes(b"x")
    (run / "log.jsonl").write_text("{}\n")
    target = tmp_path / "copy"
    target.mkdir()
    assert copy_prepared(run, target) is True
    assert _files(target) == _files(prepared)
    assert copy_prepared(tmp_path / "missing", target) is False


SETTINGS = "fp32,bf16,bucket,threads=2+batch=2,frozen-cache+fused"


@pytest.fixture(scope="module")
def measured(prepared) -> tuple[dict, dict, dict]:
    """(the JSON report of two rounds of two steps per setting, the prepared folder's files before and after)."""
    before = _files(prepared)
    # the command's own options without the cache (RADE's default), so that only the setting naming it has it
    res = CliRunner().invoke(app, ["train-speed", "rade", "--output-dir", str(prepared), *TINY, "--no-generation",
                                   "--no-frozen-cache", "--settings", SETTINGS, "--steps", "2", "--rounds", "2", "--warmup", "1", "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout[res.stdout.index("{"):]), before, _files(prepared)


def test_every_setting_runs_as_asked_on_rades_real_batches(measured):
    report, before, after = measured
    assert after == before  # the prepared folder is read, never written
    assert report["metric"] == "rade" and report["device"] == "cpu" and report["examples_unit"] == "examples"
    assert report["cpu_bf16"] == list(cpu_bf16_instructions())  # what bf16's figure depends on
    results = {r["setting"]: r for r in report["results"]}
    assert list(results) == SETTINGS.split(",")
    for r in results.values():
        assert r["steps"] == 4 and len(r["round_steps_per_second"]) == 2  # 2 steps in each of 2 rounds
        assert r["steps_per_second"] > 0 and np.isfinite(r["mean_loss"])
        assert r["examples_per_second"] == pytest.approx(r["steps_per_second"] * r["batch_size"])
        assert r["ratio"] == pytest.approx(r["examples_per_second"] / results["fp32"]["examples_per_second"])
        assert r["tokens_per_row"] >= r["real_tokens_per_row"] > 0
    assert results["fp32"]["ratio"] == 1.0
    assert results["fp32"]["observed_autocast"] == [False] and results["bf16"]["observed_autocast"] == [True]
    assert results["bucket"]["observed_autocast"] == [False] and results["bucket"]["precision"] == "fp32"
    assert results["threads=2+batch=2"]["observed_threads"] == [2] and results["fp32"]["observed_threads"] == [1]
    assert results["threads=2+batch=2"]["observed_rows_per_batch"] == [2]
    assert results["fp32"]["observed_rows_per_batch"] == [4] and results["fp32"]["batch_size"] == 4
    # bucketing: the same rows (the same real tokens), batched by length, so less padding
    # the recipe again with --frozen-cache, the loop's optimizer fused: the same rows
    cached = results["frozen-cache+fused"]
    assert cached["frozen_cache"] and cached["fused_optimizer"] and not results["fp32"]["frozen_cache"]
    assert not results["fp32"]["fused_optimizer"] and cached["tokens_per_row"] == results["fp32"]["tokens_per_row"]
    bucket, longest = results["bucket"], results["fp32"]
    assert bucket["real_tokens_per_row"] == pytest.approx(longest["real_tokens_per_row"])
    assert bucket["tokens_per_row"] < longest["tokens_per_row"]


def test_the_table_has_a_row_per_setting(measured):
    data = measured[0]
    report = SpeedReport(**{**data, "results": [SettingResult(**r) for r in data["results"]]})
    lines = format_table(report).splitlines()
    bf16 = ", ".join(cpu_bf16_instructions()) or "none"
    assert lines[0].startswith(f"rade on cpu (bf16 instructions: {bf16}): 2 timed steps x 2 rounds per setting")
    assert lines[1].split("  ")[0] == "setting" and all(c in lines[1] for c in TABLE_COLUMNS)
    rows = [line.split() for line in lines[2:]]
    assert [r[0] for r in rows] == SETTINGS.split(",")
    assert [r[4] for r in rows][0] == "1.00"  # ratio
    assert [r[8] for r in rows] == ["off", "on", "off", "off", "off"]  # autocast
    assert [r[9] for r in rows] == ["1", "1", "1", "2", "1"] and [r[10] for r in rows] == ["4", "4", "4", "2", "4"]


def test_a_recipe_without_token_batches_cannot_bucket():
    from dialeval.training.capture import LoopInputs
    from dialeval.training.speed import build_batches

    inputs = LoopInputs(model=torch.nn.Linear(2, 1), args=None, options=None,
                        epoch_batches=lambda epoch: iter([[0, 1], [2, 3]]), batches_per_epoch=2,
                        loss_fn=lambda m, b: m(b).sum(), collate=lambda rows: {"x": torch.ones(len(rows), 2)},
                        learning_rate_of=lambda name: 1.0)
    assert build_batches(inputs, 2, "longest", seed=0).tokens is None
    with pytest.raises(SpeedBenchmarkError, match="no attention mask"):
        build_batches(inputs, 2, "bucket", seed=0)


def test_frozen_cache_needs_a_recipe_with_the_option(tmp_path):
    from dialeval.metrics.dynaeval.options import DynaEvalTrainingOptions

    opts = DynaEvalTrainingOptions(output_dir=str(tmp_path / "missing"))
    with pytest.raises(SpeedBenchmarkError, match="frozen-cache needs a recipe with --frozen-cache; dynaeval's"):
        run_speed_benchmark(lambda o: None, opts, parse_settings("fp32+frozen-cache"), metric="dynaeval",
                            echo=lambda line: None)


def test_only_recipes_that_train_through_the_loop_have_a_speed_command():
    from dialeval.cli.train import recipes, trains_through_loop

    res = CliRunner().invoke(app, ["train-speed", "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    looped = [name for name, (_, recipe) in recipes().items() if trains_through_loop(recipe)]
    assert "grade" in looped and "ensemble" not in looped
    for name in recipes():
        assert (f" {name} " in res.output) == (name in looped), name
