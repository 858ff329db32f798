"""Ensemble speed benchmark (not a test): ``dialeval bench ensemble`` (:func:`run`).

On the 1,200 GRADE human-evaluation pairs (context turns + reply), for each member set asked (default ``full`` and
``fast``):

(a) ``EnsembleScorer.score`` with a scorer loaded for that set (its members load when it is built, then score two
    other pairs, untimed, so that lazy set-up is not timed either): everything scoring does, every member included;
(b) the bare encoder (MiniLM, as loaded from its package) once over the distinct texts of the same pairs (every
    context turn and reply, each text once): tokenised up front (not timed), padded batches of ``--batch-size`` in
    input order, the model's forward under ``torch.inference_mode()`` (:func:`dialeval.evaluation.throughput`).

``x bare`` is (b)'s seconds over (a)'s: the share of the bare encoder's speed that the set keeps. Model loading is
excluded. Needs the data directory.
"""

from __future__ import annotations

import time

import torch

from ...backbone import Encoder
from ...benchmarks import load_benchmark
from ...evaluation.throughput import raw_encoder_forward
from .scorer import EnsembleScorer

WARM_UP_CONTEXT = [["Hi, how was your weekend?"], ["I went hiking with my sister."]]
WARM_UP_REPLY = ["Great, I went hiking.", "Where did you go?"]


def _grade_pairs(data_dir) -> tuple[list[list[str]], list[str]]:
    ds = load_benchmark("grade_eval", data_dir=data_dir)
    return [[t["text"] for t in c] for c in ds["context"]], list(ds["response"])


def run(member_sets: list[str], batch_size: int, data_dir: str | None) -> dict:
    """Measure (a) for each of ``member_sets`` and (b) of the module docstring; returns them as a JSON-ready dict,
    for :func:`dialeval.evaluation.emit_measurements`."""
    contexts, responses = _grade_pairs(data_dir)
    texts = list(dict.fromkeys([t for c in contexts for t in c] + responses))
    encoder = Encoder()
    raw_encoder_forward(encoder, texts[:batch_size], batch_size)  # warm-up
    _, bare_s = raw_encoder_forward(encoder, texts, batch_size)
    out: dict = {"pairs": len(responses), "distinct_texts": len(texts), "batch_size": batch_size,
                 "torch_threads": torch.get_num_threads(), "bare_encoder_seconds": round(bare_s, 2),
                 "bare_encoder_texts_per_s": round(len(texts) / bare_s, 1)}
    for name in member_sets:
        scorer = EnsembleScorer(member_set=name, device="cpu", data_dir=data_dir)
        scorer.score(contexts=WARM_UP_CONTEXT, responses=WARM_UP_REPLY)
        start = time.perf_counter()
        scorer.score(contexts=contexts, responses=responses, batch_size=batch_size)
        seconds = time.perf_counter() - start
        out.update({f"{name}_members": ",".join(scorer.members), f"{name}_seconds": round(seconds, 2),
                    f"{name}_pairs_per_s": round(len(responses) / seconds, 1),
                    f"{name}_x_bare": round(bare_s / seconds, 4), f"{name}_signature": scorer.signature})
    return out
