"""Adding the hybrid normalisation ranges to an existing BERT-RUBER or PONE checkpoint (:func:`calibrate_from_data`,
run by ``dialeval checkpoint calibrate --checkpoint DIR``).

It rebuilds the training recipe's DailyDialog validation set for the checkpoint (its context turns, the recipe's
seed and size unless given), encodes it with the checkpoint's encoder, fits the ranges with the checkpoint's head
(:mod:`.calibration`) and writes them into ``config.json`` (only that file changes). Checkpoints trained since the
ranges exist already hold them: the recipes calibrate their best checkpoint when training ends.

This module sits above the training code (it reuses the recipe's data building); what it writes is described in
:mod:`.ranges` (the map) and :mod:`.calibration` (the calibration set).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import fields
from pathlib import Path

from ...backbone import Encoder
from .calibration import calibrate_checkpoint
from .data import dailydialog_pairs
from .options import HeadTrainingOptions
from .ranges import HybridRanges
from .train import RunEmbeddings, build_head_data, pair_texts


def calibrate_from_data(checkpoint: str | Path, *, data_dir: str | None = None, seed: int | None = None,
                        max_val_positives: int | None = None, embedding_dir: str | None = None) -> HybridRanges:
    """Build the recipe's validation set for an existing checkpoint and add the ranges to it."""
    path = Path(checkpoint)
    config = json.loads((path / "config.json").read_text())
    recipe_defaults = {f.name: f.default for f in fields(HeadTrainingOptions)}
    seed = recipe_defaults["seed"] if seed is None else seed
    n = recipe_defaults["max_val_positives"] if max_val_positives is None else max_val_positives
    turns = int(config["context_turns"])
    val_pairs = dailydialog_pairs("validation", context_turns=turns, limit=n, seed=seed, data_dir=data_dir)
    with tempfile.TemporaryDirectory() as tmp:
        encoder = Encoder(config["encoder"], max_length=config["encoder_max_length"], device="cpu", cache_size=0)
        emb = RunEmbeddings(Path(embedding_dir) if embedding_dir else Path(tmp), encoder)
        contexts, responses = pair_texts(val_pairs, turns)
        emb.encode(contexts, responses, progress_bar=False)
        data = build_head_data([], val_pairs, emb, context_turns=turns, seed=seed)  # validation arrays only
    return calibrate_checkpoint(path, data.val_context, data.val_response, seed=seed)
