"""The options of GRADE's training recipe (``dialeval train grade``; :mod:`.train`), declared once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from ...training.buckets import LENGTH_BUCKETS_HELP
from ...training.options import EncoderOptions, FrozenCacheOptions, TrainingOptions, option


@dataclass(kw_only=True)
class GradeTrainingOptions(FrozenCacheOptions, EncoderOptions, TrainingOptions):
    """GRADE on DailyDialog: one lexical and one embedding negative per positive, margin ranking loss, AdamW."""

    #: What preparation writes depends on these: the sampled positives and their negatives (seed, the two limits,
    #: the encoder that picks the embedding negatives) and whether keywords are extracted for the graph branch.
    #: Tokenising (max_seq_length) happens at train time.
    PREPARATION_FIELDS: ClassVar[tuple[str, ...]] = ("seed", "max_positives", "max_val_positives", "use_graph",
                                                     "length_matched", "encoder")

    # this recipe's defaults of shared options (the field order stays the base class's)
    seed: int = 71
    epochs: int = 1
    batch_size: int = option(16, min=1, help="Pairs (positive, negative) per step.")
    learning_rate: float = option(2e-5, min=0, help="Encoder learning rate (AdamW, warm-up and linear decay).")
    eval_every: int | None = 250
    # GRADE's own
    max_positives: int = option(12_000, min=0, help="Training positives sampled from DailyDialog, 2 pairs each "
                                                    "(0: all).")
    max_val_positives: int = option(500, min=1, help="Validation positives.")
    head_learning_rate: float = option(1e-4, min=0, help="Learning rate of the graph and fusion modules.")
    trainable_encoder_layers: int = option(2, min=0, help="Top encoder layers fine-tuned.")
    lora_rank: int = option(0, min=0, help="Low-rank adapters of this rank on the encoder layers of --lora-layers (0: "
                                           "none); the checkpoint then holds the adapters, not the layers. Adapters "
                                           "learn at --head-learning-rate.")
    lora_layers: int = option(-1, min=-1, help="The top encoder layers that get the --lora-rank adapters (-1: every "
                                               "layer); the layers below them are frozen whole, so --frozen-cache "
                                               "keeps their outputs.")
    max_seq_length: int = option(128, min=1, help="Tokens of the context + response text.")
    length_buckets: int = option(64, min=0, help=LENGTH_BUCKETS_HELP)
    use_graph: bool = option(True, flag="graph", help="Graph branch (off: ablation 'no graph').")
    use_khop: bool = option(True, flag="khop", help="k-hop neighbour features (off: ablation).")
    use_hop_attention: bool = option(True, flag="hop-attention", help="1/hop attention scaling (off: ablation).")
    # departures from the paper, each an option so that its effect is measured on its own (issue 12)
    pooling: Literal["cls", "mean", "pair"] = option(
        "cls", help="Text vector: cls (the paper), mean (masked token mean) or pair ([u, v, u*v, |u-v|] of the "
                    "context and response token means).")
    loss: Literal["pairwise", "pointwise", "both"] = option(
        "pairwise", help="pairwise: margin ranking of the positive over its negative (the paper); pointwise: binary "
                         "cross-entropy, positives 1 and negatives 0, which pins the score level across contexts; "
                         "both: their sum.")
    length_matched: bool = option(False, help="Choose each negative nearest its gold reply's length (BM25: among 50 "
                                              "hits from the mid rank on; embedding: among the 5 most similar).")
    context_copies: bool = option(False, help="Add one pair per training positive whose negative is an utterance "
                                              "of its own context offered as the reply.")
    random_negatives: bool = option(False, help="Add one pair per training positive whose negative is the reply of "
                                                "another, uniformly drawn pair (the prepared negatives are all "
                                                "similar to the gold).")
    select_by: Literal["val_ranking_loss", "val_pooled_auc"] = option(
        "val_ranking_loss", help="Checkpoint selection: lowest validation ranking loss (the original), or highest "
                                 "AUC of validation positives against negatives pooled over all contexts.")
