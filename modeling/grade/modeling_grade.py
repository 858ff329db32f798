"""GRADE (Huang et al., EMNLP 2020): Graph-enhanced Representations for Automatic Dialogue Evaluation.

transformers custom code, flat on purpose (imports only torch / transformers / torch_geometric / safetensors / stdlib)
so that it can be shipped next to a checkpoint and loaded with
``AutoModel.from_pretrained(path_or_repo, trust_remote_code=True)`` without ``dialeval`` installed.

Deliberate differences from the released implementation (li3cmz/GRADE, model_grade_K2.py / GAT.py):

* Text branch: the original sliced the ``[CLS]`` id off ``input_ids`` before BERT (so its pooled output was taken on
  the first real token). Here the encoder sees ``[CLS] context [SEP] response [SEP]`` (another encoder: its
  tokenizer's own pair template, e.g. MPNet's ``<s> context </s></s> response </s>``) and the representation is the
  last hidden state of the first token followed by a linear projection (no activation, as the original).
* The text encoder is any of ``ENCODER_TYPES`` (BERT, MPNet), built from its config by ``AutoModel.from_config``;
  the paper's is BERT-base.
* Node initialisation is per node: ``Linear(self) + Linear(mean 1-hop) + Linear(mean 2-hop)`` of *that* node. The
  original flattened the 18 x 300 neighbour matrices of the dialogue into one vector and broadcast one projected vector
  to all nodes (likewise its residual ``Linear(18*300 -> 300)``, which is a per-node ``Linear`` here).
* No random edge dropping: the original kept a random 80 % of the edges also at inference (unseeded), so its scores
  were stochastic. No dropout in the graph branch. Scores here are deterministic.
* Attention is sparse over the given edges plus self-loops (GRADE's ``A + I``); the attention logit of an edge is
  multiplied by its weight ``1/hop`` (self-loops: 1) before the softmax over the incoming edges of a node. The
  original multiplied the logits by the symmetrically normalised ``D^-1/2 (A+I) D^-1/2``; that normalisation is not
  applied.
* Graph readout: masked mean over the real nodes, then ``ELU(Linear)``. A dialogue without any keyword node gets a
  zero graph vector (the original divided by the keyword count).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import MessagePassing
from torch_geometric.utils import add_self_loops, softmax
from transformers import AutoModel, PreTrainedModel
from transformers.utils import ModelOutput

from .configuration_grade import GradeConfig
from .modeling_shared import (
    ADAPTED_PROJECTIONS,
    LoRALinear,
    SmallCheckpointMixin,
    add_adapters,
    base_encoder_state_dict,
    bert_weights,
    frozen_layer_count,
    frozen_layer_states,
    init_adapter,
    is_adapter_weight,
    masked_mean,
    store_int8_rows,
    top_layer_states,
)

_ENCODER_PREFIX = "encoder."
_XAVIER_GAIN = 0.1414  # gain of the xavier init of the original GAT layers


@dataclass
class GradeOutput(ModelOutput):
    """Output of [`GradeModel`].

    Args:
        score (`torch.FloatTensor` of shape `(batch_size,)`): quality score in (0, 1) (sigmoid of `logits`).
        logits (`torch.FloatTensor` of shape `(batch_size,)`): the score before the sigmoid.
    """

    score: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None


# ---------------------------------------------------------------------------------------------------------------------
# Graph branch
# ---------------------------------------------------------------------------------------------------------------------


class HopGATConv(MessagePassing):
    """Multi-head graph attention whose logits are scaled by the edge's hop weight (GRADE's GAT layer).

    For a target node ``i`` and an incoming edge ``j -> i`` with weight ``w_ij`` (``1/hop``; self-loops 1), per head::

        e_ij = LeakyReLU_0.2(a^T [W h_i || W h_j]) * w_ij        (the product only if use_hop_attention)
        alpha_ij = softmax_j(e_ij)                                 over the incoming edges of i, self-loop included
        h_i' = sum_j alpha_ij W h_j

    Heads are concatenated (``out_dim = heads * head_dim``); no activation, no dropout.
    """

    def __init__(self, in_dim: int, out_dim: int, heads: int, use_hop_attention: bool = True,
                 negative_slope: float = 0.2) -> None:
        super().__init__(aggr="add", node_dim=0)
        if out_dim % heads != 0:
            raise ValueError(f"out_dim ({out_dim}) must be divisible by heads ({heads})")
        self.in_dim = in_dim
        self.heads = heads
        self.head_dim = out_dim // heads
        self.use_hop_attention = use_hop_attention
        self.negative_slope = negative_slope
        # W of every head, stacked: rows [k*head_dim:(k+1)*head_dim] are head k.
        self.lin = nn.Linear(in_dim, heads * self.head_dim, bias=False)
        # a of every head: [:, k, :head_dim] multiplies W h_i (target), [:, k, head_dim:] multiplies W h_j (source).
        self.att = nn.Parameter(torch.empty(1, heads, 2 * self.head_dim))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # pyGAT: W [in, head_dim] and a [2*head_dim, 1] of each head, xavier_uniform with the original's gain.
        w_bound = _XAVIER_GAIN * math.sqrt(6.0 / (self.in_dim + self.head_dim))
        a_bound = _XAVIER_GAIN * math.sqrt(6.0 / (2 * self.head_dim + 1))
        nn.init.uniform_(self.lin.weight, -w_bound, w_bound)
        nn.init.uniform_(self.att, -a_bound, a_bound)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor) -> torch.Tensor:
        num_nodes = x.size(0)
        edge_index, edge_weight = add_self_loops(edge_index, edge_weight, fill_value=1.0, num_nodes=num_nodes)
        wx = self.lin(x).view(num_nodes, self.heads, self.head_dim)
        alpha_dst = (wx * self.att[..., : self.head_dim]).sum(dim=-1)  # [N, H]
        alpha_src = (wx * self.att[..., self.head_dim :]).sum(dim=-1)  # [N, H]
        out = self.propagate(edge_index, x=wx, alpha_src=alpha_src, alpha_dst=alpha_dst, edge_weight=edge_weight)
        return out.reshape(num_nodes, self.heads * self.head_dim)

    def message(self, x_j: torch.Tensor, alpha_src_j: torch.Tensor, alpha_dst_i: torch.Tensor,
                edge_weight: torch.Tensor, index: torch.Tensor, ptr: torch.Tensor | None,
                size_i: int | None) -> torch.Tensor:
        e = F.leaky_relu(alpha_dst_i + alpha_src_j, self.negative_slope)  # [E, H]
        if self.use_hop_attention:
            e = e * edge_weight.unsqueeze(-1)
        alpha = softmax(e, index, ptr, size_i)
        return x_j * alpha.unsqueeze(-1)

    def extra_repr(self) -> str:
        return (f"{self.in_dim}, {self.heads * self.head_dim}, heads={self.heads}, "
                f"use_hop_attention={self.use_hop_attention}")


def build_batch_graph(edges: list[tuple[torch.Tensor, torch.Tensor] | None], num_nodes: int
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """Collate per-dialogue graphs into the batched ``edge_index`` / ``edge_weight`` that [`GradeModel`] expects.

    Args:
        edges: one entry per dialogue: ``(edge_index [2, E_b] long, local node positions in [0, num_nodes),
            edge_weight [E_b] float)``, or ``None`` for a dialogue without edges.
        num_nodes: node slots per dialogue (``node_features.shape[1]``).

    Returns:
        ``edge_index`` [2, sum E_b] into the flattened ``B * num_nodes`` node positions, ``edge_weight`` [sum E_b].
    """
    all_index, all_weight = [], []
    for b, item in enumerate(edges):
        if item is None:
            continue
        index, weight = item
        index = torch.as_tensor(index, dtype=torch.long)
        if index.numel() == 0:
            continue
        if int(index.min()) < 0 or int(index.max()) >= num_nodes:
            raise ValueError(f"edge index of item {b} out of range [0, {num_nodes})")
        all_index.append(index + b * num_nodes)
        all_weight.append(torch.as_tensor(weight, dtype=torch.float))
    if not all_index:
        return torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, dtype=torch.float)
    return torch.cat(all_index, dim=1), torch.cat(all_weight)


# ---------------------------------------------------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------------------------------------------------


class GradePreTrainedModel(PreTrainedModel):
    config_class = GradeConfig
    base_model_prefix = "grade"
    main_input_name = "input_ids"
    _supports_sdpa = True

    def _init_weights(self, module: nn.Module) -> None:
        # The encoder (a PreTrainedModel) is initialised by its own _init_weights. The rest follows the original:
        # torch's default Linear init, xavier(gain 0.1414) for the GAT layers. transformers' `init` functions skip
        # parameters that were loaded from a checkpoint.
        from transformers import initialization as init

        init_adapter(module)
        if isinstance(module, HopGATConv):
            w_bound = _XAVIER_GAIN * math.sqrt(6.0 / (module.in_dim + module.head_dim))
            a_bound = _XAVIER_GAIN * math.sqrt(6.0 / (2 * module.head_dim + 1))
            if isinstance(module.lin, nn.Linear):  # not an int8 layer (config.int8_weights), which only loading fills
                init.uniform_(module.lin.weight, -w_bound, w_bound)
            init.uniform_(module.att, -a_bound, a_bound)
        elif isinstance(module, nn.Linear):
            init.kaiming_uniform_(module.weight, a=math.sqrt(5))
            if module.bias is not None:
                bound = 1.0 / math.sqrt(module.in_features) if module.in_features > 0 else 0.0
                init.uniform_(module.bias, -bound, bound)


class GradeModel(SmallCheckpointMixin, GradePreTrainedModel):
    """GRADE: BERT text branch + hop-attention GAT over ConceptNet keyword graphs, fused into a score in (0, 1).

    Text branch: the encoder of ``config.encoder_type`` (``BertModel``, ``MPNetModel``) over ``[CLS] context [SEP]
    response [SEP]`` (or the encoder tokenizer's pair template); the last hidden state of ``[CLS]`` (the
    original sliced ``[CLS]`` off and used the first real token: fixed), or the masked mean of the last hidden states
    (``config.pooling="mean"``), or ``[u, v, u*v, |u-v|]`` of the context and response token means (``"pair"``),
    goes through ``Linear(-> text_dim)``.

    Graph branch (``config.use_graph``): per node, ``h0 = Linear(self) + Linear(mean 1-hop) + Linear(mean 2-hop)``
    (k-hop terms only with ``use_khop``; the original broadcast one flattened vector to all nodes: fixed), then
    ``gat_layers`` x ``h = ELU(Linear(h) + HopGATConv(h))``, masked mean over the real nodes, ``ELU(Linear)``. A
    dialogue with no node gets a zero graph vector. No random edge dropping (the original dropped 20 % of the edges
    at inference, making scores random: fixed).

    Fusion: ``cat(text, graph)`` (text only without the graph branch) -> ELU(Linear) per ``fusion_dims`` ->
    ``Linear(-> 1)`` -> sigmoid.
    """

    def __init__(self, config: GradeConfig) -> None:
        super().__init__(config)
        self.encoder = AutoModel.from_config(config.get_encoder_config(), add_pooling_layer=False)
        # GRADE's segments (context 0, response 1) reach the encoder only when it has token types (BERT; not MPNet)
        self.encoder_token_types = getattr(self.encoder.config, "type_vocab_size", 0) > 0
        if config.lora_rank > 0:
            add_adapters(self.encoder, config.lora_layers, config.lora_rank, config.lora_alpha)
        enc_hidden = self.encoder.config.hidden_size
        pooled_size = 4 * enc_hidden if config.pooling == "pair" else enc_hidden
        self.text_proj = nn.Linear(pooled_size, config.text_dim)

        fusion_in = config.text_dim
        if config.use_graph:
            d, g = config.node_feature_dim, config.graph_hidden
            self.node_self = nn.Linear(d, g)
            if config.use_khop:
                self.node_hop1 = nn.Linear(d, g)
                self.node_hop2 = nn.Linear(d, g)
            self.gat_layers = nn.ModuleList(
                HopGATConv(g, g, config.gat_heads, use_hop_attention=config.use_hop_attention)
                for _ in range(config.gat_layers)
            )
            self.residual_layers = nn.ModuleList(nn.Linear(g, g) for _ in range(config.gat_layers))
            self.readout = nn.Linear(g, config.readout_dim)
            fusion_in += config.readout_dim

        dims = [fusion_in, *config.fusion_dims]
        self.fusion = nn.ModuleList(nn.Linear(dims[k], dims[k + 1]) for k in range(len(dims) - 1))
        self.scorer = nn.Linear(dims[-1], 1)
        store_int8_rows(self, config.int8_weights)
        self.post_init()

    # -- forward ------------------------------------------------------------------------------------------------------

    def frozen_layers(self) -> int:
        """Encoder layers below the fine-tuned top ones and below those with adapters (``lora_layers``; none when
        adapters sit in every layer), which training leaves as they are: the ones :meth:`frozen_states` runs, after
        the frozen embeddings."""
        cfg = self.config
        if cfg.trainable_encoder_layers < 0:
            raise ValueError("trainable_encoder_layers=-1 trains every encoder weight: no state is frozen")
        trained = cfg.trainable_encoder_layers
        if cfg.lora_rank > 0:
            trained = -1 if cfg.lora_layers < 0 else max(trained, cfg.lora_layers)
        return frozen_layer_count(self.encoder, trained)

    def frozen_states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                      token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """The encoder's hidden states [B, L, H] after its embeddings and :meth:`frozen_layers` lower layers,
        computed without dropout: training may compute them once per text and pass them back as ``frozen_states``
        (:meth:`forward`); the fine-tuned top layers then run from them."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        return frozen_layer_states(self.encoder, self.frozen_layers(), input_ids, attention_mask,
                                   token_type_ids if self.encoder_token_types else None)

    def encode_text(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                    token_type_ids: torch.Tensor | None = None, frozen_states: torch.Tensor | None = None
                    ) -> torch.Tensor:
        """``Linear(pooled last hidden states)``: [B, text_dim]. ``config.pooling``: ``cls``, the ``[CLS]`` state;
        ``mean``, the masked mean over the tokens (special tokens included, as the sentence encoder's own pooling);
        ``pair``, ``[u, v, u*v, |u-v|]`` of the means over the context (token type 0, ``[CLS]`` and its ``[SEP]``
        included) and the response (token type 1) tokens. ``frozen_states``: the input's :meth:`frozen_states`, to
        run only the fine-tuned top layers."""
        if frozen_states is None:
            types = {"token_type_ids": token_type_ids} if self.encoder_token_types else {}
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **types).last_hidden_state
        else:
            mask = torch.ones_like(input_ids) if attention_mask is None else attention_mask
            hidden = top_layer_states(self.encoder, self.frozen_layers(), frozen_states, mask)
        pooling = self.config.pooling
        if pooling == "cls":
            return self.text_proj(hidden[:, 0])
        mask = torch.ones_like(input_ids) if attention_mask is None else attention_mask
        if pooling == "mean":
            return self.text_proj(masked_mean(hidden, mask))
        if token_type_ids is None:
            raise ValueError("pooling='pair' needs token_type_ids (0: context, 1: response)")
        u = masked_mean(hidden, mask * (token_type_ids == 0))
        v = masked_mean(hidden, mask * (token_type_ids == 1))
        return self.text_proj(torch.cat([u, v, u * v, (u - v).abs()], dim=-1))

    def encode_graph(self, node_features: torch.Tensor, node_mask: torch.Tensor | None, edge_index: torch.Tensor,
                     edge_weight: torch.Tensor | None = None) -> torch.Tensor:
        """Graph vector [B, readout_dim] (zeros for dialogues without nodes).

        Args:
            node_features: [B, N, 3, D] (concept embedding, mean of the selected 1-hop neighbours, mean of the 2-hop
                neighbours) or [B, N, D] (concept embedding only; requires ``use_khop=False``).
            node_mask: bool [B, N], True for real nodes (None: all real).
            edge_index: long [2, E] into the flattened ``B * N`` node positions (see `build_batch_graph`).
            edge_weight: float [E], ``1/hop`` (None: all 1).
        """
        cfg = self.config
        if node_features.dim() == 3:
            if cfg.use_khop:
                raise ValueError("node_features must be [B, N, 3, D] when use_khop is True")
            node_features = node_features.unsqueeze(2)
        if node_features.dim() != 4:
            raise ValueError(f"node_features must be [B, N, 3, D], got shape {tuple(node_features.shape)}")
        batch, num_nodes = node_features.shape[:2]
        dtype = self.node_self.weight.dtype
        node_features = node_features.to(dtype)
        h = self.node_self(node_features[:, :, 0])
        if cfg.use_khop:
            h = h + self.node_hop1(node_features[:, :, 1]) + self.node_hop2(node_features[:, :, 2])
        h = h.reshape(batch * num_nodes, -1)

        if edge_index is None:
            edge_index = torch.zeros(2, 0, dtype=torch.long, device=h.device)
        edge_index = edge_index.to(device=h.device, dtype=torch.long)
        if edge_index.dim() != 2 or edge_index.size(0) != 2:
            raise ValueError(f"edge_index must be [2, E], got shape {tuple(edge_index.shape)}")
        if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= batch * num_nodes):
            raise ValueError(f"edge_index out of range [0, {batch * num_nodes}) (B * N flattened node positions)")
        if edge_weight is None:
            edge_weight = torch.ones(edge_index.size(1), device=h.device, dtype=dtype)
        edge_weight = edge_weight.to(device=h.device, dtype=dtype)

        for gat, res in zip(self.gat_layers, self.residual_layers):
            h = F.elu(res(h) + gat(h, edge_index, edge_weight))

        h = h.view(batch, num_nodes, -1)
        if node_mask is None:
            node_mask = torch.ones(batch, num_nodes, dtype=torch.bool, device=h.device)
        mask = node_mask.to(device=h.device, dtype=h.dtype).unsqueeze(-1)  # [B, N, 1]
        count = mask.sum(dim=1)  # [B, 1]
        pooled = (h * mask).sum(dim=1) / count.clamp(min=1.0)
        graph = F.elu(self.readout(pooled))
        return graph * (count > 0).to(graph.dtype)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        node_features: torch.Tensor | None = None,
        node_mask: torch.Tensor | None = None,
        edge_index: torch.Tensor | None = None,
        edge_weight: torch.Tensor | None = None,
        return_dict: bool | None = None,
        frozen_states: torch.Tensor | None = None,
        **kwargs,
    ) -> GradeOutput | tuple[torch.Tensor, torch.Tensor]:
        r"""
        Args:
            input_ids, attention_mask, token_type_ids: ``[CLS] context [SEP] response [SEP]``, [B, L].
            node_features: float [B, N, 3, D]; node_mask: bool [B, N]; edge_index: long [2, E] into the flattened
                B*N node positions; edge_weight: float [E] = 1/hop. Required when ``config.use_graph``.
            frozen_states: the text's :meth:`frozen_states` [B, L, H] (training reuses them): only the fine-tuned
                top encoder layers run.

        Returns:
            [`GradeOutput`] with ``score`` [B] in (0, 1) and ``logits`` [B].
        """
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        x = self.encode_text(input_ids, attention_mask, token_type_ids, frozen_states)
        if self.config.use_graph:
            if node_features is None:
                raise ValueError("GradeModel with use_graph=True needs node_features (and node_mask, edge_index)")
            x = torch.cat([x, self.encode_graph(node_features, node_mask, edge_index, edge_weight)], dim=-1)
        for layer in self.fusion:
            x = F.elu(layer(x))
        logits = self.scorer(x).squeeze(-1)
        score = torch.sigmoid(logits)
        if not return_dict:
            return score, logits
        return GradeOutput(score=score, logits=logits)

    # -- partial fine-tuning -----------------------------------------------------------------------------------------

    def _trainable_encoder_prefixes(self, trainable_layers: int | None) -> tuple[bool, tuple[str, ...]]:
        """(whole encoder trainable?, prefixes of the trainable encoder top layers)."""
        k = self.config.trainable_encoder_layers if trainable_layers is None else int(trainable_layers)
        if k < 0:
            return True, ()
        num_layers = len(self.encoder.encoder.layer)
        k = min(k, num_layers)
        return False, tuple(f"{_ENCODER_PREFIX}encoder.layer.{i}." for i in range(num_layers - k, num_layers))

    def _is_trainable_name(self, name: str, trainable_layers: int | None) -> bool:
        if not name.startswith(_ENCODER_PREFIX) or is_adapter_weight(name):
            return True
        whole, prefixes = self._trainable_encoder_prefixes(trainable_layers)
        return whole or name.startswith(prefixes)

    def freeze_encoder(self, trainable_layers: int | None = None) -> None:
        """Freeze the encoder embeddings and all but the top ``trainable_layers`` layers (default:
        ``config.trainable_encoder_layers``; ``-1``: nothing frozen). Everything else, adapters included, is made
        trainable."""
        for name, param in self.named_parameters():
            param.requires_grad_(self._is_trainable_name(name, trainable_layers))

    def trainable_state_dict(self, trainable_layers: int | None = None) -> dict[str, torch.Tensor]:
        """The weights that fine-tuning changes: the top encoder layers, the adapters and all non-encoder modules
        (same selection as `freeze_encoder` with the same argument). Save them with
        ``save_pretrained(path, trainable_only=True)``; loading fills the rest of the encoder from
        ``config.base_encoder``."""
        return {name: tensor.detach() for name, tensor in self.state_dict().items()
                if self._is_trainable_name(name, trainable_layers)}

    # -- small checkpoints (SmallCheckpointMixin) ---------------------------------------------------------------------

    def frozen_names(self) -> set[str]:
        """The encoder weights `freeze_encoder()` freezes (all of the state dict but `trainable_state_dict()`): what a
        ``save_pretrained(path, trainable_only=True)`` checkpoint leaves out and loading fills from the package
        ``config.base_encoder``."""
        return {name for name in self.state_dict() if not self._is_trainable_name(name, None)}

    def base_weights(self) -> dict[str, torch.Tensor]:
        """The package ``config.base_encoder``'s encoder weights, named as this model's."""
        return base_encoder_state_dict(self.config.base_encoder)


GradeModel.register_for_auto_class("AutoModel")

__all__ = [
    "ADAPTED_PROJECTIONS",
    "GradeModel",
    "GradeOutput",
    "GradePreTrainedModel",
    "HopGATConv",
    "LoRALinear",
    "add_adapters",
    "base_encoder_state_dict",
    "bert_weights",
    "build_batch_graph",
    "is_adapter_weight",
]
