"""DynaEval speed benchmark (not a test): ``dialeval bench dynaeval [--checkpoint DIR]`` (:func:`run`).

On the 125 FED dialogues (human-Meena / Mitsuku / human conversations, 1,715 utterances):
(a) ``DynaEvalScorer.score_dialogues`` with a freshly loaded scorer (empty embedding cache): dialogues per second and
    the split between encoding the utterances (frozen MiniLM, masked mean pooling) and the graph model (BiLSTM +
    relational graph, one dialogue at a time);
(b) the same call again on the same scorer: the utterance embeddings now come from the encoder's cache, so this is
    the graph model alone (plus validation);
(c) the graph model's forward on all dialogues batched in one call (what training does; scoring runs dialogues
    one at a time for batch-size-independent scores), for comparison.
Model loading is excluded. Needs the data directory.
"""

from __future__ import annotations

import os
import time

import torch

from ...benchmarks import load_benchmark
from ...schema import normalize_dialogues
from .inputs import speaker_ids
from .scorer import DynaEvalScorer


def _fed_dialogues(data_dir) -> list[list[dict[str, str]]]:
    ds = load_benchmark("fed_dialogue", data_dir=data_dir)
    return [[{"role": t["speaker"] or "", "content": t["text"]} for t in c] for c in ds["context"]]


def _batched_forward(scorer: DynaEvalScorer, dialogues: list[list[dict[str, str]]]) -> float:
    normalized = normalize_dialogues(dialogues, min_turns=2)
    texts = [t.text for d in normalized for t in d.turns]
    vectors = scorer.encoder.embed(texts)  # cached by the earlier runs
    speakers = [s for i, d in enumerate(normalized)
                for s in speaker_ids(d.turns, scorer.model.config.max_speakers, field="dialogues", index=i)]
    inputs = {"utterance_embeddings": vectors, "dialogue_lengths": torch.tensor([len(d.turns) for d in normalized]),
              "speaker_ids": torch.tensor(speakers)}
    with torch.inference_mode():
        scorer.model(**inputs)  # warm-up
        start = time.perf_counter()
        scorer.model(**inputs)
    return time.perf_counter() - start


def run(checkpoint: str | None, batch_size: int, data_dir: str | None) -> dict:
    """Measure (a), (b) and (c) of the module docstring; returns them as a JSON-ready dict, for
    :func:`dialeval.evaluation.emit_measurements`."""
    dialogues = _fed_dialogues(data_dir)
    n_utt = sum(len(d) for d in dialogues)
    warm = DynaEvalScorer(checkpoint, device="cpu")
    warm.score_dialogues(dialogues=[["Hi there.", "Hello!"]])  # one-off initialisation, not on the measured texts
    scorer = DynaEvalScorer(checkpoint, device="cpu")
    start = time.perf_counter()
    cold = scorer.score_dialogues(dialogues=dialogues, batch_size=batch_size, progress_bar=False)
    cold_s = time.perf_counter() - start
    start = time.perf_counter()
    again = scorer.score_dialogues(dialogues=dialogues, batch_size=batch_size, progress_bar=False)
    cached_s = time.perf_counter() - start
    if again.scores != cold.scores:
        raise RuntimeError("scores differ between the cold and the cached run")
    batched_s = _batched_forward(scorer, dialogues)
    encode_s, model_s = cold.metadata["encode_seconds"], cold.metadata["model_seconds"]
    return {
        "dialogues": len(dialogues), "utterances": n_utt, "batch_size": batch_size,
        "torch_threads": torch.get_num_threads(), "load_average_1m": round(os.getloadavg()[0], 2),
        "cold_seconds": round(cold_s, 2), "cold_dialogues_per_s": round(len(dialogues) / cold_s, 1),
        "cold_encode_seconds": round(encode_s, 2), "cold_model_seconds": round(model_s, 2),
        "encode_share": round(encode_s / (encode_s + model_s), 3),
        "encode_utterances_per_s": round(n_utt / encode_s, 1),
        "cached_seconds": round(cached_s, 2), "cached_dialogues_per_s": round(len(dialogues) / cached_s, 1),
        "batched_model_seconds": round(batched_s, 3),
        "batched_model_dialogues_per_s": round(len(dialogues) / batched_s, 1),
        "signature": cold.signature,
    }
