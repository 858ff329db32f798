"""Fitting the hybrid score's normalisation ranges (:mod:`.ranges`) on validation data and writing them into a
checkpoint.

**Calibration set**: the run's DailyDialog validation set as the training recipe builds it
(:func:`dialeval.metrics.bert_ruber.train.build_head_data`): each validation context with its gold reply and with
the fixed random negative reply drawn for it (``n`` positives, ``n`` negatives, seed of the run).

* unreferenced range: minimum and maximum of the head's score over the ``2n`` (context, candidate) pairs;
* referenced range: minimum and maximum of the cosine between each negative candidate and the gold reply of its
  context (the gold reply plays the reference). DailyDialog has one reply per context, so the gold candidate's own
  cosine to the reference is always 1 and carries no information; it is left out. ``n`` values.

:func:`calibrate_checkpoint` computes the ranges and writes them into a checkpoint; the training recipes call it on
their best checkpoint, and ``dialeval checkpoint calibrate --checkpoint DIR`` (:mod:`.normalization`, which builds
the validation arrays first) adds them to an existing checkpoint (only ``config.json`` changes).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from .head import load_head
from .ranges import HybridRanges, fit_range, row_cosines


@torch.inference_mode()
def calibration_ranges(head: torch.nn.Module, val_context: np.ndarray, val_response: np.ndarray,
                       calibration: str) -> HybridRanges:
    """Ranges from the validation arrays of :class:`~dialeval.metrics.bert_ruber.train.HeadData`: ``val_context``
    is the ``n`` contexts twice, ``val_response`` the ``n`` gold replies then the ``n`` negatives."""
    n2 = len(val_context)
    if n2 < 4 or n2 % 2 or len(val_response) != n2:
        raise ValueError(f"expected n contexts twice and n gold + n negative replies (n >= 2), got {n2} contexts "
                         f"and {len(val_response)} replies")
    n = n2 // 2
    head = head.eval()
    device, dtype = next(head.parameters()).device, next(head.parameters()).dtype
    unref = head(context_embeds=torch.as_tensor(val_context, dtype=dtype, device=device),
                 response_embeds=torch.as_tensor(val_response, dtype=dtype, device=device)).score
    ref = row_cosines(val_response[n:], val_response[:n])  # each negative against its context's gold reply
    return HybridRanges(fit_range(unref.double().cpu().numpy(), "unreferenced"), fit_range(ref, "referenced"),
                        calibration)


def calibration_text(n: int, seed: int) -> str:
    """What the ranges were fitted on, as stored in ``hybrid_calibration``."""
    return (f"DailyDialog validation, {n} contexts (seed {seed}): unreferenced range over the gold reply and one "
            "fixed uniform negative per context; referenced range over the cosine of each negative to its "
            "context's gold reply")


def calibrate_checkpoint(checkpoint: str | Path, val_context: np.ndarray, val_response: np.ndarray, *,
                         seed: int) -> HybridRanges:
    """Compute the ranges with the checkpoint's head and write them into its ``config.json`` (nothing else)."""
    path = Path(checkpoint)
    ranges = calibration_ranges(load_head(path), val_context, val_response,
                                calibration_text(len(val_context) // 2, seed))
    config_path = path / "config.json"
    config = json.loads(config_path.read_text())
    config.update(ranges.config_fields())
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return ranges
