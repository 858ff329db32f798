"""BERT-RUBER on the shared scoring API: ``load_scorer("bert_ruber")`` (hybrid) and ``"bert_ruber_unref"``.

Scores (Ghazarian et al., 2019; Tao et al., 2018 for RUBER):

* **unreferenced**: the trained head's probability that the response fits the context, in (0, 1);
* **referenced**: cosine between the sentence embeddings of the response and of the reference (several references:
  the maximum), in [-1, 1];
* **hybrid** (default of ``"bert_ruber"``): both are normalised, then combined with ``min`` (default, as PONE's
  ``hybird.py``) or ``max``. ``normalization="minmax"`` (default, as the original) rescales each of the two scores
  to [0, 1] over the items of the call, so an item's hybrid score depends on the other items scored with it (never
  on ``batch_size``); it needs at least two items with different values. ``normalization="fixed"`` keeps the
  unreferenced score as it is and maps the cosine to ``(1 + cos) / 2``, so every item is scored on its own (use it
  for one item at a time or with ``score_batch`` over chunks).

Determinism: embeddings come from :class:`dialeval.backbone.Encoder` (batch-invariant); the head runs in float64
on chunks of exactly ``FORWARD_ROWS`` rows (the last chunk topped up with copies), so a score does not depend on the
batch size or on the other items. The cosine is computed row by row in float64.

A checkpoint is a folder with ``config.json`` + ``model.safetensors`` (the head only) + the custom-code files;
``checkpoint="default"`` is the one shipped in the package (``dialeval/checkpoints/<metric>/default``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from ...backbone import Encoder
from ...schema import InputError, ScoringItem
from ...scoring.learned import LearnedScorer, load_pretrained
from .data import context_text

MODES = ("unreferenced", "referenced", "hybrid")
HYBRIDS = ("min", "max")
NORMALIZATIONS = ("minmax", "fixed")
MODEL_TYPES = ("dialeval-bert-ruber", "dialeval-pone")


def _minmax(values: np.ndarray, what: str) -> np.ndarray:
    lo, hi = float(values.min()), float(values.max())
    if not hi > lo:
        raise InputError(
            f"normalization='minmax' rescales the {what} scores over the items of one call and needs at least two "
            f"items with different values (got {values.size} item(s), all {lo:.6g}); score more items together or "
            "pass normalization='fixed'"
        )
    return (values - lo) / (hi - lo)


class RuberScorer(LearnedScorer):
    """Unreferenced / referenced / hybrid RUBER-style scorer over a trained head (see the module docstring)."""

    name: ClassVar[str] = "bert_ruber"
    checkpoint_dir: ClassVar[str] = "bert_ruber"
    train_command: ClassVar[str] = "dialeval train bert-ruber"
    default_mode: ClassVar[str] = "hybrid"

    def __init__(self, checkpoint: str | os.PathLike | None = None, *, mode: str | None = None, hybrid: str = "min",
                 normalization: str = "minmax", device: str | torch.device | None = None) -> None:
        self.mode = mode or self.default_mode
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        self.set_hybrid(hybrid, normalization)
        self.requires_references = self.mode in ("referenced", "hybrid")  # instance value shadows the class default
        super().__init__(checkpoint, device=device)
        cfg = self.model.config
        self.encoder = Encoder(cfg.encoder, max_length=cfg.encoder_max_length, device=self._device)
        if self.encoder.hidden_size != cfg.embedding_dim:
            raise ValueError(f"encoder {cfg.encoder!r} gives {self.encoder.hidden_size}-d embeddings but the head "
                             f"expects {cfg.embedding_dim}")
        self._call_meta: dict[str, Any] = {}

    def load_model(self, path: Path) -> torch.nn.Module:
        """The head of a checkpoint (``BertRuberModel`` or ``PoneModel``), in float64."""
        from ...modeling.bert_ruber import BertRuberModel, PoneModel

        model_type = json.loads((path / "config.json").read_text()).get("model_type")
        if model_type not in MODEL_TYPES:
            raise ValueError(f"{path} holds a {model_type!r} model, not one of {MODEL_TYPES}")
        model_class = PoneModel if model_type == "dialeval-pone" else BertRuberModel
        return load_pretrained(model_class, path).to(torch.float64)

    def set_hybrid(self, hybrid: str, normalization: str) -> None:
        """Choose how the hybrid score combines (``"min"`` / ``"max"``) and normalises (``"minmax"`` / ``"fixed"``)."""
        if hybrid not in HYBRIDS:
            raise ValueError(f"hybrid must be one of {HYBRIDS}, got {hybrid!r}")
        if normalization not in NORMALIZATIONS:
            raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {normalization!r}")
        self.hybrid, self.normalization = hybrid, normalization

    def settings(self) -> dict[str, str]:
        parts = {"model_type": self.model.config.model_type, "encoder_sha256": self.encoder.fingerprint,
                 "mode": self.mode}
        if self.mode == "hybrid":
            parts.update(hybrid=self.hybrid, normalization=self.normalization)
        return parts

    # -- the two scores -------------------------------------------------------------------------------------------
    def unreferenced(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        n_turns = self.model.config.context_turns
        contexts = [context_text([t.text for t in it.context], n_turns) for it in items]
        c = self.encoder.embed(contexts, batch_size=batch_size, side="left", progress_bar=progress_bar)
        r = self.encoder.embed([it.response for it in items], batch_size=batch_size, progress_bar=progress_bar)
        c, r = c.to(self._device, torch.float64), r.to(self._device, torch.float64)

        def forward(rows: list[int]) -> torch.Tensor:
            return self.model(context_embeds=c[rows], response_embeds=r[rows]).score

        return self.fixed_row_forward(len(items), [range(len(items))], forward, progress_bar=False)

    def referenced(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
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
        self._call_meta = {"mode": self.mode, "context_turns": self.model.config.context_turns}
        if self.mode == "unreferenced":
            return self.unreferenced(items, batch_size=batch_size, progress_bar=progress_bar)
        if self.mode == "referenced":
            self._call_meta["multi_reference"] = "max over references"
            return self.referenced(items, batch_size=batch_size, progress_bar=progress_bar)
        unref = self.unreferenced(items, batch_size=batch_size, progress_bar=progress_bar)
        ref = self.referenced(items, batch_size=batch_size, progress_bar=progress_bar)
        if self.normalization == "minmax":
            unref_n, ref_n = _minmax(unref, "unreferenced"), _minmax(ref, "referenced")
        else:
            unref_n, ref_n = unref, (1.0 + ref) / 2.0
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
