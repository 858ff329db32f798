"""DynaEval on the shared scoring API: ``dialeval.load_scorer("dynaeval")``.

A checkpoint folder holds the graph model (``config.json`` + ``model.safetensors`` + the custom-code files); the
utterance encoder is not part of it: utterances are embedded with :class:`dialeval.backbone.Encoder` (the encoder
named by ``config.utterance_encoder``, masked mean pooling, at most ``config.max_utterance_tokens`` tokens), whose
weights must hash to ``config.utterance_encoder_sha256``. ``checkpoint="default"`` is the one shipped inside the
package, trained by ``dialeval train dynaeval``.

* Dialogue level (``score_dialogues``): DynaEval's native score of the whole conversation (unbounded, higher is
  more coherent).
* Turn level (``score``): ``turn_score="dialogue"`` (default) scores the dialogue made of the context turns
  followed by the response; ``turn_score="delta"`` scores the change of the dialogue score when the response is
  appended (``score(context + response) - score(context)``). The default was chosen on FED turn level (see the
  metric card for the measured numbers).

Speakers follow :mod:`dialeval.metrics.dynaeval.inputs` (given roles, or alternation by position).

``metadata["truncated_texts"]`` counts the distinct utterances of the last call that were longer than the encoder's
``max_length`` (special tokens included) and therefore cut before embedding.

Determinism: embeddings do not depend on the batch (padding-free, fixed-minimum-row batches, see
:mod:`dialeval.backbone`), and the graph model runs on one dialogue at a time, so a dialogue's score never depends
on the other items of the call or on ``batch_size``. Bit-exact across runs and batch sizes on CPU.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...backbone import progress
from ...schema import Dialogue, ScoringItem, Turn
from ...scoring.learned import LearnedScorer, load_pretrained
from .inputs import response_turn, speaker_ids

TURN_SCORES = ("dialogue", "delta")
DEFAULT_TURN_SCORE = "dialogue"


class DynaEvalScorer(LearnedScorer):
    """DynaEval (Zhang et al., 2021): dialogue-level coherence from a speaker-aware utterance graph."""

    name = "dynaeval"
    level = "dialogue"
    checkpoint_dir = "dynaeval"
    train_command = "dialeval train dynaeval"

    def __init__(self, checkpoint: str | os.PathLike | None = None, *, device: str | torch.device | None = None,
                 turn_score: str = DEFAULT_TURN_SCORE, encoder: str | os.PathLike | None = None) -> None:
        if turn_score not in TURN_SCORES:
            raise ValueError(f"turn_score must be one of {TURN_SCORES}, got {turn_score!r}")
        self.turn_score = turn_score
        super().__init__(checkpoint, device=device)
        cfg = self.model.config
        self.encoder = self.checkpoint_encoder(cfg.utterance_encoder, cfg.utterance_encoder_sha256, encoder,
                                               max_length=cfg.max_utterance_tokens)
        if self.encoder.hidden_size != cfg.utterance_dim:
            raise ValueError(f"encoder hidden size {self.encoder.hidden_size} != config.utterance_dim "
                             f"{cfg.utterance_dim}")
        self._reset_call()

    def load_model(self, path: Path) -> torch.nn.Module:
        from ...modeling.dynaeval import DynaEvalModel

        return load_pretrained(DynaEvalModel, path, dtype=torch.float32)

    def settings(self) -> dict[str, str]:
        return {"encoder": self.encoder.fingerprint, "turn_score": self.turn_score}

    # -- core -----------------------------------------------------------------------------------------------------

    def _dialogue_scores(self, dialogues: list[tuple[tuple[Turn, ...], list[int]]], *, batch_size: int,
                         progress_bar: bool | None) -> np.ndarray:
        """Scores of (turns, speaker ids) dialogues, each computed alone."""
        texts = list(dict.fromkeys(t.text for turns, _ in dialogues for t in turns))
        self._truncated += self.encoder.count_truncated(texts)
        self._cut_dialogues = self.encoder.truncated_items([[t.text for t in turns] for turns, _ in dialogues])
        start = time.perf_counter()
        vectors = self.encoder.embed(texts, batch_size=batch_size, progress_bar=progress_bar)
        row = {t: i for i, t in enumerate(texts)}
        encoded = time.perf_counter()
        scores = np.zeros(len(dialogues), dtype=np.float64)
        with torch.inference_mode():
            for i in progress(range(len(dialogues)), total=len(dialogues), enabled=progress_bar, desc="scoring"):
                turns, speakers = dialogues[i]
                rows = torch.tensor([row[t.text] for t in turns], dtype=torch.long)
                out = self.model(utterance_embeddings=vectors[rows].to(self.device),
                                 dialogue_lengths=torch.tensor([len(turns)]),
                                 speaker_ids=torch.tensor(speakers, dtype=torch.long))
                scores[i] = float(out.score[0])
        self._timing["encode_seconds"] += encoded - start
        self._timing["model_seconds"] += time.perf_counter() - encoded
        return scores

    def truncation_rule(self) -> str:
        return f"the encoder's {self.encoder.max_length} tokens per utterance, each keeping its first"

    def _reset_call(self) -> None:
        """Zero the per-call figures of :meth:`_metadata`: timings and the truncation count."""
        self._timing = {"encode_seconds": 0.0, "model_seconds": 0.0}
        self._truncated = 0
        self._cut_dialogues: list[int] = []

    def _score_dialogues(self, dialogues: list[Dialogue], *, batch_size: int, progress_bar: bool | None
                         ) -> tuple[np.ndarray, dict[str, Any]]:
        self._reset_call()
        limit = self.model.config.max_speakers
        prepared = [(d.turns, speaker_ids(d.turns, limit, field="dialogues", index=i)) for i, d in enumerate(dialogues)]
        scores = self._dialogue_scores(prepared, batch_size=batch_size, progress_bar=progress_bar)
        return scores, {"dialogue_aggregation": "DynaEval dialogue score (native)"}

    def _score_items(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        self._reset_call()
        limit = self.model.config.max_speakers
        full = []
        for i, it in enumerate(items):
            turns = (*it.context, response_turn(it.context, it.response))
            full.append((turns, speaker_ids(turns, limit, field="contexts", index=i, last_is_response=True)))
        if self.turn_score == "dialogue":
            return self._dialogue_scores(full, batch_size=batch_size, progress_bar=progress_bar)
        contexts = [(turns[:-1], speakers[:-1]) for turns, speakers in full]
        scores = self._dialogue_scores(full + contexts, batch_size=batch_size, progress_bar=progress_bar)
        # an item's context is a part of its full dialogue: the item is cut when its full dialogue is
        self._cut_dialogues = [k for k in self._cut_dialogues if k < len(items)]
        return scores[: len(items)] - scores[len(items):]

    def _metadata(self) -> dict[str, Any]:
        return {**super()._metadata(), "turn_score": self.turn_score, "truncated_texts": self._truncated,
                "truncated_items": list(self._cut_dialogues),
                **{k: round(v, 4) for k, v in self._timing.items()}}


__all__ = ["DynaEvalScorer", "TURN_SCORES"]
