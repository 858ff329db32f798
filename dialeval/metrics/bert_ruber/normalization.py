"""Normalisation of the RUBER-style hybrid score: ranges fixed at training time and stored in the checkpoint.

The hybrid score (BERT-RUBER, PONE's ``mode="hybrid"``) combines the unreferenced score (the head's probability) and
the referenced score (response-reference cosine) after mapping each to [0, 1]. The original min-max normalised both
over the test set, so an item's score depended on the other items. Here each score is mapped with a range fixed
once, on a calibration set, and stored in the checkpoint's ``config.json``
(``hybrid_unreferenced_range``, ``hybrid_referenced_range``, ``hybrid_calibration``)::

    normalised = clip((score - low) / (high - low), 0, 1)

so every item is scored on its own.

**Calibration set**: the run's DailyDialog validation set as the training recipe builds it
(:func:`dialeval.metrics.bert_ruber.train.build_head_data`): each validation context with its gold reply and with
the fixed random negative reply drawn for it (``n`` positives, ``n`` negatives, seed of the run).

* unreferenced range: minimum and maximum of the head's score over the ``2n`` (context, candidate) pairs;
* referenced range: minimum and maximum of the cosine between each negative candidate and the gold reply of its
  context (the gold reply plays the reference). DailyDialog has one reply per context, so the gold candidate's own
  cosine to the reference is always 1 and carries no information; it is left out. ``n`` values.

:func:`calibrate_checkpoint` computes the ranges and writes them into a checkpoint; the training recipes call it
on their best checkpoint, and ``python -m dialeval.metrics.bert_ruber.normalization --checkpoint DIR`` adds them to
an existing checkpoint (only ``config.json`` changes).

``minmax_over_call`` is the original behaviour (min-max over the items of one call), kept as a named option.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import torch

from ...errors import DialevalError
from ...schema import InputError

RANGE_FIELDS = ("hybrid_unreferenced_range", "hybrid_referenced_range")
CALIBRATION_FIELD = "hybrid_calibration"


class MissingCalibration(DialevalError, ValueError):
    """A checkpoint without hybrid normalisation ranges (made before they existed) was asked for a hybrid score;
    the message names the command that adds them."""


@dataclass(frozen=True)
class HybridRanges:
    """The fixed [low, high] of the unreferenced score and of the referenced cosine, and what they were fitted on."""

    unreferenced: tuple[float, float]
    referenced: tuple[float, float]
    calibration: str

    @classmethod
    def from_config(cls, config, checkpoint: str | Path = "the checkpoint") -> HybridRanges:
        unref, ref = (getattr(config, name, None) for name in RANGE_FIELDS)
        if unref is None or ref is None:
            raise MissingCalibration(
                f"{checkpoint} has no hybrid normalisation ranges ({', '.join(RANGE_FIELDS)} in config.json; "
                "checkpoints trained before they existed lack them): add them with `python -m "
                f"dialeval.metrics.bert_ruber.normalization --checkpoint {checkpoint}`, or pass "
                "normalization='minmax_over_call' (min-max over the items of each call, batch-dependent)")
        return cls(tuple(unref), tuple(ref), getattr(config, CALIBRATION_FIELD, ""))

    def config_fields(self) -> dict:
        return {RANGE_FIELDS[0]: list(self.unreferenced), RANGE_FIELDS[1]: list(self.referenced),
                CALIBRATION_FIELD: self.calibration}


def fit_range(values: np.ndarray, what: str) -> tuple[float, float]:
    """(minimum, maximum) of a calibration score array; they must be finite and differ."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError(f"the {what} calibration scores must be a non-empty array of finite numbers")
    low, high = float(values.min()), float(values.max())
    if not high > low:
        raise ValueError(f"the {what} calibration scores are all {low:.6g}: no range to normalise with")
    return low, high


def rescale(values: np.ndarray, value_range: Sequence[float]) -> np.ndarray:
    """Map scores with a fixed range: ``clip((v - low) / (high - low), 0, 1)``, item by item."""
    low, high = value_range
    return np.clip((np.asarray(values, dtype=np.float64) - low) / (high - low), 0.0, 1.0)


def minmax_over_call(values: np.ndarray, what: str) -> np.ndarray:
    """The original normalisation: min-max over the items scored together (an item depends on the others)."""
    low, high = float(values.min()), float(values.max())
    if not high > low:
        raise InputError(
            f"normalization='minmax_over_call' rescales the {what} scores over the items of one call and needs at "
            f"least two items with different values (got {values.size} item(s), all {low:.6g}); score more items "
            "together or use the default normalization='calibrated'")
    return (values - low) / (high - low)


def row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of each row of ``a`` with the same row of ``b``, in float64 (0 for a zero vector), in [-1, 1]."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    denom = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    dots = np.einsum("ij,ij->i", a, b)
    return np.where(denom > 0, np.clip(dots / np.where(denom > 0, denom, 1.0), -1.0, 1.0), 0.0)


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
    return (f"DailyDialog validation, {n} contexts (seed {seed}): unreferenced range over the gold reply and one "
            "fixed uniform negative per context; referenced range over the cosine of each negative to its "
            "context's gold reply")


def calibrate_checkpoint(checkpoint: str | Path, val_context: np.ndarray, val_response: np.ndarray, *,
                         seed: int) -> HybridRanges:
    """Compute the ranges with the checkpoint's head and write them into its ``config.json`` (nothing else)."""
    from .scorer import load_head

    path = Path(checkpoint)
    ranges = calibration_ranges(load_head(path), val_context, val_response,
                                calibration_text(len(val_context) // 2, seed))
    config_path = path / "config.json"
    config = json.loads(config_path.read_text())
    config.update(ranges.config_fields())
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return ranges


def calibrate_from_data(checkpoint: str | Path, *, data_dir: str | None = None, seed: int | None = None,
                        max_val_positives: int | None = None, embedding_dir: str | None = None) -> HybridRanges:
    """Build the recipe's validation set for an existing checkpoint and add the ranges to it."""
    from ...backbone import Encoder
    from .data import dailydialog_pairs
    from .options import HeadTrainingOptions
    from .train import RunEmbeddings, build_head_data, pair_texts

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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dialeval.metrics.bert_ruber.normalization",
        description="Add the hybrid normalisation ranges to a BERT-RUBER or PONE checkpoint (only config.json "
                    "changes), computed on the recipe's DailyDialog validation set.")
    parser.add_argument("--checkpoint", required=True, help="checkpoint folder (holds config.json)")
    parser.add_argument("--data-dir", default=None, help="data directory (default: $DIALEVAL_DATA_DIR or "
                                                         "../shared/data)")
    parser.add_argument("--seed", type=int, default=None, help="the training run's seed (default: the recipe's, 11)")
    parser.add_argument("--max-val-positives", type=int, default=None,
                        help="the run's validation size (default: the recipe's, 1000)")
    parser.add_argument("--embedding-dir", default=None,
                        help="an embedding store to reuse (default: a temporary one)")
    args = parser.parse_args(argv)
    if not (Path(args.checkpoint) / "config.json").is_file():
        parser.error(f"{args.checkpoint} is not a checkpoint folder (no config.json)")
    ranges = calibrate_from_data(args.checkpoint, data_dir=args.data_dir, seed=args.seed,
                                 max_val_positives=args.max_val_positives, embedding_dir=args.embedding_dir)
    print(json.dumps(ranges.config_fields(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
