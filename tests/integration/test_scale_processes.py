"""Scoring at scale with real processes: `dialeval score -o` killed at a random moment and run again, and two
processes under `accelerate launch` against one."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dialeval.scale.ports import free_port

ENV = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
           TOKENIZERS_PARALLELISM="false")
WORDS = ("the a my your cat dog park house tree river coffee train phone movie dinner music weather weekend "
         "went saw liked bought cooked watched played is was will very really quite big small late early").split()


def _sentence(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def write_rows(path: Path, n: int, *, seed: int, references: bool, high: int = 20) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        row = {"id": f"r{i:05d}", "context": [_sentence(rng, 1, high) for _ in range(rng.randint(1, 4))],
               "response": _sentence(rng, 1, high)}
        if references:
            row["references"] = [_sentence(rng, 1, high)]
        rows.append(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return rows


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def manifest(path: Path) -> dict:
    return json.loads(path.with_name(path.name + ".dialeval.json").read_text(encoding="utf-8"))


def run(args: list, *, cwd: Path, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in args], cwd=str(cwd), env=env or ENV, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert proc.returncode == 0, f"{args}\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return proc


# -- killed at a random moment, then run again -----------------------------------------------------------------------
KILL_ROWS = 20000


def bleu4_command(source: Path, output: Path) -> list:
    return [sys.executable, "-m", "dialeval", "score", "--metric", "bleu4", "-i", source, "-o", output,
            "--chunk-size", "200", "-q"]


@pytest.fixture(scope="module")
def kill_reference(tmp_path_factory):
    """(input, the output of an uninterrupted run) for KILL_ROWS bleu4-scorable rows."""
    folder = tmp_path_factory.mktemp("kill")
    source, reference = folder / "in.jsonl", folder / "reference.jsonl"
    rows = write_rows(source, KILL_ROWS, seed=0, references=True)
    run(bleu4_command(source, reference), cwd=folder)
    assert [r["id"] for r in read_jsonl(reference)] == [r["id"] for r in rows]
    assert manifest(reference)["complete"] is True
    return source, reference.read_bytes()


@pytest.mark.parametrize("seed", [1, 2])
def test_a_run_killed_at_a_random_moment_and_run_again_writes_every_row_once_in_order(seed, kill_reference,
                                                                                     tmp_path):
    source, expected = kill_reference
    out = tmp_path / "out.jsonl"
    threshold = random.Random(seed).uniform(0.2, 0.8) * len(expected)
    proc = subprocess.Popen([str(a) for a in bleu4_command(source, out)], cwd=str(tmp_path), env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    killed_at = None
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            size = out.stat().st_size if out.exists() else 0
            if size > threshold:
                proc.send_signal(signal.SIGKILL)
                killed_at = size
                break
            time.sleep(0.002)
    finally:
        if proc.poll() is None and killed_at is None:
            proc.kill()
        _, stderr = proc.communicate(timeout=60)
    assert killed_at is not None, f"the run ended (status {proc.returncode}) before reaching {threshold:.0f} " \
                                  f"bytes: {stderr[-2000:]}"
    assert proc.returncode == -signal.SIGKILL
    state = manifest(out)
    assert state["complete"] is False, "the run completed before the kill; use more rows"
    assert 0 < state["totals"]["rows"] < KILL_ROWS
    again = run(bleu4_command(source, out), cwd=tmp_path)
    assert f"resumed: {state['totals']['rows']} rows were already in" in again.stderr
    data = out.read_bytes()
    assert len(data) == len(expected)
    assert data == expected, "rows lost, written twice or out of order after the kill"
    assert manifest(out)["complete"] is True and manifest(out)["totals"]["rows"] == KILL_ROWS


# -- two processes under accelerate launch ---------------------------------------------------------------------------
ACCELERATE_ROWS = 150
BAD_ROW = 70

# Imported at the start of every Python process when its folder is on PYTHONPATH: each process that took part in a
# torch.distributed group writes down its rank and the group's size when it ends.
RANK_RECORDER = """\
import atexit, os, sys

def _record():
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        folder = os.environ["DIALEVAL_TEST_RANKS"]
        with open(os.path.join(folder, f"rank-{dist.get_rank()}.json"), "w") as fh:
            fh.write(f'{{"rank": {dist.get_rank()}, "world_size": {dist.get_world_size()}}}')

if os.environ.get("DIALEVAL_TEST_RANKS"):
    atexit.register(_record)
"""


# Both sides score on one intra-op thread: the thread count changes a CPU score's last bits (the launcher gives each
# process nproc / num_processes threads, a lone process takes torch's default), so equal counts are what make equal
# bits, whatever the machine's cores and load.
SCORE_THREADS = ("--threads", "1")


def accelerate_command(source: Path, output: Path, *extra) -> list:
    return [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
            "--num_machines", "1", "--main_process_port", free_port(), "--mixed_precision", "no",
            "--dynamo_backend", "no",
            "-m", "dialeval", "score", "--metric", "pone", "-i", source, "-o", output, "--chunk-size", "16", "-q",
            *SCORE_THREADS, *extra]


def single_command(source: Path, output: Path, *extra) -> list:
    return [sys.executable, "-m", "dialeval", "score", "--metric", "pone", "-i", source, "-o", output,
            "--chunk-size", "16", "-q", *SCORE_THREADS, *extra]


@pytest.fixture(scope="module")
def accelerate_inputs(tmp_path_factory):
    """(folder, clean input, input with a bad row at BAD_ROW): varied lengths, turns of up to 40 words."""
    folder = tmp_path_factory.mktemp("accelerate")
    clean, bad = folder / "clean.jsonl", folder / "bad.jsonl"
    rows = write_rows(clean, ACCELERATE_ROWS, seed=3, references=False, high=40)
    rows[BAD_ROW]["response"] = 5
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder, clean, bad


def launch_two(folder: Path, command: list, name: str) -> subprocess.CompletedProcess:
    """Run ``command`` under accelerate launch with 2 processes and check that both took part."""
    ranks = folder / f"ranks-{name}"
    ranks.mkdir()
    (folder / "recorder").mkdir(exist_ok=True)
    (folder / "recorder" / "sitecustomize.py").write_text(RANK_RECORDER)
    pythonpath = os.pathsep.join(p for p in (str(folder / "recorder"), ENV.get("PYTHONPATH")) if p)
    env = dict(ENV, DIALEVAL_TEST_RANKS=str(ranks), PYTHONPATH=pythonpath)
    proc = run(command, cwd=folder, env=env, timeout=400)
    recorded = sorted(json.loads(p.read_text())["rank"] for p in ranks.glob("rank-*.json"))
    sizes = {json.loads(p.read_text())["world_size"] for p in ranks.glob("rank-*.json")}
    assert recorded == [0, 1] and sizes == {2}, f"not two processes: {recorded}, {sizes}\n{proc.stderr[-3000:]}"
    return proc


def assert_same_rows(got: list[dict], expected: list[dict]) -> None:
    assert [r.get("id") for r in got] == [r.get("id") for r in expected]
    assert len({r["id"] for r in got}) == len(got)
    assert [{k: v for k, v in r.items() if k != "score"} for r in got] == \
           [{k: v for k, v in r.items() if k != "score"} for r in expected]
    pairs = [(a["score"], b["score"]) for a, b in zip(got, expected)]
    assert all((a is None) == (b is None) for a, b in pairs)
    differences = [abs(a - b) for a, b in pairs if a is not None]
    assert max(differences) == 0.0, f"{sum(d > 0 for d in differences)} rows differ, by up to {max(differences)}"


def test_two_accelerate_processes_score_exactly_like_one(accelerate_inputs):
    folder, clean, _ = accelerate_inputs
    two, one = folder / "two.jsonl", folder / "one.jsonl"
    launched = launch_two(folder, accelerate_command(clean, two), "clean")
    single = run(single_command(clean, one), cwd=folder)
    got, expected = read_jsonl(two), read_jsonl(one)
    assert len(got) == ACCELERATE_ROWS
    counts = [{k: v for k, v in manifest(path)["totals"].items() if k not in ("seconds", "score_sum")}
              for path in (two, one)]
    assert manifest(two)["complete"] is True and counts[0] == counts[1]
    # the main process alone prints the result
    system = [line for line in launched.stdout.splitlines() if "system score" in line]
    assert system == [line for line in single.stdout.splitlines() if "system score" in line]
    # the same signature, thread count included
    signatures = [[line for line in proc.stdout.splitlines() if line.startswith("signature:")]
                  for proc in (launched, single)]
    assert signatures[0] == signatures[1] and "|cpu_threads:1|" in signatures[0][0]
    assert_same_rows(got, expected)


def test_two_accelerate_processes_record_a_bad_row_in_place_under_on_error_skip(accelerate_inputs):
    folder, _, bad = accelerate_inputs
    two, one = folder / "two-bad.jsonl", folder / "one-bad.jsonl"
    launched = launch_two(folder, accelerate_command(bad, two, "--on-error", "skip"), "bad")
    run(single_command(bad, one, "--on-error", "skip"), cwd=folder)
    got = read_jsonl(two)
    assert len(got) == ACCELERATE_ROWS
    assert [i for i, r in enumerate(got) if "error" in r] == [BAD_ROW]
    assert got[BAD_ROW]["id"] == f"r{BAD_ROW:05d}" and got[BAD_ROW]["score"] is None
    assert got[BAD_ROW]["error"].startswith(f"{bad}:{BAD_ROW + 1}: field 'response' has type int")
    assert f"pairs: {ACCELERATE_ROWS} (1 failed)" in launched.stdout
    assert_same_rows(got, read_jsonl(one))
