"""GRADE speed benchmark (not a test): ``dialeval bench grade [--checkpoint DIR]`` (:func:`run`).

(a) ``GradeScorer.score`` on the 1,200 GRADE human-evaluation pairs with a freshly loaded scorer (keyword
    extraction, graph features, tokenisation, model forward: everything scoring does);
(b) the raw forward of the same encoder (MiniLM, as loaded from its package) on the same pairs: the
    ``[CLS] context [SEP] response [SEP]`` inputs tokenised up front (not timed), padded batches of
    ``--batch-size`` in input order, ``model(**batch)`` under ``torch.inference_mode()``;
(c) ``GradeScorer.score`` on 10,000 distinct DailyDialog context-response pairs (validation + test windows) with
    a fresh scorer: the time to score 10k pairs.
Model loading is excluded. Needs the data directory.
"""

from __future__ import annotations

import time

import torch

from ...benchmarks import load_benchmark
from .data import context_windows
from .inputs import context_window
from .scorer import GradeScorer


def _grade_pairs(data_dir):
    ds = load_benchmark("grade_eval", data_dir=data_dir)
    return [[t["text"] for t in c] for c in ds["context"]], list(ds["response"])


def _raw_forward(scorer: GradeScorer, contexts, responses, batch_size: int) -> float:
    from transformers import AutoModel

    from ...backbone import default_encoder_path

    model = AutoModel.from_pretrained(default_encoder_path(), local_files_only=True).eval()
    tok = scorer.inputs.tokenizer
    batches = [
        tok([" ".join(context_window(c)) for c in contexts[i:i + batch_size]], responses[i:i + batch_size],
            padding=True, truncation="longest_first", max_length=scorer.model.config.max_seq_length,
            return_tensors="pt")
        for i in range(0, len(responses), batch_size)
    ]
    with torch.inference_mode():
        model(**batches[0])  # warm-up
        start = time.perf_counter()
        for b in batches:
            model(**b)
    return time.perf_counter() - start


def run(checkpoint: str | None, batch_size: int, data_dir: str | None, n_large: int) -> dict:
    """Measure (a), (b) and (c) of the module docstring (``n_large`` pairs for (c)); returns them as a JSON-ready
    dict, for :func:`dialeval.evaluation.emit_measurements`."""
    contexts, responses = _grade_pairs(data_dir)
    scorer = GradeScorer(checkpoint, device="cpu")
    scorer.score(contexts=contexts[:2], responses=responses[:2])  # warm-up (not on the measured pairs' cache)
    scorer = GradeScorer(checkpoint, device="cpu")
    start = time.perf_counter()
    scorer.score(contexts=contexts, responses=responses, batch_size=batch_size)
    grade_s = time.perf_counter() - start
    raw_s = _raw_forward(scorer, contexts, responses, batch_size)

    windows = [w for split in ("validation", "test")
               for w in context_windows(load_benchmark("dailydialog", split=split, data_dir=data_dir)["utterances"])]
    windows = windows[:n_large]
    big = GradeScorer(checkpoint, device="cpu")
    start = time.perf_counter()
    big.score(contexts=[list(c) for c, _ in windows], responses=[r for _, r in windows], batch_size=batch_size,
              progress_bar=False)
    large_s = time.perf_counter() - start
    return {
        "pairs": len(responses), "batch_size": batch_size, "torch_threads": torch.get_num_threads(),
        "grade_seconds": round(grade_s, 2), "grade_pairs_per_s": round(len(responses) / grade_s, 1),
        "raw_encoder_seconds": round(raw_s, 2), "raw_encoder_pairs_per_s": round(len(responses) / raw_s, 1),
        "ratio_grade_over_raw": round(raw_s / grade_s, 3),
        "large_pairs": len(windows), "large_seconds": round(large_s, 1),
        "large_pairs_per_s": round(len(windows) / large_s, 1), "signature": scorer.signature,
    }
