"""RADE on the shared scoring API: ``dialeval.load_scorer("rade")``.

The score of a candidate is the model's predicted candidate score on the human 1-5 scale, given its context and a
reference (the input ``context [SEP] reference [SEP] candidate``; :mod:`.inputs`). The regressor also predicts the
reference's score; the metric reports the candidate's.

* **References** are required (the paper's setting), one or several per item. With several, the candidate is
  scored against each and the scores are averaged (``reference_aggregation="mean"``, the default) or the best is
  kept (``"max"``); ``metadata["references_read"]`` counts the (item, reference) pairs scored.
* **No reference**: ``pseudo_references="dailydialog"`` (or a JSONL corpus path) retrieves one by BM25
  (:mod:`.retrieval`) for every item called without references, as the paper's FED experiment does
  (``metadata["pseudo_references"]`` counts them). A context BM25 cannot match (``"?"``, only stop words) gets the
  reply of the nearest corpus context by token embeddings instead; ``metadata["pseudo_reference_routes"]`` counts
  the pseudo-references of each route (``{"bm25": n, "embedding": m}``). Without a retriever, a call without
  references is an error.
* A checkpoint trained with ``--no-reference-input`` (the plain regressor baseline) reads no reference at all.

Every forward pass has the same shape whatever the batch: tokens padded to a multiple of :data:`LENGTH_BUCKET`
(batches hold one bucket), exactly ``FORWARD_ROWS`` rows; scores are identical across batch sizes and runs.
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
from .inputs import RadeInputBuilder
from .retrieval import DAILYDIALOG, ROUTES, PseudoReferences

LENGTH_BUCKET = 16
AGGREGATIONS = ("mean", "max")


class RadeScorer(LearnedScorer):
    """RADE (Shi et al., 2023): reference-assisted score of a response on the human 1-5 scale."""

    name = "rade"
    checkpoint_dir = "rade"
    train_command = "dialeval train rade"
    requires_references = True
    without_references = (f"load it with pseudo_references={DAILYDIALOG!r} (`dialeval score --option "
                           f"pseudo_references={DAILYDIALOG}`), which retrieves one for each item from DailyDialog's "
                           "training dialogues in the data directory (data_dir= or --data-dir, else "
                           "$DIALEVAL_DATA_DIR, else ../shared/data)")

    def __init__(self, checkpoint: str | os.PathLike | None = None, *, device: str | torch.device | None = None,
                 reference_aggregation: str = "mean", pseudo_references: str | None = None,
                 data_dir: str | os.PathLike | None = None) -> None:
        if reference_aggregation not in AGGREGATIONS:
            raise ValueError(f"reference_aggregation must be one of {', '.join(AGGREGATIONS)}, got "
                             f"{reference_aggregation!r}")
        super().__init__(checkpoint, device=device)
        cfg = self.model.config
        self.inputs = RadeInputBuilder(self.base_encoder_tokenizer(), max_seq_length=cfg.max_seq_length,
                                       max_reference_length=cfg.max_reference_length, use_reference=cfg.use_reference)
        self.reference_aggregation = reference_aggregation
        self.retriever = (PseudoReferences.from_source(pseudo_references, data_dir=data_dir)
                          if pseudo_references is not None and cfg.use_reference else None)
        # an instance attribute: the benchmark runner and the base class read it
        self.requires_references = cfg.use_reference and self.retriever is None
        self._last: dict[str, Any] = {}

    def load_model(self, path: Path) -> torch.nn.Module:
        from ...modeling.rade import RadeModel

        return load_pretrained(RadeModel, path, dtype=torch.float32)

    def settings(self) -> dict[str, str]:
        out = {"reference_aggregation": self.reference_aggregation}
        if self.retriever is not None:
            out["pseudo_references"] = self.retriever.name
        return out

    def _references(self, items: list[ScoringItem]) -> tuple[list[tuple[str, ...]], dict[str, int]]:
        """Each item's references (its own, else one pseudo-reference; ``("",)`` for a checkpoint that reads none)
        and how many pseudo-references each retrieval route gave."""
        routes = dict.fromkeys(ROUTES, 0)
        if not self.model.config.use_reference:
            return [("",) for _ in items], routes
        references = []
        for item in items:
            if item.references:
                references.append(item.references)
                continue
            found = self.retriever.retrieve([t.text for t in item.context], item.response)
            routes[found.route] += 1
            references.append((found.text,))
        return references, routes

    def _score_items(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        references, routes = self._references(items)
        flat = [(items[i], ref) for i, refs in enumerate(references) for ref in refs]
        self.inputs.truncated = 0
        prepared = self.inputs.evaluator_inputs([[t.text for t in it.context] for it, _ in flat],
                                                [ref for _, ref in flat], [it.response for it, _ in flat])
        limit = self.model.config.max_seq_length
        widths = [min(limit, -(-len(p.ids) // LENGTH_BUCKET) * LENGTH_BUCKET) for p in prepared]

        def forward(rows: list[int]) -> torch.Tensor:
            batch = self.inputs.evaluator_batch([prepared[i] for i in rows], width=widths[rows[0]])
            return self.model(**{k: v.to(self.device) for k, v in batch.items()}).scores[:, 1]

        pair_scores = self.fixed_row_forward(len(flat), length_sorted_batches(widths, batch_size), forward,
                                             progress_bar=progress_bar)
        counts = np.array([len(r) for r in references])
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        if self.reference_aggregation == "mean":
            scores = np.add.reduceat(pair_scores, starts) / counts if len(items) else pair_scores
        else:
            scores = np.maximum.reduceat(pair_scores, starts) if len(items) else pair_scores
        owner = [i for i, refs in enumerate(references) for _ in refs]
        self._last = {"truncated_texts": self.inputs.truncated,
                      "truncated_items": sorted({owner[r] for r in self.inputs.truncated_rows}),
                      "references_read": int(counts.sum()),
                      "pseudo_references": sum(routes.values()), "pseudo_reference_routes": routes}
        return scores

    def _metadata(self) -> dict[str, Any]:
        return {**super()._metadata(), **self._last}

    def truncation_rule(self) -> str:
        return (f"{self.model.config.max_seq_length} tokens of [CLS] context [SEP] reference [SEP] response [SEP]: the "
                f"reference and the response keep their first {self.inputs.max_reference_length} tokens, the context "
                "its most recent ones")
