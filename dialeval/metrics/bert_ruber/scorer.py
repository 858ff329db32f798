"""BERT-RUBER on the shared scoring API: ``load_scorer("bert_ruber")`` (hybrid) and ``"bert_ruber_unref"``.

Scores (Ghazarian et al., 2019; Tao et al., 2018 for RUBER):

* **unreferenced**: the trained head's probability that the response fits the context, in (0, 1);
* **referenced**: cosine between the sentence embeddings of the response and of the reference (several references:
  the maximum), in [-1, 1];
* **hybrid** (default of ``"bert_ruber"``): both are normalised, then combined with ``min`` (default, as PONE's
  ``hybird.py``) or ``max``. ``normalization="calibrated"`` (default) maps each score with a range fixed at
  training time and stored in the checkpoint: linearly onto [0, 1] inside the range, and by strictly increasing
  tails onto (-0.05, 0) below it and (1, 1.05) above it, so scores outside the range keep their order instead of
  tying at a clip (the map: :mod:`.ranges`; the calibration set: :mod:`.calibration`). Every item is scored on its
  own.
  ``normalization="minmax_over_call"`` is the original's behaviour (min-max over the items scored together): an
  item's score then depends on the other items of the call (never on ``batch_size``), and it needs at least two
  items with different values. A checkpoint without stored ranges (made before they existed) raises
  :class:`~.ranges.MissingCalibration` for the calibrated hybrid, naming the command that adds them.

Metadata of each call: ``truncated_texts``, how many of the call's distinct input texts the encoder cut at its
limit (``encoder_max_length`` tokens, special tokens included): the joined contexts (cut from the left, keeping
the latest turns) plus the responses and references (cut from the right; a text that is both counts once), those
the mode reads.

Determinism: embeddings come from :class:`dialeval.backbone.Encoder` (batch-invariant); the head runs in float64
one row at a time (float64 GEMM rounds a row by its place in a block), so a score does not depend on the batch size
or on the other items (with the default normalisation, the hybrid too). The cosine is computed row by row in
float64.

A checkpoint is a folder with ``config.json`` + ``model.safetensors`` (the head only) + the custom-code files;
``checkpoint="default"`` is the one shipped in the package (``dialeval/checkpoints/<metric>/default``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from ...schema import ScoringItem
from ...scoring.learned import LearnedScorer
from .data import context_text
from .head import load_head
from .ranges import TAIL, HybridRanges, minmax_over_call, rescale

MODES = ("unreferenced", "referenced", "hybrid")
HYBRIDS = ("min", "max")
NORMALIZATIONS = ("calibrated", "minmax_over_call")


class RuberScorer(LearnedScorer):
    """Unreferenced / referenced / hybrid RUBER-style scorer over a trained head (see the module docstring)."""

    name: ClassVar[str] = "bert_ruber"
    checkpoint_dir: ClassVar[str] = "bert_ruber"
    train_command: ClassVar[str] = "dialeval train bert-ruber"
    default_mode: ClassVar[str] = "hybrid"

    def __init__(self, checkpoint: str | os.PathLike | None = None, *, mode: str | None = None, hybrid: str = "min",
                 normalization: str = "calibrated", encoder: str | os.PathLike | None = None,
                 device: str | torch.device | None = None) -> None:
        self.mode = mode or self.default_mode
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        self.set_hybrid(hybrid, normalization)
        self.requires_references = self.mode in ("referenced", "hybrid")  # instance value shadows the class default
        super().__init__(checkpoint, device=device)
        cfg = self.model.config
        self.encoder = self.checkpoint_encoder(cfg.encoder, cfg.encoder_sha256, encoder,
                                               max_length=cfg.encoder_max_length)
        if self.encoder.hidden_size != cfg.embedding_dim:
            raise ValueError(f"encoder {cfg.encoder!r} gives {self.encoder.hidden_size}-d embeddings but the head "
                             f"expects {cfg.embedding_dim}")
        self._call_meta: dict[str, Any] = {}

    def load_model(self, path: Path) -> torch.nn.Module:
        """The head of a checkpoint (``BertRuberModel`` or ``PoneModel``), in float64."""
        return load_head(path)

    def hybrid_ranges(self) -> HybridRanges:
        """The checkpoint's fixed normalisation ranges (:class:`MissingCalibration` when it has none)."""
        return HybridRanges.from_config(self.model.config, self.checkpoint)

    def set_hybrid(self, hybrid: str, normalization: str) -> None:
        """Choose how the hybrid score combines (``"min"`` / ``"max"``) and normalises (``"calibrated"`` /
        ``"minmax_over_call"``)."""
        if hybrid not in HYBRIDS:
            raise ValueError(f"hybrid must be one of {HYBRIDS}, got {hybrid!r}")
        if normalization not in NORMALIZATIONS:
            raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {normalization!r}")
        self.hybrid, self.normalization = hybrid, normalization

    def settings(self) -> dict[str, str]:
        """What the signature records beyond the checkpoint: model type, encoder, mode and, for the hybrid, how it
        combines and normalises (``tails``: the calibrated map's tail width beyond the ranges; signatures made when
        the map clipped at the ranges lack it)."""
        parts = {"model_type": self.model.config.model_type, "encoder_sha256": self.encoder.fingerprint,
                 "mode": self.mode}
        if self.mode == "hybrid":
            parts.update(hybrid=self.hybrid, normalization=self.normalization)
            if self.normalization == "calibrated":
                parts["tails"] = str(TAIL)
        return parts

    # -- the two scores -------------------------------------------------------------------------------------------
    def context_texts(self, items: list[ScoringItem]) -> list[str]:
        """The text the encoder reads for each item's context: its last ``context_turns`` turns, joined."""
        n_turns = self.model.config.context_turns
        return [context_text([t.text for t in it.context], n_turns) for it in items]

    def truncated_texts(self, items: list[ScoringItem]) -> int:
        """How many distinct texts the current mode encodes for ``items`` are longer than the encoder's limit:
        the contexts (unreferenced part) plus the responses and references (a text in both roles counts once)."""
        contexts = self.context_texts(items) if self.mode in ("unreferenced", "hybrid") else []
        right = [it.response for it in items]
        if self.mode in ("referenced", "hybrid"):
            right += [ref for it in items for ref in it.references]
        return self.encoder.count_truncated(contexts) + self.encoder.count_truncated(right)

    def truncated_items(self, items: list[ScoringItem]) -> list[int]:
        """The items of which the current mode encodes at least one text longer than the encoder's limit."""
        contexts = self.context_texts(items) if self.mode in ("unreferenced", "hybrid") else [None] * len(items)
        referenced = self.mode in ("referenced", "hybrid")
        cut_contexts = set(self.encoder.truncated_items([[c] if c is not None else [] for c in contexts]))
        cut_right = set(self.encoder.truncated_items(
            [[it.response, *(it.references if referenced else ())] for it in items]))
        return sorted(cut_contexts | cut_right)

    def truncation_rule(self) -> str:
        return (f"the encoder's {self.encoder.max_length} tokens per text: a context keeps its most recent tokens, a "
                "response or reference its first")

    def unreferenced(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        """The head's probability that each response fits its context, in (0, 1)."""
        c = self.encoder.embed(self.context_texts(items), batch_size=batch_size, side="left",
                               progress_bar=progress_bar)
        r = self.encoder.embed([it.response for it in items], batch_size=batch_size, progress_bar=progress_bar)
        c, r = c.to(self.device, torch.float64), r.to(self.device, torch.float64)

        def forward(rows: list[int]) -> torch.Tensor:
            # float64 GEMM kernels round a row differently by its place in the block (1-3 ulp between neighbouring
            # rows; tests/unit/test_scale.py moves a row through every place), so the head takes one row at a time:
            # the same path for every row, whatever the rows beside it. PONE's throughput with it is in docs/scale.md.
            return torch.cat([self.model(context_embeds=c[i:i + 1], response_embeds=r[i:i + 1]).score for i in rows])

        return self.fixed_row_forward(len(items), [range(len(items))], forward, progress_bar=False)

    def referenced(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        """The cosine of each response with its reference (the maximum over several), in [-1, 1]."""
        refs = [ref for it in items for ref in it.references]
        resp = self.encoder.embed([it.response for it in items], batch_size=batch_size,
                                  progress_bar=progress_bar).double().numpy()
        ref_vecs = self.encoder.embed(refs, batch_size=batch_size, progress_bar=progress_bar).double().numpy()
        out = np.empty(len(items), dtype=np.float64)
        k = 0
        for i, it in enumerate(items):
            a = resp[i]
            best = -np.inf
            for _ in it.references:
                b = ref_vecs[k]
                k += 1
                denom = float(np.linalg.norm(a) * np.linalg.norm(b))
                best = max(best, float(np.clip(np.dot(a, b) / denom, -1.0, 1.0)) if denom > 0 else 0.0)
            out[i] = best
        return out

    # -- Scorer ---------------------------------------------------------------------------------------------------
    def _score_items(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        self._call_meta = {"mode": self.mode, "context_turns": self.model.config.context_turns,
                           "truncated_texts": self.truncated_texts(items),
                           "truncated_items": self.truncated_items(items)}
        if self.mode == "unreferenced":
            return self.unreferenced(items, batch_size=batch_size, progress_bar=progress_bar)
        if self.mode == "referenced":
            self._call_meta["multi_reference"] = "max over references"
            return self.referenced(items, batch_size=batch_size, progress_bar=progress_bar)
        ranges = self.hybrid_ranges() if self.normalization == "calibrated" else None  # fails before encoding
        unref = self.unreferenced(items, batch_size=batch_size, progress_bar=progress_bar)
        ref = self.referenced(items, batch_size=batch_size, progress_bar=progress_bar)
        if ranges is not None:
            unref_n, ref_n = rescale(unref, ranges.unreferenced), rescale(ref, ranges.referenced)
            self._call_meta.update(unreferenced_range=list(ranges.unreferenced),
                                   referenced_range=list(ranges.referenced))
        else:
            unref_n = minmax_over_call(unref, "unreferenced")
            ref_n = minmax_over_call(ref, "referenced")
        combined = np.minimum(unref_n, ref_n) if self.hybrid == "min" else np.maximum(unref_n, ref_n)
        self._call_meta.update(hybrid=self.hybrid, normalization=self.normalization,
                               multi_reference="max over references", unreferenced_scores=unref.tolist(),
                               referenced_scores=ref.tolist())
        return combined

    def _metadata(self) -> dict[str, Any]:
        return {**self._call_meta, **super()._metadata()}


class BertRuberScorer(RuberScorer):
    """BERT-RUBER hybrid (Ghazarian et al., 2019): min (or max) of the normalised unreferenced and referenced
    scores. Needs references."""

    name = "bert_ruber"
    requires_references = True


class BertRuberUnrefScorer(RuberScorer):
    """BERT-RUBER's unreferenced score alone, in (0, 1): runs without references (e.g. on FED)."""

    name = "bert_ruber_unref"
    default_mode = "unreferenced"
