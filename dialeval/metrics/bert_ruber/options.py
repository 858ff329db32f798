"""The options of the RUBER-style head recipes: BERT-RUBER's (``dialeval train bert-ruber``; :mod:`.train`) and,
extended, PONE's (:mod:`dialeval.metrics.pone.options`), declared once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from ...training.options import EncoderOptions, TrainingOptions, option

SELECTION_KEYS = {"val_accuracy": True, "val_loss": False}  # key -> greater is better


@dataclass(kw_only=True)
class HeadTrainingOptions(EncoderOptions, TrainingOptions):
    """A RUBER head on frozen, cached encoder embeddings of DailyDialog pairs: Adam, constant learning rate, BCE."""

    max_positives: int = option(30_000, min=0, help="Training (context, response) pairs from DailyDialog (0: all).")
    max_val_positives: int = option(1_000, min=1, help="Validation pairs (each also gets one random negative).")
    context_turns: int = option(2, min=1, help="Context turns read before the response.")
    weight_decay: float = option(1e-4, min=0, help="Adam L2 weight decay.")
    max_grad_norm: float = option(10.0, help="Gradient clipping norm (<= 0: no clipping).")
    selection: Literal["val_accuracy", "val_loss"] = option(
        "val_accuracy", help="Checkpoint selection: val_accuracy (higher) or val_loss (lower).")
    activation: Literal["tanh", "relu"] | None = option(None, help="Head activation (default: the model's).")
    dropout: float | None = option(None, min=0, help="Head dropout (default: the model's).")
    encode_batch_size: int = option(64, min=1, help="Texts per encoder batch (embeddings are stored).")
    embedding_dir: str | None = option(None, help="Embedding store folder (default: <output-dir>/embeddings); "
                                                  "runs, concurrent ones too, may share one.")
    progress_bar: bool | None = option(None, help="Progress bars while encoding (default: for long jobs).")
    # this recipe's defaults of shared options (the field order stays the base class's)
    seed: int = 11
    epochs: int = 20
    batch_size: int = option(256, min=1, help="Positives per step (plus one negative each).")
    learning_rate: float = option(1e-3, min=0, help="Adam learning rate (constant).")

    #: What decides the prepared pairs (``pairs.json.gz``): a prepared folder is refused by other values.
    PREPARATION_FIELDS: ClassVar[tuple[str, ...]] = ("seed", "max_positives", "max_val_positives", "context_turns")


BertRuberTrainingOptions = HeadTrainingOptions
