"""The options of the AMR evaluator's training recipes, declared once: the small model (``dialeval train amr-eval``;
:mod:`.train`) and the small AMR parser (``dialeval train amr-parser``; :mod:`.parser_train`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from ...training.options import EncoderOptions, TrainingOptions, TrainingOptionsError, option
from .data import NEGATIVE_KINDS


@dataclass(kw_only=True)
class AmrEvalTrainingOptions(EncoderOptions, TrainingOptions):
    """The small model (SLM): positives against negatives of DailyDialog++'s dev contexts, cross-entropy plus a
    contrastive loss that aligns the text and graph vectors of positives, AdamW."""

    PREPARATION_FIELDS: ClassVar[tuple[str, ...]] = ("graph_source", "amrlib_model_dir", "parser_model_dir",
                                                     "penman_files", "negatives")

    seed: int = 42
    epochs: int = 3
    batch_size: int = option(16, min=1, help="Examples per step.")
    learning_rate: float = option(5e-5, min=0, help="AdamW learning rate of the encoder's trained weights.")
    head_learning_rate: float = option(1e-3, min=0, help="AdamW learning rate of the new modules (projections, graph "
                                                         "transformer, gate, classifier).")
    adapter_learning_rate: float = option(1e-4, min=0, help="AdamW learning rate of the encoder's low-rank "
                                                            "adapters.")
    graph_source: Literal["dependency", "amrlib", "parser", "penman"] = option(
        "dependency", help="Where the utterance graphs come from: 'dependency' (spaCy's parse reduced to content "
                           "words: not AMR, the stand-in that runs anywhere), 'amrlib' (an installed amrlib parse "
                           "model, --amrlib-model-dir), 'parser' (the project's own AMR parser: the "
                           "shipped one, or --parser-model-dir) or 'penman' (your graphs, --penman-files).")
    amrlib_model_dir: str | None = option(None, help="The amrlib parse model folder (--graph-source amrlib).")
    parser_model_dir: str | None = option(None, help="The parser checkpoint (--graph-source parser): a `dialeval "
                                                     "train amr-parser` run folder or its best/; default: the "
                                                     "parser shipped in the package.")
    penman_files: str | None = option(None, help="Comma-separated PENMAN files with '# ::snt' lines covering every "
                                                 "utterance (--graph-source penman).")
    negatives: str = option("adversarial", help="Negative kinds trained on, comma-separated: adversarial (the "
                                                "paper's), random.")
    max_relations: int = option(48, min=0, help="Relation labels with an embedding of their own (the most frequent "
                                                "in the training graphs); the rest share one.")
    use_graph: bool = option(True, flag="graph", help="The graph branch (off: ablation 'no graph').")
    use_gate: bool = option(True, flag="gate", help="The sigmoid gate (off: ablation 'no gate', plain "
                                                     "concatenation).")
    pooling: Literal["pair", "joint"] = option(
        "pair", help="'pair': context and response pooled apart and compared ([c, r, c*r, |c-r|]) in each branch; "
                     "'joint': one mean over context and response (the first shipped model's design).")
    length_balance: bool = option(True, flag="length-balance", help="Weight the examples so that positives and "
                                                                    "negatives have the same distribution of reply "
                                                                    "length (off: every example weighs 1).")
    contrastive_weight: float = option(0.1, min=0, help="Weight of the contrastive loss (0: ablation 'no "
                                                        "contrastive loss').")
    contrastive_scale: float = option(20.0, min=0, help="Cosine similarities are multiplied by this before the "
                                                        "contrastive softmax.")
    hidden_size: int = option(128, min=8, help="Width of the projected text and graph vectors and of the graph "
                                               "transformer.")
    graph_layers: int = option(2, min=1, help="Graph transformer layers.")
    trainable_encoder_layers: int = option(2, min=-1, help="Top encoder layers trained (-1: all).")
    lora_rank: int = option(8, min=0, help="Train those layers through low-rank adapters of this rank (0: the layers "
                                           "themselves).")
    max_seq_length: int = option(256, min=72, help="Tokens of the context + response text.")

    @property
    def negative_kinds(self) -> tuple[str, ...]:
        return tuple(k.strip() for k in self.negatives.split(",") if k.strip())

    def check(self) -> None:
        super().check()
        kinds = self.negative_kinds
        if not kinds or any(k not in NEGATIVE_KINDS for k in kinds):
            raise TrainingOptionsError(f"negatives must name some of {', '.join(NEGATIVE_KINDS)}, got "
                                       f"{self.negatives!r}")
        if self.graph_source == "amrlib" and not self.amrlib_model_dir:
            raise TrainingOptionsError("--graph-source amrlib needs --amrlib-model-dir")
        if self.graph_source == "penman" and not self.penman_files:
            raise TrainingOptionsError("--graph-source penman needs --penman-files")
        if self.use_gate and not self.use_graph:
            raise TrainingOptionsError("the gate mixes text and graph: with --no-graph add --no-gate")
        if self.hidden_size % 4:
            raise TrainingOptionsError(f"hidden_size must be a multiple of 4 (the graph heads), got "
                                       f"{self.hidden_size}")

    def graph_source_options(self) -> dict:
        """The keyword arguments of :func:`~.graph_sources.load_graph_source` for :attr:`graph_source`."""
        if self.graph_source == "amrlib":
            return {"model_dir": self.amrlib_model_dir}
        if self.graph_source == "parser":
            return {"model_dir": self.parser_model_dir}
        if self.graph_source == "penman":
            return {"files": [p.strip() for p in self.penman_files.split(",") if p.strip()]}
        return {}


@dataclass(kw_only=True)
class AmrParserTrainingOptions(EncoderOptions, TrainingOptions):
    """The project's small AMR parser: the bundled encoder and a decoder warm-started from its first layers, trained
    on gold AMR of the data directory to write simplified graphs; AdamW, checkpoint chosen by validation Smatch."""

    PREPARATION_FIELDS: ClassVar[tuple[str, ...]] = ("corpora", "decoder_layers", "encoder")  # its word pieces

    seed: int = 42
    epochs: int = 12
    batch_size: int = option(16, min=1, help="Sentences per step.")
    learning_rate: float = option(5e-5, min=0, help="AdamW learning rate of the encoder's trained layers.")
    head_learning_rate: float = option(3e-4, min=0, help="AdamW learning rate of the decoder and the output layer.")
    corpora: str = option("little_prince,massive_amr", help="Gold AMR corpora trained on (their train splits; their "
                                                            "dev splits validate, their test splits are reported), "
                                                            "comma-separated: little_prince, massive_amr (CC BY-NC: "
                                                            "a parser trained on it is non-commercial).")
    decoder_layers: int = option(2, min=1, help="Decoder layers (warm-started from the encoder's first).")
    trainable_encoder_layers: int = option(2, min=-1, help="Top encoder layers trained (-1: all).")
    lora_rank: int = option(0, min=0, help="0: train the weights (a checkpoint of about 17 MB). Above 0: keep every "
                                           "weight of the encoder package frozen and train low-rank adapters of "
                                           "this rank on the decoder (cross-attention starts as a copy of "
                                           "self-attention) and the top --trainable-encoder-layers encoder layers "
                                           "(a checkpoint of about 1 MB).")
    lora_alpha: float = option(16.0, min=0, help="Adapter scale numerator (the update is (alpha / rank) B A).")
    adapter_learning_rate: float = option(1e-3, min=0, help="AdamW learning rate of the low-rank adapters.")
    max_source_length: int = option(96, min=8, help="Word pieces of a sentence read.")
    max_target_length: int = option(192, min=16, help="Output tokens of a graph (longer training targets are cut).")

    @property
    def corpus_names(self) -> tuple[str, ...]:
        return tuple(c.strip() for c in self.corpora.split(",") if c.strip())

    def check(self) -> None:
        super().check()
        allowed = ("little_prince", "massive_amr")
        names = self.corpus_names
        if not names or any(c not in allowed for c in names):
            raise TrainingOptionsError(f"corpora must name some of {', '.join(allowed)} (the corpora with a train "
                                       f"split), got {self.corpora!r}")
