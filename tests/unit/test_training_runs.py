"""``dialeval runs``: fake run folders (what the loop and the recipes write) read back as finished, running, stopped
or prepared, with steps of the total, examples of the paper's budget, the latest validation, the speed over the
latest session's log and the time left; the default folder comes from ``$DIALEVAL_RUNS_DIR``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dialeval.cli import app
from dialeval.metrics.bert_ruber.spec import DAILYDIALOG_TRAIN_PAIRS
from dialeval.metrics.grade.spec import DAILYDIALOG_TRAIN_WINDOWS
from dialeval.training.runs import (
    RUNS_DIR_ENV,
    budgeted_metrics,
    list_runs,
    paper_budget,
    recent_speed,
    run_status,
)

NOW = 1_800_000_000.0
HOST = socket.gethostname()


def _write(folder: Path, name: str, value) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(value))


def _run(folder: Path, *, metric: str = "grade", options: dict | None = None, total: int = 1000,
         steps_per_epoch: int = 200, log: list[dict] | None = None, summary: dict | None = None,
         progress_step: int | None = None, process: dict | None = None, selection: str = "val_pooled_auc") -> Path:
    _write(folder, "prepared.json", {"metric": metric, "options": {}, "files": {}})
    options = {"batch_size": 16, "gradient_accumulation": 1, "epochs": 5, "max_steps": None, **(options or {})}
    _write(folder, "training_args.json", {"options": options, "loop": {}, "total_steps": total,
                                          "steps_per_epoch": steps_per_epoch, "selection_key": selection})
    if log is not None:
        (folder / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in log))
    if progress_step is not None:
        _write(folder, "progress.json", {"step": progress_step, "best": None, "best_step": -1, "history": []})
        (folder / "last_state").mkdir()
    if process is not None:
        _write(folder, "process.json", process)
    if summary is not None:
        _write(folder, "summary.json", summary)
    return folder


def _train_log(steps, start: float, seconds_per_step: float) -> list[dict]:
    return [{"event": "train", "step": s, "loss": 0.1, "time": start + s * seconds_per_step} for s in steps]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_recipes_declare_the_documented_budgets_in_their_units():
    assert set(budgeted_metrics()) == {"grade", "dynaeval", "bert_ruber", "pone", "rade", "amr_eval"}
    grade = paper_budget("grade")
    assert grade.examples(None, 1, {}) == 2 * DAILYDIALOG_TRAIN_WINDOWS * 5  # fixed: the run's epochs do not count
    assert paper_budget("rade", 1).examples(100, 3, {}) == 54_438 * 10
    assert paper_budget("rade", 2).examples(9_000, 3, {}) == 9_000 * 10  # the run's epoch, the paper's 10 epochs
    assert paper_budget("dynaeval").examples(1_000, 2, {}) == 20_000
    assert paper_budget("pone").examples(5_000, 10, {"max_positives": 0}) == 50_000
    assert paper_budget("pone").examples(5_000, 10, {"max_positives": 30_000}) is None  # a subsample is not the paper's
    assert paper_budget("amr_eval").examples(13_290, 10, {}) == 13_290 * 50  # the original code's 50 epochs
    assert paper_budget("amr_parser") is None


def test_a_running_run_reports_its_progress_speed_and_time_left(tmp_path):
    started = NOW - 3600
    log = _train_log(range(20, 620, 20), started, 2.0)  # 0.5 steps/s
    log.insert(10, {"event": "eval", "step": 200, "val_ranking_loss": 0.05, "val_pooled_auc": 0.71, "best": True,
                    "time": started + 401})
    log.append({"event": "eval", "step": 400, "val_ranking_loss": 0.04, "val_pooled_auc": 0.69, "time": started + 801})
    run = _run(tmp_path / "grade_full", log=log, progress_step=400,
               process={"pid": os.getpid(), "host": HOST, "started": started})
    s = run_status(run, now=NOW)
    assert (s.metric, s.state, s.steps, s.total_steps) == ("grade", "running", 600, 1000)
    assert s.examples_seen == 600 * 16 and s.examples_budget == 2 * DAILYDIALOG_TRAIN_WINDOWS * 5
    assert (s.validation_key, s.validation, s.validation_step) == ("val_pooled_auc", 0.69, 400)
    assert (s.best, s.best_step) == (0.71, 200)
    assert s.steps_per_second == pytest.approx(0.5)
    assert s.seconds_left == pytest.approx(400 / 0.5)
    assert s.last_log_age == pytest.approx(NOW - (started + 1200))


def test_speed_counts_the_latest_session_only():
    first = _train_log(range(20, 220, 20), 0.0, 1.0)  # 1 step/s, then stopped at step 200 and resumed from 100
    second = _train_log(range(120, 320, 20), 10_000.0, 4.0)  # 0.25 steps/s
    assert recent_speed(first + second, started=None) == pytest.approx(0.25)
    assert recent_speed(first + second, started=10_000.0) == pytest.approx(0.25)
    assert recent_speed(first[:1], started=None) is None
    assert recent_speed([{"event": "train", "step": 20}, {"event": "train", "step": 40}], started=None) is None


def test_finished_stopped_killed_and_prepared_runs(tmp_path):
    finished = _run(tmp_path / "a_finished", metric="rade", options={"stage": 2, "epochs": 3}, total=30,
                    steps_per_epoch=10, selection="val_correlation",
                    log=[{"event": "eval", "step": 30, "val_correlation": 0.4, "best": True, "time": NOW - 50}],
                    summary={"finished": True, "steps": 30, "device": "cuda:0 (NVIDIA H100)"},
                    process={"pid": os.getpid(), "host": HOST, "started": NOW - 10_000})
    # the process that wrote process.json is this one and still alive, but summary.json is newer: it ended
    os.utime(finished / "summary.json", (NOW, NOW))
    stopped = _run(tmp_path / "b_stopped", total=1000, log=_train_log([20, 40], NOW - 100, 1.0),
                   summary={"finished": False, "steps": 40, "total_steps": 1000}, progress_step=40,
                   process={"pid": os.getpid(), "host": HOST, "started": NOW - 200})
    os.utime(stopped / "summary.json", (NOW, NOW))
    killed = _run(tmp_path / "c_killed", log=_train_log([20, 40, 60], NOW - 100, 1.0), progress_step=40,
                  process={"pid": _dead_pid(), "host": HOST, "started": NOW - 200})
    elsewhere = _run(tmp_path / "d_elsewhere", log=_train_log([20], NOW - 100, 1.0),
                     process={"pid": 1, "host": HOST + "-other", "started": NOW - 200})
    _write(tmp_path / "e_prepared", "prepared.json", {"metric": "bert_ruber", "options": {}, "files": {}})
    (tmp_path / "not_a_run").mkdir()
    _run(tmp_path / "f_pone" / "stage1", metric="pone")  # a stage that trains in its own subfolder
    (tmp_path / "f_pone" / "stage1" / "prepared.json").unlink()
    _write(tmp_path / "f_pone", "prepared.json", {"metric": "pone", "options": {}, "files": {}})

    runs = {s.name: s for s in list_runs(tmp_path, now=NOW)}
    assert list(runs) == ["a_finished", "b_stopped", "c_killed", "d_elsewhere", "e_prepared", "f_pone",
                          "f_pone/stage1"]
    assert (runs["a_finished"].state, runs["a_finished"].seconds_left) == ("finished", None)
    assert runs["a_finished"].examples_budget == 10 * 16 * 10  # RADE stage 2: the run's epoch, 10 epochs
    assert runs["a_finished"].device == "cuda:0 (NVIDIA H100)" and runs["a_finished"].validation == 0.4
    assert (runs["b_stopped"].state, runs["b_stopped"].steps, runs["b_stopped"].resume_step) == ("stopped", 40, 40)
    assert runs["b_stopped"].seconds_left == pytest.approx(960 / 1.0)  # 960 steps left at 1 step/s
    assert (runs["c_killed"].state, runs["c_killed"].steps, runs["c_killed"].resume_step) == ("stopped", 60, 40)
    assert runs["d_elsewhere"].state == "unknown" and "-other" in runs["d_elsewhere"].note
    assert (runs["e_prepared"].state, runs["e_prepared"].steps, runs["e_prepared"].metric) == \
        ("prepared", 0, "bert_ruber")
    assert runs["f_pone/stage1"].metric == "pone" and runs["f_pone/stage1"].state == "stopped"


def test_a_run_of_an_older_loop_is_judged_by_its_log_age(tmp_path):
    old = _run(tmp_path / "old", log=[{"event": "train", "step": 20, "loss": 0.1}])
    os.utime(old / "log.jsonl", (NOW - 60, NOW - 60))
    assert run_status(old, now=NOW).state == "running"
    assert run_status(old, now=NOW + 3600).state == "stopped"
    assert run_status(old, now=NOW).steps_per_second is None  # no times in its log


def test_the_command_lists_the_runs_of_the_env_folder_as_a_table_or_json(tmp_path, monkeypatch):
    run = _run(tmp_path / "grade_full", log=_train_log([20, 40], NOW - 100, 1.0), progress_step=40,
               summary={"finished": False, "steps": 40, "total_steps": 1000})
    for name in ("log.jsonl", "summary.json"):  # written two hours ago (the command reads the clock)
        os.utime(run / name, (time.time() - 7200,) * 2)
    monkeypatch.setenv(RUNS_DIR_ENV, str(tmp_path))
    res = CliRunner().invoke(app, ["runs"])
    assert res.exit_code == 0, res.output
    header, row, *rest = res.stdout.splitlines()
    assert header.split()[:4] == ["run", "metric", "state", "steps"]
    assert row.split()[:4] == ["grade_full", "grade", "stopped", "40/1,000"]
    assert f"640 / {2 * DAILYDIALOG_TRAIN_WINDOWS * 5:,} (0.1%)" in row
    assert rest == ["examples counted as grade: ranking pairs"]
    res = CliRunner().invoke(app, ["runs", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    (entry,) = json.loads(res.stdout)
    assert entry["name"] == "grade_full" and entry["examples_seen"] == 640 and entry["steps_per_second"] == 1.0
    missing = CliRunner().invoke(app, ["runs", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "no folder" in missing.output


def test_a_shipped_checkpoint_records_its_finished_run_against_the_papers_budget(tmp_path):
    from dialeval.training.runs import RunRecordError, write_training_record

    run = _run(tmp_path / "runs" / "bert_ruber_full", metric="bert_ruber",
               options={"epochs": 20, "batch_size": 256, "max_positives": 0, "precision": "fp32", "threads": 1,
                        "device": "cpu"}, total=5400, steps_per_epoch=270, selection="val_accuracy",
               log=[{"event": "eval", "step": 4000, "val_accuracy": 0.84, "best": True, "time": NOW - 60}],
               summary={"finished": True, "steps": 5400, "total_seconds": 5400.0, "seconds_cover": "run",
                        "device": "cpu"})
    checkpoint = tmp_path / "checkpoint"
    fields = dict(command="dialeval train bert-ruber --max-positives 0", commit="abc1234", beside="a GRADE run")
    with pytest.raises(RunRecordError, match="no config.json"):
        write_training_record(run, checkpoint, **fields)
    _write(checkpoint, "config.json", {})
    record = json.loads(write_training_record(run, checkpoint, **fields).read_text())
    assert record["examples_seen"] == 5400 * 256 and record["optimizer_steps"] == 5400
    # BERT-RUBER's budget: every DailyDialog training pair, each of the run's 20 epochs
    assert record["paper_budget_examples"] == DAILYDIALOG_TRAIN_PAIRS * 20
    assert record["paper_budget_share"] == round(5400 * 256 / (DAILYDIALOG_TRAIN_PAIRS * 20), 4)
    assert record["unit"] == "positives" and record["hours"] == 1.5 and record["precision"] == "fp32"
    assert record["validation"] == {"key": "val_accuracy", "best": 0.84, "best_step": 4000}
    assert (record["command"], record["commit"], record["ran_beside"]) == tuple(fields.values())
    stopped = _run(tmp_path / "runs" / "stopped", summary={"finished": False, "steps": 40, "total_steps": 1000},
                   progress_step=40)
    with pytest.raises(RunRecordError, match="needs a finished run"):
        write_training_record(stopped, checkpoint, **fields)
    # the loop's seconds (every call of a resumed run) come before a recipe's wall time of its last call
    looped = _run(tmp_path / "runs" / "looped", metric="bert_ruber", options={"epochs": 20},
                  summary={"finished": True, "steps": 5400, "train_seconds": 1800.0, "seconds_cover": "run",
                           "total_seconds": 900.0})
    record = json.loads(write_training_record(looped, checkpoint, **fields).read_text())
    assert record["hours"] == 0.5 and record["hours_source"] == "the run's summary"
    # a run in stages (PONE's): the stages' loop seconds summed, not the last stage's
    staged = _run(tmp_path / "runs" / "staged", metric="bert_ruber", options={"epochs": 20},
                  summary={"finished": True, "steps": 5400, "train_seconds": 1800.0, "seconds_cover": "run",
                           "stages": {"stage1": {"seconds": 900.0}, "stage2": {"seconds": 1800.0}}})
    assert json.loads(write_training_record(staged, checkpoint, **fields).read_text())["hours"] == 0.75
    # a summary whose seconds cover its last call only is refused unless the hours are given, and then says so
    partial = _run(tmp_path / "runs" / "partial", metric="bert_ruber", options={"epochs": 20},
                   summary={"finished": True, "steps": 5400, "seconds": 47.6, "seconds_cover": "this_call"})
    with pytest.raises(RunRecordError, match="give the run's hours"):
        write_training_record(partial, checkpoint, **fields)
    record = json.loads(write_training_record(partial, checkpoint, hours=0.146, **fields).read_text())
    assert record["hours"] == 0.146 and record["hours_source"].startswith("given when recorded")
    # a summary that does not say what its seconds cover (written before the loop kept them) is refused too
    unsaid = _run(tmp_path / "runs" / "unsaid", metric="bert_ruber", options={"epochs": 20},
                  summary={"finished": True, "steps": 5400, "train_seconds": 0.0})
    with pytest.raises(RunRecordError, match="may cover its last call only"):
        write_training_record(unsaid, checkpoint, **fields)
    # a record written again keeps the conversions after training (dialeval checkpoint quantise) while the config
    # still stores int8 weights, and drops them once it does not (a new float checkpoint in the folder)
    from dialeval.training.runs import CONVERSIONS_FIELD

    steps = [{"command": "dialeval checkpoint quantise --checkpoint CHECKPOINT --min-params 65536"}]
    _write(checkpoint, "training.json", {**record, CONVERSIONS_FIELD: steps})
    _write(checkpoint, "config.json", {"int8_weights": ["text_proj"]})
    assert json.loads(write_training_record(looped, checkpoint, **fields).read_text())[CONVERSIONS_FIELD] == steps
    _write(checkpoint, "config.json", {})
    assert CONVERSIONS_FIELD not in json.loads(write_training_record(looped, checkpoint, **fields).read_text())


def test_a_stage_two_record_carries_the_stage_one_run_it_started_from(tmp_path):
    from dialeval.metrics.rade.spec import RADE_STAGE1_EXAMPLES
    from dialeval.training.runs import RunRecordError, write_training_record

    stage1 = _run(tmp_path / "runs" / "rade_pt", metric="rade", options={"stage": 1, "epochs": 10}, total=17050,
                  steps_per_epoch=1705, selection="val_correlation", progress_step=900,
                  log=[{"event": "eval", "step": 700, "val_correlation": 0.55, "best": True, "time": NOW - 90},
                       {"event": "eval", "step": 800, "val_correlation": 0.54, "time": NOW - 60}],
                  summary={"finished": False, "steps": 900, "total_steps": 17050, "best_step": 700,
                           "seconds": 7200.0, "seconds_cover": "run", "device": "cpu"})
    for name in ("log.jsonl", "summary.json"):  # written two hours ago: stopped (the record reads the clock)
        os.utime(stage1 / name, (time.time() - 7200,) * 2)
    stage2 = _run(tmp_path / "runs" / "rade_ts", metric="rade",
                  options={"stage": 2, "epochs": 10, "init_from": "runs/rade_pt"}, total=5670, steps_per_epoch=567,
                  selection="val_correlation",
                  log=[{"event": "eval", "step": 567, "val_correlation": 0.41, "best": True, "time": NOW - 30}],
                  summary={"finished": True, "steps": 5670, "train_seconds": 450.0, "seconds_cover": "run"})
    checkpoint = tmp_path / "checkpoint"
    _write(checkpoint, "config.json", {})
    fields = dict(command="dialeval train rade --stage 2 --init-from runs/rade_pt", commit="abc1234",
                  beside="nothing")
    with pytest.raises(RunRecordError, match="give that run's folder"):
        write_training_record(stage2, checkpoint, **fields)
    record = json.loads(write_training_record(stage2, checkpoint, init_run=stage1, **fields).read_text())
    first = record["initialised_from"]
    assert (first["run"], first["init_from"], first["state"]) == ("rade_pt", "runs/rade_pt", "stopped")
    assert first["optimizer_steps"] == 900 and first["total_steps"] == 17050 and first["hours"] == 2.0
    assert first["examples_seen"] == 900 * 16 and first["paper_budget_examples"] == RADE_STAGE1_EXAMPLES * 10
    assert first["validation"] == {"key": "val_correlation", "best": 0.55, "best_step": 700}
    assert record["examples_seen"] == 5670 * 16 and record["paper_budget_examples"] == 567 * 16 * 10
    # a run that did not start from another one refuses a stage-1 folder
    plain = _run(tmp_path / "runs" / "plain", metric="rade", options={"stage": 2},
                 summary={"finished": True, "steps": 10, "train_seconds": 1.0, "seconds_cover": "run"})
    with pytest.raises(RunRecordError, match="drop init_run"):
        write_training_record(plain, checkpoint, init_run=stage1, **fields)


@pytest.mark.parametrize("metric", budgeted_metrics())
def test_every_shipped_learned_checkpoint_records_how_it_was_trained(metric):
    from dialeval.scoring.checkpoints import shipped_checkpoint
    from dialeval.training.runs import TRAINING_RECORD

    path = shipped_checkpoint(metric, f"dialeval train {metric}") / TRAINING_RECORD
    assert path.is_file(), f"{path}: write it with `dialeval checkpoint record`"
    record = json.loads(path.read_text())
    assert record["metric"] == metric and record["examples_seen"] > 0 and record["optimizer_steps"] > 0
    assert record["command"] and record["commit"] and record["ran_beside"] and record["validation"]["best"] is not None
    if record["options"].get("init_from"):  # RADE's stage 2: the stage-1 run is recorded beside it
        assert record["initialised_from"]["examples_seen"] > 0
