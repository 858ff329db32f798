"""The AMR evaluator's small model on the shared scoring API: ``AmrEvalScorer`` (the SLM score, no LLM judge).

The score of a response is the model's probability that it is an appropriate reply to its context (class 1),
reading ``[CLS] context [SEP] response [SEP]`` and the graphs of the context's last turns and of the response
(:mod:`.inputs`).

Graphs come from a graph source (:mod:`.graph_sources`), chosen explicitly: by default the kind the checkpoint was
trained on (``config.graph_source``) when it needs no options (the spaCy dependency stand-in); otherwise pass
``graph_source=`` (``"amrlib"`` with ``model_dir=``, ``"penman"`` with ``files=``, or a `GraphSource`). A source of
another kind than the training one is allowed, and both are named in the signature. Graphs are cached per
utterance on disk (:class:`~.graph_cache.CachedGraphs`; ``metadata["graph_cache_hit_rate"]``).

Batches are length-sorted, and every forward pass has ``FORWARD_ROWS`` rows and a text width that is a multiple of
:data:`LENGTH_BUCKET`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...backbone.batching import length_sorted_batches
from ...backbone.encoder import base_tokenizer
from ...errors import InputError
from ...schema import ScoringItem
from ...scoring.learned import LearnedScorer, load_pretrained
from .graph_cache import CachedGraphs
from .graph_sources import GraphSource, load_graph_source
from .inputs import AmrEvalInputBuilder, join_context

LENGTH_BUCKET = 16


def source_kind(signature: str | None) -> str | None:
    """The source name of a graph-source signature (``dependency(model=...)`` -> ``dependency``)."""
    return None if signature is None else signature.split("(", 1)[0]


class AmrEvalScorer(LearnedScorer):
    """The AMR-enhanced evaluator's SLM (Yang, Zhao et al.): probability that a response is appropriate."""

    name = "amr_eval"
    checkpoint_dir = "amr_eval"
    train_command = "dialeval train amr-eval"

    def __init__(self, checkpoint: str | os.PathLike | None = None, *, device: str | torch.device | None = None,
                 graph_source: str | GraphSource | None = None, graph_cache: bool = True,
                 **graph_source_options: Any) -> None:
        super().__init__(checkpoint, device=device)
        cfg = self.model.config
        self.inputs = AmrEvalInputBuilder(base_tokenizer(cfg.base_encoder), cfg)
        self.graphs: GraphSource | None = None
        if cfg.use_graph:
            trained_on = source_kind(cfg.graph_source)
            if graph_source is None:
                if trained_on != "dependency" or graph_source_options:
                    raise InputError(f"checkpoint {self.checkpoint} was trained on graphs from {cfg.graph_source!r}: "
                                     "pass graph_source= (and its options, e.g. model_dir= for amrlib)")
                graph_source = "dependency"
            source = (graph_source if isinstance(graph_source, GraphSource)
                      else load_graph_source(graph_source, **graph_source_options))
            self.graphs = CachedGraphs(source) if graph_cache else source
        elif graph_source is not None:
            raise InputError(f"checkpoint {self.checkpoint} has no graph branch: graph_source has nothing to do")
        self._last: dict[str, Any] = {}

    def load_model(self, path: Path) -> torch.nn.Module:
        from ...modeling.amr_eval import AmrEvalModel

        return load_pretrained(AmrEvalModel, path, dtype=torch.float32)

    def settings(self) -> dict[str, str]:
        if self.graphs is None:
            return {"graphs": "none"}
        trained = self.model.config.graph_source
        used = self.graphs.signature()
        return {"graph_source": used} if used == trained else {"graph_source": used, "trained_on": str(trained)}

    def _score_items(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        self.inputs.truncated = 0
        contexts = [[t.text for t in it.context] for it in items]
        texts = self.inputs.text_inputs(contexts, [it.response for it in items])
        pairs = None
        if self.graphs is not None:
            distinct = list(dict.fromkeys(t for c, it in zip(contexts, items) for t in (*c, it.response)))
            before = (getattr(self.graphs, "hits", 0), getattr(self.graphs, "misses", 0))
            graph_of = dict(zip(distinct, self.graphs.graphs(distinct)))
            pairs = [(join_context([graph_of[t] for t in c]), graph_of[it.response]) for c, it in zip(contexts, items)]
            if isinstance(self.graphs, CachedGraphs):
                hits, misses = self.graphs.hits - before[0], self.graphs.misses - before[1]
                self._last["graph_cache_hit_rate"] = round(hits / max(1, hits + misses), 4)
        limit = self.model.config.max_seq_length
        widths = [min(limit, -(-len(t.ids) // LENGTH_BUCKET) * LENGTH_BUCKET) for t in texts]

        def forward(rows: list[int]) -> torch.Tensor:
            batch = self.inputs.batch([texts[i] for i in rows], [pairs[i] for i in rows] if pairs else None,
                                      width=widths[rows[0]])
            logits = self.model(**{k: v.to(self._device) for k, v in batch.items()}).logits
            return torch.softmax(logits.float(), dim=-1)[:, 1]

        scores = self.fixed_row_forward(len(items), length_sorted_batches(widths, batch_size), forward,
                                        progress_bar=progress_bar)
        self._last["truncated_inputs"] = self.inputs.truncated
        return scores

    def _metadata(self) -> dict[str, Any]:
        return {**super()._metadata(), **self._last}


__all__ = ["LENGTH_BUCKET", "AmrEvalScorer", "source_kind"]
