"""The options of DynaEval's training recipe (``dialeval train dynaeval``; :mod:`.train`), declared once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...training.options import EncoderOptions, TrainingOptions, TrainingOptionsError, option

ALL, NONE = 0, -1  # dialogue limits
CORPORA = ("dailydialog", "chitchat")  # training corpora (--corpus)


def dialogue_limit(value: int) -> int | None:
    """A dialogue-limit option as the data builder reads it: None for all, 0 for none, else the number."""
    return None if value == ALL else (0 if value == NONE else value)


@dataclass(kw_only=True)
class DynaEvalTrainingOptions(EncoderOptions, TrainingOptions):
    """DynaEval on DailyDialog (with --corpus, also the CCC chit-chat corpus): utterance replacement +
    speaker-level shuffling, margin ranking loss, Adam."""

    corpus: str = option("dailydialog", help="Training corpora, comma-separated: dailydialog (DailyDialog train), "
                                             "chitchat (the CCC chit-chat corpus's train split: two-speaker chats, "
                                             "longer ones in windows of 30 turns; pip install "
                                             "'dialeval[chitchat]'). Validation and test are DailyDialog's.")
    max_dialogues: int = option(ALL, min=0, help="Training dialogues with 4-30 utterances, sampled from the --corpus "
                                                 "dialogues together (0: all; DailyDialog has 10,245).")
    max_val_dialogues: int = option(500, min=0, help="Validation dialogues (0: all).")
    max_test_dialogues: int = option(500, min=NONE, help="Test dialogues for the final report (-1: none, 0: all).")
    perturbations: int = option(20, min=1, help="Perturbed copies per dialogue, split evenly over --strategies.")
    strategies: str = option("ur,ss", help="Perturbations, comma-separated: ur (random replacement), ss (speaker "
                                           "shuffle) as the paper; hr (replacement by a similar utterance), sw "
                                           "(swap of neighbours).")
    similar_top_k: int = option(10, min=1, help="hr: the replacement is drawn from the k utterances most similar "
                                                "to the replaced one (encoder cosine).")
    seed: int = 345678
    epochs: int = 2
    batch_size: int = option(128, min=1, help="Pairs (original, perturbation) per step.")
    learning_rate: float = option(0.002, min=0, help="Adam learning rate.")
    weight_decay: float = option(1e-8, min=0, help="Adam L2 weight decay.")
    decay_every: int | None = option(None, min=1, help="Steps between learning-rate decays (default: one epoch).")
    decay_gamma: float = option(0.5, min=0, help="Learning-rate factor at each decay.")
    window_past: int = option(4, min=-1, help="Graph context window: past utterances (-1: whole dialogue).")
    window_future: int = option(4, min=-1, help="Graph context window: future utterances (-1: whole dialogue).")
    max_utterance_tokens: int = option(64, min=1, help="Encoder tokens per utterance.")
    dropout: float = option(0.5, min=0, help="Dropout of the graph model.")
    encode_batch_size: int = option(128, min=1, help="Utterances per encoder batch (embeddings are cached).")
    # 1 by default: the model's ops are small, and on a shared 2-core machine a second OpenMP thread made training
    # 3-6x slower (measured).
    threads: int = 1

    #: What decides the prepared pairs (``pairs_<split>.npz``): a prepared folder is refused by other values (the
    #: encoder: utterance replacement draws its neighbours by the encoder's cosine).
    PREPARATION_FIELDS: ClassVar[tuple[str, ...]] = ("seed", "perturbations", "max_dialogues", "max_val_dialogues",
                                                     "max_test_dialogues", "strategies", "similar_top_k", "encoder",
                                                     "corpus")

    @property
    def strategy_list(self) -> tuple[str, ...]:
        return tuple(s.strip() for s in self.strategies.split(",") if s.strip())

    @property
    def corpus_list(self) -> tuple[str, ...]:
        return tuple(c.strip() for c in self.corpus.split(",") if c.strip())

    def check(self) -> None:
        super().check()
        from .data import check_strategies

        try:
            check_strategies(self.strategy_list)
        except ValueError as err:
            raise TrainingOptionsError(f"--strategies: {err}") from None
        names = self.corpus_list
        if not names or len(set(names)) != len(names) or any(c not in CORPORA for c in names):
            raise TrainingOptionsError(f"--corpus must name distinct corpora among {', '.join(CORPORA)}, got "
                                       f"{self.corpus!r}")
