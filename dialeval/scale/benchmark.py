"""``dialeval scale-benchmark``: throughput and peak memory of ``dialeval score`` as the input grows.

For each size it writes synthetic rows built from the DailyDialog corpus (a context of up to three real turns, the
real next turn or, for every other row, a turn of another dialogue as the response, and the real next turn as the
reference), then runs, each in a fresh process (so that peak RSS is that run's own):

* ``dialeval score --metric M -i rows.jsonl -o scores.jsonl`` for every metric, in 1 process and under
  ``accelerate launch`` with 2 (or as many as asked);
* the *bare encoder*: MiniLM over every row's context and response, the same rows read the same way, in a plain
  loop that writes nothing: the floor that a learned metric's own work (graphs, heads, bookkeeping, writing) is
  measured against.

Each run gets a fresh, empty cache folder (``DIALEVAL_CACHE_DIR``), so none reads what an earlier run cached.
Items/s is rows over the wall seconds of reading, scoring and writing (model loading excluded; for the metrics the
output's manifest keeps them); peak RSS is the largest resident set of any process of the run (``ru_maxrss`` of
the finished children). The same command runs on a GPU machine; there, give ``--processes`` no more than the GPUs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..paths import data_file
from ..textfiles import jsonl_objects
from .ports import free_port

__all__ = ["BARE_ENCODER", "ScaleRun", "run_scale_benchmark", "synthetic_rows", "write_synthetic"]

BARE_ENCODER = "bare_encoder"
CONTEXT_TURNS = 3


@dataclass
class ScaleRun:
    metric: str
    items: int
    processes: int
    items_per_second: float
    peak_rss_mib: float
    wall_seconds: float


def synthetic_rows(n: int, data_dir: str | os.PathLike | None = None, seed: int = 0):
    """``n`` rows (id, context, response, references) from DailyDialog's training dialogues; see the module doc."""
    dialogues = [row["utterances"] for _, row in jsonl_objects(data_file("dailydialog/derived/train.jsonl", data_dir))
                 if len(row["utterances"]) >= 2]
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(dialogues), size=(n, 2))
    for k in range(n):
        turns = dialogues[picks[k, 0]]
        t = 1 + k % (len(turns) - 1)
        response = turns[t] if k % 2 == 0 else dialogues[picks[k, 1]][k % len(dialogues[picks[k, 1]])]
        yield {"id": f"s{k}", "context": turns[max(0, t - CONTEXT_TURNS):t], "response": response,
               "references": [turns[t]]}


def write_synthetic(path: Path, n: int, data_dir: str | os.PathLike | None = None) -> Path:
    """The synthetic rows as JSONL at ``path`` (kept and reused when it already holds ``n`` rows)."""
    done = path.with_name(path.name + ".done")
    if path.exists() and done.exists() and done.read_text() == str(n):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for row in synthetic_rows(n, data_dir):
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    done.write_text(str(n))
    return path


_MEASURE = ("import json, resource, subprocess, sys; rc = subprocess.run(sys.argv[1:]).returncode; "
            "print(json.dumps({'rc': rc, 'maxrss': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))")


def _measured(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Run ``command`` in a fresh process; (peak RSS in MiB of any of its processes, wall seconds)."""
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _MEASURE, *command], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - began
    report = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {"rc": done.returncode}
    if done.returncode or report["rc"]:
        raise RuntimeError(f"{' '.join(command)} failed (exit {report['rc']}):\n{done.stderr[-3000:]}")
    return report["maxrss"] / 1024, wall


def _launcher(processes: int) -> list[str]:
    if processes == 1:
        return [sys.executable, "-m"]
    accelerate = shutil.which("accelerate", path=str(Path(sys.executable).parent)) or shutil.which("accelerate")
    if accelerate is None:
        raise RuntimeError("`accelerate` is not on PATH; it comes with dialeval's dependencies")
    # --multi_gpu is Accelerate's launcher for several local processes; on a machine without GPUs dialeval sets up
    # gloo on CPU for them (dialeval.backbone.batching.process_state). A free port of its own, not Accelerate's fixed
    # default, so that two benchmarks (or a benchmark beside another launch) can run at once.
    return [accelerate, "launch", "--multi_gpu", "--num_processes", str(processes), "--num_machines", "1",
            "--main_process_port", str(free_port()), "--mixed_precision", "no", "--dynamo_backend", "no", "-m"]


def run_one(metric: str, rows: Path, n: int, processes: int, work_dir: Path, *, batch_size: int, chunk_size: int,
            device: str | None) -> ScaleRun:
    out = work_dir / f"{metric}__{n}__{processes}p"
    # a fresh cache folder per run: no run reads what an earlier one cached (the AMR evaluator's graphs)
    cache = work_dir / f"cache__{out.name}"
    shutil.rmtree(cache, ignore_errors=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "DIALEVAL_CACHE_DIR": str(cache)}
    common = ["--batch-size", str(batch_size), "--chunk-size", str(chunk_size)]
    common += ["--device", device] if device else []
    if metric == BARE_ENCODER:
        result = out.with_suffix(".json")
        rss, wall = _measured([*_launcher(processes), "dialeval.scale.benchmark", str(rows), str(result), *common],
                              env)
        seconds = json.loads(result.read_text())["seconds"]
    else:
        scores = out.with_suffix(".jsonl")
        rss, wall = _measured([*_launcher(processes), "dialeval", "score", "--metric", metric, "-i", str(rows),
                               "-o", str(scores), "--overwrite", "--quiet", *common], env)
        from .output import manifest_path

        totals = json.loads(manifest_path(scores).read_text())["totals"]
        if totals["rows"] != n:
            raise RuntimeError(f"{scores} holds {totals['rows']} rows, expected {n}")
        seconds = totals["seconds"]
        scores.unlink()
        manifest_path(scores).unlink()
    shutil.rmtree(cache, ignore_errors=True)
    return ScaleRun(metric, n, processes, round(n / seconds, 1), round(rss, 1), round(wall, 1))


def run_scale_benchmark(metrics: list[str], sizes: list[int], processes: list[int], work_dir: Path, *,
                        data_dir: str | os.PathLike | None = None, batch_size: int = 32, chunk_size: int = 1024,
                        device: str | None = None, bare_encoder: bool = True, echo=print) -> list[ScaleRun]:
    """Every (size, processes, metric) run, the bare encoder first at each (unless ``bare_encoder=False``);
    ``echo`` gets a line per run."""
    runs: list[ScaleRun] = []
    for n in sizes:
        rows = write_synthetic(work_dir / f"rows_{n}.jsonl", n, data_dir)
        for p in processes:
            for metric in [BARE_ENCODER, *metrics] if bare_encoder else metrics:
                run = run_one(metric, rows, n, p, work_dir, batch_size=batch_size, chunk_size=chunk_size,
                              device=device)
                runs.append(run)
                echo(format_run(run, runs))
    return runs


def format_run(run: ScaleRun, runs: list[ScaleRun]) -> str:
    """One table line: throughput, its ratio to the bare encoder on the same items and processes, peak RSS and its
    ratio to the same metric's at 10^4 items (the issue's memory goal compares 10^6 with 10^4)."""
    bare = next((r for r in runs if r.metric == BARE_ENCODER and r.items == run.items
                 and r.processes == run.processes), None)
    base = next((r for r in runs if r.metric == run.metric and r.items == 10_000 and r.processes == run.processes),
                None)
    ratio = f"{run.items_per_second / bare.items_per_second:5.2f}" if bare else "  -  "
    rss_ratio = f"{run.peak_rss_mib / base.peak_rss_mib:5.2f}" if base else "  -  "
    return (f"{run.metric:<18} {run.items:>9} {run.processes:>2}p {run.items_per_second:>9.1f} items/s "
            f"x{ratio} bare  peak RSS {run.peak_rss_mib:>8.1f} MiB (x{rss_ratio} of 10^4)  wall {run.wall_seconds:.0f} s")


def to_json(runs: list[ScaleRun], path: Path, settings: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"settings": settings, "runs": [asdict(r) for r in runs]}, indent=1))


# -- the bare encoder pass, run as ``python -m dialeval.scale.benchmark ROWS RESULT [options]`` ----------------------
def bare_encoder_pass(rows: Path, result: Path, *, batch_size: int, chunk_size: int, device: str | None) -> None:
    """MiniLM over each row's context (its turns joined, as the learned metrics read them) and response, chunk by
    chunk, rows shared among the processes as ``dialeval score`` shares them; writes the wall seconds to
    ``result``."""
    import itertools

    from ..backbone.device import process_state
    from ..backbone.encoder import Encoder
    from ..schema import join_turns, normalize_context
    from .sources import open_source

    state = process_state()
    encoder = Encoder(device=device)
    began = time.perf_counter()
    source = open_source(rows).rows()
    while chunk := list(itertools.islice(source, chunk_size)):
        mine = chunk[state.process_index::state.num_processes]
        contexts = [join_turns(normalize_context(r.fields["context"])) for r in mine]
        encoder.embed(contexts, batch_size=batch_size, side="left", progress_bar=False)
        encoder.embed([r.fields["response"] for r in mine], batch_size=batch_size, progress_bar=False)
    state.wait_for_everyone()
    if state.is_main_process:
        result.write_text(json.dumps({"seconds": time.perf_counter() - began}))


def _main(argv: list[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser(description="The bare encoder pass of dialeval scale-benchmark.")
    parser.add_argument("rows", type=Path)
    parser.add_argument("result", type=Path)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--chunk-size", type=int, default=1024)
    parser.add_argument("--device", default=None)
    args = parser.parse_args(argv)
    bare_encoder_pass(args.rows, args.result, batch_size=args.batch_size, chunk_size=args.chunk_size,
                      device=args.device)


if __name__ == "__main__":
    _main(sys.argv[1:])
