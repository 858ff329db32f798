"""The trained head of a RUBER-style checkpoint folder (BERT-RUBER's or PONE's), as the scorer and the calibration
load it."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ...scoring.learned import load_pretrained

MODEL_TYPES = ("dialeval-bert-ruber", "dialeval-pone")


def load_head(path: Path) -> torch.nn.Module:
    """The head of a checkpoint folder (``BertRuberModel`` or ``PoneModel``, by its ``model_type``), in float64."""
    from ...modeling.bert_ruber import BertRuberModel, PoneModel  # transformers loads only when a model does

    model_type = json.loads((Path(path) / "config.json").read_text()).get("model_type")
    if model_type not in MODEL_TYPES:
        raise ValueError(f"{path} holds a {model_type!r} model, not one of {MODEL_TYPES}")
    model_class = PoneModel if model_type == "dialeval-pone" else BertRuberModel
    return load_pretrained(model_class, Path(path)).to(torch.float64)
