"""The AMR-enhanced dialogue evaluator's small model (the paper's "SLM"), transformers custom code.

This file is flat on purpose (imports only torch / transformers / torch-geometric / safetensors / stdlib): it travels
next to a checkpoint on the Hub and is loaded with ``AutoModel.from_pretrained(path_or_repo, trust_remote_code=True)``.

Text branch: the sentence encoder reads ``[CLS] context [SEP] response [SEP]``. With ``config.pooling == "joint"``
the masked mean of its last hidden states over the whole input goes through ``Linear -> hidden_size``; with
``"pair"`` the context part (token type 0) and the response part (token type 1) are averaged apart, and
``Linear([c, r, c * r, |c - r|]) -> hidden_size`` (the comparison features of sentence-pair classifiers), so the
head sees how the reply relates to its context and not only a blend of both.

Graph branch: the context's graph and the response's graph (simplified AMR: concepts and relation labels, no
variables). A concept's input vector is the mean of the encoder's input embeddings of its word pieces, so any
concept has one and no concept vocabulary is stored; ``Linear -> hidden_size``. ``graph_layers`` layers of
torch-geometric's ``TransformerConv`` attend over each node's neighbours with the relation embedding as edge feature
(every edge read both ways, a backwards edge with its own embedding), each with a residual connection and layer norm.
This is the message-passing form of the structure-aware self-attention of Zhu et al. (2019) that the paper uses:
attention restricted to the graph's edges, with the relation entering keys and values. Each graph is mean-pooled
(a graph with no concept gives zeros); the two graph vectors are joined (``"joint"``: ``[context, response]``;
``"pair"``: ``[c, r, c * r, |c - r|]``) and projected to ``hidden_size``.

Fusion, as in the paper: ``g = sigmoid(Linear(text))``, ``cat(g * text, (1 - g) * graph) -> Linear -> 2 logits``;
without the gate ``cat(text, graph)``; without the graph, the text alone. The model also returns the projected text
and graph vectors, which the training recipe's contrastive loss aligns.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers import BertModel, PreTrainedModel
from transformers.utils import ModelOutput

from .configuration_amr_eval import AmrEvalConfig
from .modeling_shared import (
    ADAPTED_PROJECTIONS,
    LoRALinear,
    SmallCheckpointMixin,
    add_adapters,
    base_encoder_state_dict,
    init_adapter,
    is_adapter_weight,
    masked_mean,
    top_layer_prefixes,
)

_ENCODER_PREFIX = "encoder."


@dataclass
class AmrEvalOutput(ModelOutput):
    """``logits`` [B, 2] (class 1: an appropriate response); ``text_vector`` and ``graph_vector`` [B, hidden_size],
    the projected branch outputs (``graph_vector`` is None without the graph branch)."""

    logits: torch.Tensor | None = None
    text_vector: torch.Tensor | None = None
    graph_vector: torch.Tensor | None = None


def _compared(first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
    """``[a, b, a * b, |a - b|]`` along the last dimension."""
    return torch.cat([first, second, first * second, (first - second).abs()], dim=-1)


class GraphLayer(nn.Module):
    """``LayerNorm(h + Dropout(ELU(TransformerConv(h, edges, relation embeddings))))``."""

    def __init__(self, hidden: int, heads: int, relation_dim: int, dropout: float) -> None:
        super().__init__()
        from torch_geometric.nn import TransformerConv

        self.conv = TransformerConv(hidden, hidden // heads, heads=heads, edge_dim=relation_dim, dropout=dropout)
        self.norm = nn.LayerNorm(hidden)
        self.dropout = nn.Dropout(dropout)

    def forward(self, h: torch.Tensor, edge_index: torch.Tensor, edge_attr: torch.Tensor) -> torch.Tensor:
        return self.norm(h + self.dropout(nn.functional.elu(self.conv(h, edge_index, edge_attr))))


class AmrEvalPreTrainedModel(PreTrainedModel):
    config_class = AmrEvalConfig
    base_model_prefix = "amr_eval"
    main_input_name = "input_ids"
    _supports_sdpa = True

    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        init_adapter(module)


class AmrEvalModel(SmallCheckpointMixin, AmrEvalPreTrainedModel):
    """Sentence encoder + graph transformer over simplified AMR, gated, two-class head (see the module docstring).

    Inputs of :meth:`forward`:

    * ``input_ids`` / ``attention_mask`` / ``token_type_ids`` [B, L]: ``[CLS] context [SEP] response [SEP]``;
    * with the graph branch, the concepts of all 2B graphs of the batch (graph ``2i`` is item ``i``'s context,
      ``2i + 1`` its response): ``concept_input_ids`` / ``concept_attention_mask`` [N, T] (word pieces of each
      concept, no special tokens), ``concept_graph`` [N] (the graph of each concept), ``edge_index`` [2, E] (concept
      rows, source then target) and ``edge_type`` [E] (forward relation ids, `AmrEvalConfig.relation_id`).
    """

    def __init__(self, config: AmrEvalConfig) -> None:
        super().__init__(config)
        self.encoder = BertModel(config.get_encoder_config(), add_pooling_layer=False)
        if config.lora_rank > 0:
            add_adapters(self.encoder, config.trainable_encoder_layers, config.lora_rank, config.lora_alpha)
        width, hidden = config.encoder_config["hidden_size"], config.hidden_size
        paired = config.pooling == "pair"
        self.text_proj = nn.Linear(4 * width if paired else width, hidden)
        fused = hidden
        if config.use_graph:
            self.concept_proj = nn.Linear(width, hidden)
            self.relation_embeddings = nn.Embedding(2 * config.num_relation_ids, config.relation_dim)
            self.graph_layers = nn.ModuleList(
                GraphLayer(hidden, config.graph_heads, config.relation_dim, config.dropout)
                for _ in range(config.graph_layers))
            self.graph_proj = nn.Linear(4 * hidden if paired else 2 * hidden, hidden)
            fused = 2 * hidden
            if config.use_gate:
                self.gate = nn.Linear(hidden, 1)
        self.dropout = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(fused, 2)
        self.post_init()

    # -- branches ---------------------------------------------------------------------------------------------------

    def encode_text(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                    token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """[B, hidden_size]: the projected mean of the last hidden states, over the whole input or (``"pair"``
        pooling) over context and response apart, compared."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state
        mask = attention_mask.bool()
        if self.config.pooling == "joint":
            return self.text_proj(masked_mean(hidden, mask))
        if token_type_ids is None:
            raise ValueError("pair pooling needs token_type_ids (0: context, 1: response)")
        response = token_type_ids.bool()
        return self.text_proj(_compared(masked_mean(hidden, mask & ~response), masked_mean(hidden, mask & response)))

    def encode_graphs(self, batch_size: int, concept_input_ids: torch.Tensor, concept_attention_mask: torch.Tensor,
                      concept_graph: torch.Tensor, edge_index: torch.Tensor, edge_type: torch.Tensor) -> torch.Tensor:
        """[B, hidden_size]: both graphs of each item, encoded, mean-pooled, joined (or compared) and projected."""
        n_graphs = 2 * batch_size
        device = self.text_proj.weight.device
        if concept_input_ids.numel() == 0:
            pooled = torch.zeros(n_graphs, self.config.hidden_size, device=device)
        else:
            if concept_graph.numel() and (int(concept_graph.min()) < 0 or int(concept_graph.max()) >= n_graphs):
                raise ValueError(f"concept_graph must lie in [0, {n_graphs}) for a batch of {batch_size}")
            pieces = self.encoder.embeddings.word_embeddings(concept_input_ids)
            h = self.concept_proj(masked_mean(pieces, concept_attention_mask.bool()))
            both_ways = torch.cat([edge_index, edge_index.flip(0)], dim=1)
            relations = torch.cat([edge_type, edge_type + self.config.num_relation_ids])
            attr = self.relation_embeddings(relations)
            for layer in self.graph_layers:
                h = layer(h, both_ways, attr)
            sums = torch.zeros(n_graphs, h.shape[-1], device=h.device, dtype=h.dtype).index_add_(0, concept_graph, h)
            counts = torch.bincount(concept_graph, minlength=n_graphs).clamp(min=1).unsqueeze(-1).to(h.dtype)
            pooled = sums / counts
        if self.config.pooling == "joint":
            return self.graph_proj(pooled.view(batch_size, -1))
        return self.graph_proj(_compared(pooled[0::2], pooled[1::2]))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, concept_input_ids: torch.Tensor | None = None,
                concept_attention_mask: torch.Tensor | None = None, concept_graph: torch.Tensor | None = None,
                edge_index: torch.Tensor | None = None, edge_type: torch.Tensor | None = None,
                **kwargs) -> AmrEvalOutput:
        text = self.encode_text(input_ids, attention_mask, token_type_ids)
        graph = None
        if not self.config.use_graph:
            fused = text
        else:
            if concept_input_ids is None or concept_graph is None or edge_index is None or edge_type is None:
                raise ValueError("the graph branch needs concept_input_ids, concept_graph, edge_index and edge_type "
                                 "(a model without it: use_graph=False)")
            if concept_attention_mask is None:
                concept_attention_mask = (concept_input_ids != 0).long()
            graph = self.encode_graphs(input_ids.shape[0], concept_input_ids, concept_attention_mask, concept_graph,
                                       edge_index, edge_type)
            if self.config.use_gate:
                g = torch.sigmoid(self.gate(text))
                fused = torch.cat([g * text, (1 - g) * graph], dim=-1)
            else:
                fused = torch.cat([text, graph], dim=-1)
        return AmrEvalOutput(logits=self.classifier(self.dropout(fused)), text_vector=text, graph_vector=graph)

    # -- partial fine-tuning and small checkpoints ------------------------------------------------------------------

    def frozen_names(self) -> set[str]:
        """Parameters that training leaves as they are: the encoder's embeddings and the layers below the top
        ``config.trainable_encoder_layers``; with adapters every encoder weight but the adapters. (The concept
        vectors read the encoder's word embeddings, which stay frozen.)"""
        encoder_names = [name for name, _ in self.named_parameters() if name.startswith(_ENCODER_PREFIX)]
        if self.config.lora_rank > 0:
            return {name for name in encoder_names if not is_adapter_weight(name)}
        top = tuple(_ENCODER_PREFIX + p for p in top_layer_prefixes(self.encoder, self.config.trainable_encoder_layers))
        return {name for name in encoder_names if not name.startswith(top)}

    def base_weights(self) -> dict[str, torch.Tensor]:
        """The package ``config.base_encoder``'s encoder weights, named as this model's."""
        return base_encoder_state_dict(self.config.base_encoder)

    @classmethod
    def from_base_encoder(cls, config: AmrEvalConfig) -> AmrEvalModel:
        """A new model whose encoder is the package ``config.base_encoder``'s (adapters and heads new)."""
        model = cls(config)
        missing, unexpected = model.load_state_dict(base_encoder_state_dict(config.base_encoder), strict=False)
        wrong = [k for k in missing if k.startswith(_ENCODER_PREFIX)
                 and not is_adapter_weight(k)]
        if wrong or unexpected:
            raise ValueError(f"{config.base_encoder} does not fit the configured encoder: missing {wrong[:5]}, "
                             f"unexpected {list(unexpected)[:5]}")
        return model


AmrEvalModel.register_for_auto_class("AutoModel")

__all__ = ["ADAPTED_PROJECTIONS", "AmrEvalModel", "AmrEvalOutput", "AmrEvalPreTrainedModel", "GraphLayer",
           "LoRALinear", "add_adapters", "base_encoder_state_dict", "is_adapter_weight", "top_layer_prefixes"]
