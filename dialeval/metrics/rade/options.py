"""The options of RADE's training recipe (``dialeval train rade``; :mod:`.train`), declared once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from ...training.buckets import LENGTH_BUCKETS_HELP
from ...training.options import (EncoderOptions, FrozenCacheOptions, TrainingOptions, TrainingOptionsError,
                                 option)
from .data import RADE_SETS
from .losses import LossWeights


@dataclass(kw_only=True)
class RadeTrainingOptions(FrozenCacheOptions, EncoderOptions, TrainingOptions):
    """RADE: stage 1 (pre-training: candidate-score MSE + generation NLL, on DailyDialog++ with graded synthetic
    candidates) or stage 2 (task-specific, on the RADE sets: reference and candidate MSE + generation NLL + pairwise
    ranking), Adam."""

    PREPARATION_FIELDS: ClassVar[tuple[str, ...]] = ("seed", "stage", "sets", "max_stage1_contexts")

    seed: int = 42
    epochs: int = 10
    batch_size: int = option(16, min=1, help="Examples per step.")
    learning_rate: float = option(5e-5, min=0, help="Adam learning rate of the encoder and decoder (the paper's "
                                                    "5e-5).")
    head_learning_rate: float = option(1e-3, min=0, help="Adam learning rate of the score regressor, a new MLP (at "
                                                         "5e-5 it stayed at the mean score for a CPU-sized run).")
    stage: int = option(2, min=1, help="1: cross-domain pre-training (RADE(PT)); 2: task-specific training "
                                          "(RADE(TS)), from --init-from or from the base encoder.")
    sets: str = option(",".join(RADE_SETS), help="Stage 2: the RADE sets trained (and validated) on, "
                                                 "comma-separated; the checkpoint is chosen on their validation "
                                                 "splits.")
    init_from: str | None = option(None, help="Start from this run folder's best/ checkpoint (stage 2 after "
                                              "stage 1); default: warm start from the base encoder.")
    max_stage1_contexts: int = option(0, min=0, help="Stage 1: training contexts drawn from DailyDialog++ "
                                                     "positives, four examples each (0: all, about 6,900).")
    adam_beta1: float = option(0.98, min=0, help="Adam beta1 (the paper prints 0.98).")
    adam_beta2: float = option(0.97, min=0, help="Adam beta2 (the paper prints 0.97).")
    warmup_ratio: float = option(0.0, min=0, help="Share of the steps with a linear learning-rate warm-up (then "
                                                  "linear decay).")
    trainable_encoder_layers: int = option(2, min=-1, help="Top encoder layers trained (-1: the whole encoder); "
                                                           "the decoder and the regressor always train.")
    lora_rank: int = option(0, min=0, help="Train those layers through low-rank adapters of this rank instead of "
                                           "the layers themselves (0); a checkpoint then holds the adapters (0.5 MB "
                                           "at rank 8) instead of the layers (7 MB in float16). At rank 8 validation "
                                           "fell far below full training (see the card).")
    adapter_learning_rate: float = option(1e-4, min=0, help="Adam learning rate of the adapters (at 1e-3 stage 1's "
                                                            "validation was lower still; see the card).")
    regressor_hidden: int = option(256, min=1, help="Hidden units of the score regressor (one tanh layer).")
    max_seq_length: int = option(256, min=16, help="Tokens of the evaluator's input.")
    max_reference_length: int = option(64, min=4, help="Tokens of the reference and of the candidate (each) and "
                                                       "of a generated reference.")
    length_buckets: int = option(0, min=0, help=LENGTH_BUCKETS_HELP)
    pooling: Literal["segments", "mean"] = option(
        "segments", help="Regressor input: segments (the means of the context, reference and candidate tokens with "
                         "their products) or mean (one mean over every token).")
    use_reference: bool = option(True, flag="reference-input", help="The reference is part of the input (off: the "
                                                                    "paper's plain regressor baseline).")
    reference_mse: bool = option(True, help="Stage 2: MSE on the reference's score (off: ablation).")
    generation: bool = option(True, help="The generation NLL (off: ablation 'w/o generation loss').")
    ranking: bool = option(True, help="Stage 2: the pairwise ranking loss (off: ablation 'w/o ranking loss').")
    ranking_margin: float = option(0.1, min=0, help="Margin of the ranking loss, on the 1-5 score scale.")
    regressor_dropout: float = option(0.1, min=0, help="Dropout of the score regressor.")

    @property
    def set_list(self) -> tuple[str, ...]:
        return tuple(s.strip() for s in self.sets.split(",") if s.strip())

    def loss_weights(self) -> LossWeights:
        """The stage's terms with this run's switches (stage 1 has no reference score nor ranking)."""
        stage2 = self.stage == 2
        return LossWeights(reference_mse=float(stage2 and self.reference_mse), candidate_mse=1.0,
                           generation=float(self.generation), ranking=float(stage2 and self.ranking),
                           ranking_margin=self.ranking_margin)

    def check(self) -> None:
        super().check()
        if self.stage not in (1, 2):
            raise TrainingOptionsError(f"stage must be 1 or 2, got {self.stage}")
        unknown = [s for s in self.set_list if s not in RADE_SETS]
        if unknown or not self.set_list:
            raise TrainingOptionsError(f"sets must name some of {', '.join(RADE_SETS)}, got {self.sets!r}")
        if self.stage == 1 and not (self.reference_mse and self.ranking):
            raise TrainingOptionsError("stage 1 has no reference-score or ranking term to switch off "
                                       "(--no-reference-mse / --no-ranking are stage 2 ablations)")
        if not self.use_reference and self.ranking and self.stage == 2:
            raise TrainingOptionsError("without the reference in the input (--no-reference-input) the model cannot "
                                       "score the reference: add --no-ranking --no-reference-mse")
        if self.frozen_cache and self.trainable_encoder_layers < 0:
            raise TrainingOptionsError("--frozen-cache (the default) keeps the outputs of the encoder's frozen "
                                       "layers, and --trainable-encoder-layers -1 freezes none: add "
                                       "--no-frozen-cache")
        if not self.use_reference and self.reference_mse and self.stage == 2:
            raise TrainingOptionsError("without the reference in the input the reference-score term has nothing "
                                       "to learn from: add --no-reference-mse")
