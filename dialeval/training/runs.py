"""Training runs at a glance: ``dialeval runs [DIR]``.

Each run folder under DIR (default ``$DIALEVAL_RUNS_DIR``, else ``~/dialeval-runs/runs``) is read, never written:
``prepared.json`` (the metric), ``training_args.json`` (the options; the loop's ``total_steps``,
``steps_per_epoch`` and ``selection_key``), ``log.jsonl`` (steps with their times, validations), ``progress.json``
(the step the saved state resumes from), ``process.json`` (the training process) and ``summary.json``. From them
:func:`run_status` gives the run's state (finished, running, stopped: resumable from its saved state, or prepared:
no step yet), its steps of the total, the examples seen of the paper's budget (declared by the recipe's spec,
:attr:`~dialeval.scoring.spec.RecipeSpec.budgets`, in the unit the run counts), the latest validation figure, the speed over the recent log and the time left at that speed.

A subfolder that trains on its own (PONE's ``stage1/``) is listed as ``run/stage1``.

A shipped checkpoint carries ``training.json`` (:func:`training_record`, ``dialeval checkpoint record``): the same
facts of the finished run that made it, with the command, the commit and what ran beside it.
"""

from __future__ import annotations

import json
import math
import os
import socket
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import DialevalError
from ..scoring.spec import PaperBudget
from .loop import PROCESS_FILE
from .prepared import MANIFEST_FILE

#: The environment variable naming the default folder of ``dialeval runs``.
RUNS_DIR_ENV = "DIALEVAL_RUNS_DIR"
DEFAULT_RUNS_DIR = Path("~/dialeval-runs/runs")
#: Train records of the latest session the speed is measured over.
SPEED_WINDOW = 20
#: Without ``process.json`` (a run of a loop that did not write it), a run whose log changed within this many
#: seconds counts as running.
RECENT_LOG_SECONDS = 600.0


def budgeted_metrics() -> list[str]:
    """The metrics (as their run folders name them) whose recipe's spec declares a paper budget."""
    from ..scoring.registry import all_specs

    return sorted(recipe.run_metric for spec in all_specs() for recipe in spec.recipes if recipe.budgets)


def paper_budget(metric: str | None, stage: int | None = None) -> PaperBudget | None:
    """The paper's budget of a run of ``metric`` (the name its folder records; RADE's ``stage``), as the recipe's spec
    declares it (:attr:`~dialeval.scoring.spec.RecipeSpec.budgets`), or None where it declares none."""
    from ..scoring.registry import all_specs

    for spec in all_specs():
        for recipe in spec.recipes:
            if recipe.run_metric == metric:
                return recipe.paper_budget(stage)
    return None


@dataclass
class RunStatus:
    """One run folder as ``dialeval runs`` reports it; None where the folder does not say."""

    name: str
    path: str
    metric: str | None
    state: str  # finished, running, stopped, prepared, or "unknown" (a process on another host)
    steps: int | None = None
    total_steps: int | None = None
    resume_step: int | None = None  # the saved state's step (a stopped run continues from it)
    examples_seen: int | None = None
    examples_budget: int | None = None
    unit: str | None = None
    validation_key: str | None = None
    validation: float | None = None
    validation_step: int | None = None
    best: float | None = None
    best_step: int | None = None
    steps_per_second: float | None = None
    seconds_left: float | None = None
    last_log_age: float | None = None  # seconds since the log's last record
    device: str | None = None
    note: str | None = None

    @property
    def budget_fraction(self) -> float | None:
        if self.examples_seen is None or not self.examples_budget:
            return None
        return self.examples_seen / self.examples_budget


def _json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def read_log(path: Path) -> list[dict[str, Any]]:
    """The records of a ``log.jsonl`` (a line cut short by a running writer is skipped)."""
    records = []
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return records
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _session(train: list[dict[str, Any]], started: float | None) -> list[dict[str, Any]]:
    """The timed train records of the latest session: after ``started`` when known, else after the last time the
    step went back (a resumed run logs again from its saved step)."""
    timed = [r for r in train if isinstance(r.get("time"), (int, float)) and isinstance(r.get("step"), int)]
    if started is not None:
        return [r for r in timed if r["time"] >= started]
    start = 0
    for i in range(1, len(timed)):
        if timed[i]["step"] <= timed[i - 1]["step"]:
            start = i
    return timed[start:]


def recent_speed(train: list[dict[str, Any]], started: float | None, window: int = SPEED_WINDOW) -> float | None:
    """Steps per second over the last ``window`` timed train records of the latest session (None: fewer than two)."""
    session = _session(train, started)[-window:]
    if len(session) < 2 or session[-1]["time"] <= session[0]["time"]:
        return None
    return (session[-1]["step"] - session[0]["step"]) / (session[-1]["time"] - session[0]["time"])


def _selection_key(args: dict[str, Any], options: dict[str, Any], evals: list[dict[str, Any]]) -> str | None:
    if args.get("selection_key"):
        return args["selection_key"]
    for name in ("select_by", "selection"):
        if isinstance(options.get(name), str):
            return options[name]
    keys = [k for k in (evals[-1] if evals else {}) if k.startswith("val_")]
    return keys[0] if keys else None


def _state(folder: Path, summary: dict | None, process: dict | None, log_mtime: float | None, now: float,
           host: str) -> tuple[str, str | None]:
    summary_mtime = (folder / "summary.json").stat().st_mtime if summary is not None else None
    if process is not None and isinstance(process.get("pid"), int):
        ended = summary_mtime is not None and summary_mtime >= float(process.get("started", 0))
        if not ended:
            if process.get("host") != host:
                return "unknown", f"trained by pid {process['pid']} on host {process.get('host')}"
            if process_alive(process["pid"]):
                return "running", None
    elif summary is None or summary.get("finished") is not True:
        if log_mtime is not None and now - log_mtime < RECENT_LOG_SECONDS:
            return "running", "no process.json: judged by the log's age"
    if summary is not None and summary.get("finished") is True:
        return "finished", None
    if any((folder / name).exists() for name in ("log.jsonl", "progress.json", "last_state", "training_args.json")):
        return "stopped", None
    return "prepared", None


def run_status(folder: str | Path, *, name: str | None = None, metric: str | None = None,
               now: float | None = None, host: str | None = None) -> RunStatus | None:
    """The status of run folder ``folder`` (None when it holds none of a run's files); ``metric`` stands in when
    the folder has no manifest (a stage's subfolder)."""
    folder = Path(folder)
    now = time.time() if now is None else now
    host = socket.gethostname() if host is None else host
    manifest, summary = _json(folder / MANIFEST_FILE), _json(folder / "summary.json")
    args, progress = _json(folder / "training_args.json") or {}, _json(folder / "progress.json")
    process = _json(folder / PROCESS_FILE)
    log_path = folder / "log.jsonl"
    records = read_log(log_path)
    if manifest is None and summary is None and not args and not records and progress is None:
        return None
    metric = (manifest or {}).get("metric") or (summary or {}).get("metric") or metric
    options = args.get("options") or (summary or {}).get("options") or {}
    train = [r for r in records if r.get("event") == "train"]
    evals = [r for r in records if r.get("event") == "eval"]
    log_mtime = log_path.stat().st_mtime if log_path.exists() else None
    state, note = _state(folder, summary, process, log_mtime, now, host)

    steps_known = [s for s in ((summary or {}).get("steps"), (progress or {}).get("step"),
                               *(r.get("step") for r in records)) if isinstance(s, int)]
    steps = max(steps_known) if steps_known else (0 if state == "prepared" else None)
    epochs, max_steps = options.get("epochs"), options.get("max_steps")
    per_epoch_steps = args.get("steps_per_epoch") or (summary or {}).get("steps_per_epoch")
    total = args.get("total_steps") or (summary or {}).get("total_steps")
    if total is None and per_epoch_steps and epochs:
        total = per_epoch_steps * epochs if max_steps is None else min(max_steps, per_epoch_steps * epochs)
    if per_epoch_steps is None and total and epochs and max_steps is None:
        per_epoch_steps = total // epochs
    batch, accumulate = options.get("batch_size"), options.get("gradient_accumulation", 1)
    step_examples = batch * accumulate if isinstance(batch, int) and isinstance(accumulate, int) else None

    status = RunStatus(name=name or folder.name, path=str(folder), metric=metric, state=state, steps=steps,
                       total_steps=total, note=note, device=(summary or {}).get("device"))
    if progress is not None and state != "finished":
        status.resume_step = progress.get("step")
    if steps is not None and step_examples is not None:
        status.examples_seen = steps * step_examples
    budget = paper_budget(metric, options.get("stage"))
    if budget is not None:
        status.unit = budget.unit
        run_per_epoch = per_epoch_steps * step_examples if per_epoch_steps and step_examples else None
        status.examples_budget = budget.examples(run_per_epoch, epochs, options)
    key = _selection_key(args, options, evals)
    status.validation_key = key
    scored = [r for r in evals if key is not None and isinstance(r.get(key), (int, float))]
    if scored:
        status.validation, status.validation_step = float(scored[-1][key]), scored[-1].get("step")
        best = [r for r in scored if r.get("best")]
        if best:
            status.best, status.best_step = float(best[-1][key]), best[-1].get("step")
    started = float(process["started"]) if process and isinstance(process.get("started"), (int, float)) else None
    status.steps_per_second = recent_speed(train, started)
    times = [r["time"] for r in records if isinstance(r.get("time"), (int, float))]
    if times:
        status.last_log_age = max(0.0, now - max(times))
    if state != "finished" and status.steps_per_second and total is not None and steps is not None:
        status.seconds_left = max(0, total - steps) / status.steps_per_second
    return status


def default_runs_dir() -> Path:
    """``$DIALEVAL_RUNS_DIR``, else ``~/dialeval-runs/runs``."""
    return Path(os.environ.get(RUNS_DIR_ENV) or DEFAULT_RUNS_DIR).expanduser()


def list_runs(root: str | Path, *, now: float | None = None, host: str | None = None) -> list[RunStatus]:
    """The status of every run folder directly under ``root`` (and of their subfolders that train on their own),
    by name."""
    root = Path(root)
    statuses = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        status = run_status(folder, now=now, host=host)
        if status is not None:
            statuses.append(status)
        for sub in sorted(p for p in folder.iterdir() if p.is_dir() and (p / "training_args.json").exists()):
            inner = run_status(sub, name=f"{folder.name}/{sub.name}", metric=status.metric if status else None,
                               now=now, host=host)
            if inner is not None:
                statuses.append(inner)
    return statuses


def _duration(seconds: float | None) -> str:
    if seconds is None or math.isnan(seconds):
        return "-"
    if seconds < 60:
        return f"{int(seconds)}s"
    minutes = int(round(seconds / 60))
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours < 48 else f"{hours // 24}d{hours % 24:02d}h"


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


RUNS_COLUMNS = ("run", "metric", "state", "steps", "examples seen / paper budget", "latest validation", "steps/s",
                "time left", "last log")


def runs_rows(statuses: list[RunStatus]) -> list[list[str]]:
    """The table body of :func:`format_runs`, one row of :data:`RUNS_COLUMNS` per run."""
    rows = []
    for s in statuses:
        state = s.state
        if s.state == "stopped" and s.resume_step is not None and s.resume_step != s.steps:
            state += f" (resumes at {s.resume_step:,})"
        steps = f"{_count(s.steps)}/{_count(s.total_steps)}"
        seen = _count(s.examples_seen)
        if s.examples_budget is not None:
            percent = 100 * s.budget_fraction
            seen += f" / {s.examples_budget:,} ({percent:.1f}%)" if percent >= 0.1 or percent == 0 else \
                f" / {s.examples_budget:,} ({percent:.2g}%)"
        elif s.unit is not None:
            seen += " / -"
        validation = "-"
        if s.validation is not None:
            validation = f"{s.validation_key} {s.validation:.4f} @{_count(s.validation_step)}"
            if s.best is not None and s.best_step != s.validation_step:
                validation += f" (best {s.best:.4f} @{_count(s.best_step)})"
        speed = "-" if s.steps_per_second is None else f"{s.steps_per_second:.2f}"
        age = "-" if s.last_log_age is None else f"{_duration(s.last_log_age)} ago"
        rows.append([s.name, s.metric or "?", state, steps, seen, validation, speed, _duration(s.seconds_left), age])
    return rows


def format_runs(statuses: list[RunStatus], root: Path) -> str:
    """The runs as a fixed-width table, with the units of the examples and any notes below it."""
    if not statuses:
        return f"no training runs in {root}"
    body = runs_rows(statuses)
    widths = [max(len(c), *(len(row[i]) for row in body)) for i, c in enumerate(RUNS_COLUMNS)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip() for cells in [list(RUNS_COLUMNS), *body]]
    units = sorted({f"{s.metric}: {s.unit}" for s in statuses if s.unit})
    if units:
        lines.append("examples counted as " + "; ".join(units))
    lines.extend(f"{s.name}: {s.note}" for s in statuses if s.note)
    return "\n".join(lines)


def runs_json(statuses: list[RunStatus]) -> str:
    """The runs as a JSON list (each :class:`RunStatus` with its ``budget_fraction``)."""
    return json.dumps([{**asdict(s), "budget_fraction": s.budget_fraction} for s in statuses], indent=1)


__all__ = ["RUNS_DIR_ENV", "RunStatus", "budgeted_metrics", "default_runs_dir", "format_runs", "list_runs", "paper_budget", "read_log",
           "recent_speed", "run_status", "runs_json"]


class RunRecordError(DialevalError, ValueError):
    """A training record asked of a folder that is not a finished run, or written where no checkpoint is."""


#: The file a shipped checkpoint folder carries beside its weights: how it was trained, against its paper's budget.
TRAINING_RECORD = "training.json"
#: The field of ``training.json`` that lists the conversions of the checkpoint after training (``dialeval checkpoint
#: quantise``, :mod:`dialeval.training.quantise`): a record written again keeps it while the config still says so.
CONVERSIONS_FIELD = "quantised"


def _seconds(summary: dict[str, Any]) -> float | None:
    """A run's training-loop seconds as its summary records them (recipes name them differently; the loop's figure
    covers every call of a resumed run), else its wall time. A run in stages (PONE's) records each stage's loop
    seconds: the run's are their sum (its top-level figure is the last stage's)."""
    stages = summary.get("stages")
    stage_seconds = [stage.get("seconds") for stage in stages.values()] if isinstance(stages, dict) else []
    if stage_seconds and all(isinstance(seconds, (int, float)) for seconds in stage_seconds):
        return float(sum(stage_seconds))
    for key in ("train_seconds", "seconds", "total_seconds"):
        if isinstance(summary.get(key), (int, float)):
            return float(summary[key])
    return None


def _run_options(folder: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """The options a run trained with: its ``training_args.json``, else those its summary repeats."""
    return (_json(folder / "training_args.json") or {}).get("options") or summary.get("options") or {}


def _budget_fields(status: RunStatus, options: dict[str, Any]) -> dict[str, Any]:
    """A record's examples seen against the paper's budget, in the run's unit."""
    budget = paper_budget(status.metric, options.get("stage"))
    return {"examples_seen": status.examples_seen, "unit": status.unit,
            "paper_budget_examples": status.examples_budget,
            "paper_budget_share": (round(status.budget_fraction, 4) if status.budget_fraction is not None else None),
            "paper_budget": budget.paper if budget is not None else None}


def _hours(seconds: float | None) -> float | None:
    return round(seconds / 3600, 3) if seconds is not None else None


def _validation_field(status: RunStatus) -> dict[str, Any]:
    """The validation figure that chose a run's checkpoint."""
    return {"key": status.validation_key, "best": status.best, "best_step": status.best_step}


def _initial_run_record(init_run: Path, init_from: str) -> dict[str, Any]:
    """What ``training.json`` says of the run whose best checkpoint a run started from (``--init-from``; RADE's
    stage 1 before stage 2): its state (it may have been stopped once validation stopped rising), examples seen
    against its own paper budget, steps, hours and the validation figure that chose the checkpoint."""
    status = run_status(init_run)
    summary = _json(init_run / "summary.json") or {}
    if status is None or status.best_step is None:
        raise RunRecordError(f"{init_run}: the run --init-from {init_from} named must be a run folder whose log "
                             "chose a best checkpoint")
    options = _run_options(init_run, summary)
    return {
        "run": init_run.name, "init_from": init_from, "state": status.state, "optimizer_steps": status.steps,
        "total_steps": status.total_steps, **_budget_fields(status, options),
        "hours": _hours(_seconds(summary) if summary.get("seconds_cover") == "run" else None),
        "validation": _validation_field(status), "options": options,
    }


def training_record(run_folder: str | Path, *, command: str, commit: str, beside: str,
                    hours: float | None = None, init_run: str | Path | None = None) -> dict[str, Any]:
    """What a shipped checkpoint's ``training.json`` holds, read from finished run ``run_folder``: the command and
    the commit that trained it, what ran beside it, the examples seen against the paper's budget (in the same
    unit), optimizer steps, hours, device, precision, threads, the text encoder (name and weights sha256, as the run's
    summary records it; None for a run made before it was recorded, or without one) and the validation figure that
    chose it.

    ``hours`` is for a run whose summary cannot say them: one resumed from a state saved before the loop recorded
    its time (its summary's ``seconds_cover`` is ``this_call``); the record then says the hours were given.

    ``init_run`` is the run folder that the run's ``--init-from`` named (RADE's stage 1): required for such a run,
    refused for any other; the record then carries that run's figures as ``initialised_from``.

    Raises :class:`RunRecordError` for a folder that is not a finished run (nothing is guessed)."""
    folder = Path(run_folder)
    status = run_status(folder)
    summary = _json(folder / "summary.json")
    if status is None or summary is None or status.state != "finished":
        state = status.state if status is not None else "not a run folder"
        raise RunRecordError(f"{folder}: a training record needs a finished run (summary.json); this one is {state}")
    options = _run_options(folder, summary)
    init_from = options.get("init_from")
    if bool(init_from) != (init_run is not None):
        raise RunRecordError(
            f"{folder}: the run started from --init-from {init_from}: give that run's folder as init_run"
            if init_from else f"{folder}: the run did not start from another run's checkpoint (no --init-from); "
            "drop init_run")
    cover = summary.get("seconds_cover")  # absent: written before the loop kept a resumed run's time
    if hours is not None:
        seconds, hours_source = 3600.0 * hours, "given when recorded (the run's summary cannot say them)"
    elif cover != "run":
        why = ("cover its last call only (the run resumed a state saved before the loop recorded its time)"
               if cover == "this_call" else "may cover its last call only (written before the loop kept a "
               "resumed run's time)")
        raise RunRecordError(f"{folder}: its summary's seconds {why}; give the run's hours")
    else:
        seconds, hours_source = _seconds(summary), "the run's summary"
    record = {
        "metric": status.metric, "run": folder.name, "command": command, "commit": commit, "ran_beside": beside,
        **_budget_fields(status, options), "optimizer_steps": status.steps, "hours": _hours(seconds),
        "hours_source": hours_source,
        "device": status.device or options.get("device"), "precision": options.get("precision", "fp32"),
        "threads": options.get("threads"), "encoder": summary.get("encoder"),
        "validation": _validation_field(status), "options": options,
    }
    if init_run is not None:
        record["initialised_from"] = _initial_run_record(Path(init_run), init_from)
    return record


def write_training_record(run_folder: str | Path, checkpoint: str | Path, **fields: Any) -> Path:
    """Write :func:`training_record` of ``run_folder`` into ``checkpoint``/``training.json``; returns its path. The
    conversions an earlier record lists (:data:`CONVERSIONS_FIELD`) are kept while the checkpoint's config still
    stores weights as int8 rows (``int8_weights``): they are part of how the checkpoint was made."""
    record = training_record(run_folder, **fields)
    path = Path(checkpoint) / TRAINING_RECORD
    if not (Path(checkpoint) / "config.json").is_file():
        raise RunRecordError(f"{checkpoint} is not a checkpoint folder (no config.json)")
    earlier = _json(path) or {}
    if earlier.get(CONVERSIONS_FIELD) and (_json(Path(checkpoint) / "config.json") or {}).get("int8_weights"):
        record[CONVERSIONS_FIELD] = earlier[CONVERSIONS_FIELD]
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path
