"""The options of PONE's training recipe (``dialeval train pone``; :mod:`.train`), declared once: BERT-RUBER's head
options plus the three additions (augmentation, label filter, weighted negatives), each switchable for the
ablations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from ...training.options import TrainingOptionsError, option
from ..bert_ruber.options import HeadTrainingOptions


@dataclass(kw_only=True)
class PoneTrainingOptions(HeadTrainingOptions):
    """PONE on DailyDialog: augmented positives, weighted negatives, label filter (flags for the ablations)."""

    epochs: int = option(10, min=1, help="Epochs of stage 1 (or of the only stage without the label filter).")
    max_steps: int | None = option(None, min=1, help="Stop each stage after N steps.")
    augment: bool = option(True, help="Augmented positives, Po (PONE-Po-LF: --no-augment --no-label-filter).")
    label_filter: bool = option(True, help="Label filter, LF, in a second stage "
                                           "(PONE-Ne-LF: --no-label-filter --no-weighted-negatives).")
    weighted_negatives: bool = option(True, help="Weighted negative sampling, Ne "
                                                 "(PONE-Ne: --no-weighted-negatives).")
    augmenter: Literal["eda", "generate"] = option("eda", help="eda, or generate (needs --generator).")
    generator: str | None = option(None, help="Seq2seq or causal LM folder / Hub id for --augmenter generate.")
    generator_max_new_tokens: int = option(32, min=1, help="Generation: new tokens per augmented response.")
    generator_top_p: float = option(0.9, min=0, help="Generation: nucleus sampling top-p.")
    k: int = option(2, min=1, help="Augmented responses per training pair.")
    synonym_threshold: float = option(0.8, help="EDA: min GloVe cosine of a synonym.")
    eda_alpha: float = option(0.1, min=0, help="EDA: share of words edited per operation.")
    eda_operations: Literal["all", "synonyms"] = option(
        "all", help="EDA edits that make augmented positives: all four, or synonym replacement only.")
    corrupted_negatives: int = option(0, min=0, help="Per training pair, N copies of the gold response with words "
                                                     "swapped and deleted (EDA) as extra negatives, label 0.")
    corruption_alpha: float = option(0.3, min=0, help="Corrupted negatives: share of words swapped, and chance "
                                                      "of each word being deleted.")
    candidates: int = option(200, min=1, flag="h", help="Weighted sampling: random candidates per positive (h).")
    temperature: float = option(0.05, flag="t", help="Weighted sampling: softmax temperature (t).")
    uniform_every: int = option(2, min=0, help="Every N-th epoch uses uniform negatives (0: never).")
    stage2_epochs: int = option(10, min=1, help="Epochs of stage 2 (label filter).")
    stage2_learning_rate: float = option(1e-4, min=0, help="Adam learning rate of stage 2 (constant).")
    stage2_weight_decay: float = option(0.0, min=0, help="Adam L2 weight decay of stage 2.")
    fuzzy_threshold: float = option(0.05, min=0, help="Label filter: keep scores <= f or >= 1-f.")
    fuzzy_process: Literal["drop", "change"] = option(
        "drop", help="Label filter: drop fuzzy pairs, or change them to positives.")
    relabel_every: int = option(2, min=1, help="Label filter: epochs between relabelling rounds.")
    max_filter_rounds: int = option(5, min=1, help="Label filter: at most N rounds.")
    filter_tolerance: int = option(0, help="Label filter: stop once at most N labels change in a round "
                                           "(-1: never stop early).")

    #: What decides the prepared files (pairs, augmented responses): a prepared folder is refused by other values.
    PREPARATION_FIELDS: ClassVar[tuple[str, ...]] = (
        *HeadTrainingOptions.PREPARATION_FIELDS, "augment", "augmenter", "generator", "generator_max_new_tokens",
        "generator_top_p", "k", "synonym_threshold", "eda_alpha", "eda_operations", "corrupted_negatives",
        "corruption_alpha")

    def check(self) -> None:
        super().check()
        if self.label_filter and not self.augment:
            raise TrainingOptionsError("the label filter relabels augmented positives: it needs augment=True "
                                       "(--augment), or label_filter=False (--no-label-filter)")
        if self.augment and self.augmenter == "generate" and not self.generator:
            raise TrainingOptionsError("augmenter='generate' needs a generator model (--generator: folder or Hub id)")
