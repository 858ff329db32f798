"""BERT-RUBER's unreferenced scorer (Ghazarian et al., 2019), also the network PONE trains (Lan et al., 2020).

transformers custom code, flat on purpose (imports only torch / transformers / stdlib, and its folder's copy of the
shared model code, ``modeling_shared.py``) so that it can be shipped next to a checkpoint and loaded with
``AutoModel.from_pretrained(path_or_repo, trust_remote_code=True)`` without ``dialeval`` installed.

The model is only the head: it reads sentence embeddings of the context and of the response (a frozen encoder runs
outside the model, so embeddings are computed once and cached) and returns a score in (0, 1)::

    q = c^T M r                       bilinear ("quadratic") term, M is [D, D], initialised U[0, 1)
    h = [c; q; r]                     [2D + 1]
    h = dropout(act(Linear(h)))       for each hidden size (256, 512, 128)
    score = sigmoid(Linear(h -> 1))

Differences from the released code: none in the network. ``BertRuberModel`` defaults to tanh without dropout
(RUBER's MLP), ``PoneModel`` to ReLU with dropout 0.5 (PONE's ``BERT_RUBER_unrefer``); both are configuration. The
embeddings are mean-pooled all-MiniLM-L6-v2 states (384-d) instead of bert-as-service BERT-base (768-d).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel
from transformers.utils import ModelOutput

from .configuration_bert_ruber import BertRuberConfig, PoneConfig
from .modeling_shared import float_weight, store_int8_rows


@dataclass
class BertRuberOutput(ModelOutput):
    """Output of [`BertRuberModel`] / [`PoneModel`].

    Args:
        loss (`torch.FloatTensor` of shape `()`, *optional*): binary cross-entropy with `labels` (hard or soft), when
            given.
        score (`torch.FloatTensor` of shape `(batch_size,)`): unreferenced score in (0, 1) (sigmoid of `logits`).
        logits (`torch.FloatTensor` of shape `(batch_size,)`): the score before the sigmoid.
    """

    loss: torch.FloatTensor | None = None
    score: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None


class BertRuberPreTrainedModel(PreTrainedModel):
    config_class = BertRuberConfig
    base_model_prefix = "bert_ruber"
    main_input_name = "context_embeds"

    def _init_weights(self, module: nn.Module) -> None:
        # torch's default Linear init; M ~ U[0, 1) as the original (torch.rand). transformers' `init` functions skip
        # parameters that were loaded from a checkpoint.
        import math

        from transformers import initialization as init

        if isinstance(module, nn.Linear):
            init.kaiming_uniform_(module.weight, a=math.sqrt(5))
            if module.bias is not None:
                bound = 1.0 / math.sqrt(module.in_features) if module.in_features > 0 else 0.0
                init.uniform_(module.bias, -bound, bound)
        elif isinstance(module, BertRuberModel) and module.bilinear.is_floating_point():  # int8 rows: loading fills
            init.uniform_(module.bilinear, 0.0, 1.0)


class BertRuberModel(BertRuberPreTrainedModel):
    """Unreferenced score of a response given its context, from their sentence embeddings (see the module docstring)."""

    #: Weights besides the linear layers' that a quantised checkpoint may store as int8 rows (``int8_weights``): the
    #: bilinear matrix, read through ``float_weight`` (a row per context dimension).
    int8_row_parameters = ("bilinear",)

    def __init__(self, config: BertRuberConfig) -> None:
        super().__init__(config)
        d = config.embedding_dim
        self.bilinear = nn.Parameter(torch.empty(d, d))
        dims = [2 * d + 1, *config.hidden_dims]
        self.hidden = nn.ModuleList(nn.Linear(dims[k], dims[k + 1]) for k in range(len(dims) - 1))
        self.output = nn.Linear(dims[-1], 1)
        self.dropout = nn.Dropout(config.dropout)
        self._act = torch.tanh if config.activation == "tanh" else F.relu
        store_int8_rows(self, config.int8_weights)  # the weights a quantised checkpoint stores as int8 rows
        self.post_init()

    def features(self, context_embeds: torch.Tensor, response_embeds: torch.Tensor) -> torch.Tensor:
        """``[c; c^T M r; r]``: [B, 2D + 1]."""
        if context_embeds.dim() != 2 or context_embeds.shape != response_embeds.shape:
            raise ValueError(f"context_embeds and response_embeds must both be [batch, {self.config.embedding_dim}], "
                             f"got {tuple(context_embeds.shape)} and {tuple(response_embeds.shape)}")
        if context_embeds.shape[-1] != self.config.embedding_dim:
            raise ValueError(f"embeddings have size {context_embeds.shape[-1]}, the model expects "
                             f"{self.config.embedding_dim} (config.embedding_dim)")
        bilinear = float_weight(self, "bilinear", context_embeds.dtype)
        quadratic = ((context_embeds @ bilinear) * response_embeds).sum(dim=-1, keepdim=True)
        return torch.cat([context_embeds, quadratic, response_embeds], dim=-1)

    def forward(self, context_embeds: torch.Tensor, response_embeds: torch.Tensor, labels: torch.Tensor | None = None,
                return_dict: bool | None = None, **kwargs) -> BertRuberOutput | tuple:
        r"""
        Args:
            context_embeds, response_embeds: float [B, D] sentence embeddings (same dtype as the model).
            labels: float [B] in [0, 1] (1 = appropriate response); hard or soft labels.

        Returns:
            [`BertRuberOutput`] with ``score`` [B] in (0, 1), ``logits`` [B] and ``loss`` when ``labels`` are given.
        """
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        h = self.features(context_embeds, response_embeds)
        for layer in self.hidden:
            h = self.dropout(self._act(layer(h)))
        logits = self.output(h).squeeze(-1)
        score = torch.sigmoid(logits)
        loss = None
        if labels is not None:
            loss = F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
        if not return_dict:
            return tuple(v for v in (loss, score, logits) if v is not None)
        return BertRuberOutput(loss=loss, score=score, logits=logits)


class PoneModel(BertRuberModel):
    """PONE's scorer: the BERT-RUBER unreferenced network (ReLU, dropout 0.5 by default), trained by PONE's recipe."""

    config_class = PoneConfig
    base_model_prefix = "pone"


BertRuberModel.register_for_auto_class("AutoModel")
PoneModel.register_for_auto_class("AutoModel")

__all__ = ["BertRuberModel", "BertRuberOutput", "BertRuberPreTrainedModel", "PoneModel"]
