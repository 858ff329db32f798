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

from dataclasses import dataclass

import torch
from torch import nn
from transformers import AutoModelForSeq2SeqLM, BertLMHeadModel, BertModel, PreTrainedModel
from transformers.utils import ModelOutput

from .configuration_rade import RadeConfig
from .modeling_shared import (
    ADAPTED_PROJECTIONS,
    LoRALinear,
    SmallCheckpointMixin,
    add_adapters,
    bert_weights,
    frozen_layer_count,
    frozen_layer_states,
    init_adapter,
    is_adapter_weight,
    masked_mean,
    package_weights,
    store_int8_rows,
    top_layer_prefixes,
    top_layer_states,
)

_ENCODER_PREFIX = "encoder."
_DECODER_PREFIX = "decoder.bert."
_DECODER_MODULE = "decoder."


@dataclass
class RadeOutput(ModelOutput):
    """``scores``: [B, 2], the predicted score of the reference (column 0) and of the candidate (column 1), in
    ``[config.score_min, config.score_max]``. ``generation_loss``: the mean token NLL of the reference given the
    context, when ``reference_labels`` were given."""

    scores: torch.Tensor | None = None
    generation_loss: torch.Tensor | None = None


def warm_start_state_dict(base_encoder: str) -> dict[str, torch.Tensor]:
    """The weights that warm-start the `"bert"` backbone from the encoder package ``base_encoder``
    (``model.safetensors`` under its ``get_model_path()``): the encoder, and the decoder's embeddings, self-attention
    and feed-forward layers. The decoder's cross-attention, its LM head bias and the regressor stay new."""
    weights = package_weights(base_encoder)
    return {**bert_weights(weights, _ENCODER_PREFIX), **bert_weights(weights, _DECODER_PREFIX)}


class RadePreTrainedModel(PreTrainedModel):
    config_class = RadeConfig
    base_model_prefix = "rade"
    main_input_name = "input_ids"
    _supports_sdpa = True

    def _init_weights(self, module: nn.Module) -> None:
        # transformers' generic init, plus the adapters it does not know (a new adapter leaves its layer unchanged)
        super()._init_weights(module)
        init_adapter(module)


class RadeModel(SmallCheckpointMixin, RadePreTrainedModel):
    """RADE: encoder -> pooled states (`encode`) -> MLP -> two scores; decoder (auxiliary) -> the reference from the
    context.

    Inputs of :meth:`forward`: ``input_ids`` / ``attention_mask`` / ``token_type_ids`` of the evaluator's input
    (``context [SEP] reference [SEP] candidate``), and ``segment_ids`` for ``pooling="segments"``; for the generation
    loss, the context alone
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
            if config.lora_rank > 0:
                add_adapters(self.encoder, config.trainable_encoder_layers, config.lora_rank, config.lora_alpha)
            if config.use_decoder:
                self.decoder = BertLMHeadModel(config.get_decoder_config())
            else:  # a checkpoint saved for scoring: no auxiliary decoder, nothing tied
                self._tied_weights_keys = {}
            hidden = config.encoder_config["hidden_size"]
        else:
            self._tied_weights_keys = {}
            self.seq2seq = AutoModelForSeq2SeqLM.from_config(config.get_seq2seq_config())
            hidden = self.seq2seq.config.d_model if hasattr(self.seq2seq.config, "d_model") \
                else self.seq2seq.config.hidden_size
        layers: list[nn.Module] = []
        dims = [config.pooled_dim(hidden), *config.regressor_dims]
        for k in range(len(dims) - 1):
            layers += [nn.Dropout(config.regressor_dropout), nn.Linear(dims[k], dims[k + 1]), nn.Tanh()]
        layers += [nn.Dropout(config.regressor_dropout), nn.Linear(dims[-1], 2)]
        self.regressor = nn.Sequential(*layers)
        store_int8_rows(self, config.int8_weights)
        self.post_init()

    def _encoder(self) -> nn.Module:
        return self.encoder if self.config.backbone == "bert" else self.seq2seq.get_encoder()

    def frozen_layers(self) -> int:
        """Encoder layers below the trained top ones (`"bert"` backbone): the ones :meth:`frozen_states` runs."""
        if self.config.backbone != "bert":
            raise ValueError("frozen encoder states are for the 'bert' backbone")
        return frozen_layer_count(self.encoder, self.config.trainable_encoder_layers)

    def frozen_states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                      token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """The encoder's hidden states [B, L, H] after its embeddings and :meth:`frozen_layers` lower layers, which
        training leaves as they are, computed without dropout: training may compute them once per text and pass
        them back to :meth:`forward` (``frozen_states`` for the evaluator's input, ``context_frozen_states`` for the
        decoder's context); the trained top layers then run from them."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        return frozen_layer_states(self.encoder, self.frozen_layers(), input_ids, attention_mask, token_type_ids)

    def _last_hidden(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, frozen_states: torch.Tensor | None,
                     **kwargs) -> torch.Tensor:
        if frozen_states is None:
            return self._encoder()(input_ids=input_ids, attention_mask=attention_mask, **kwargs).last_hidden_state
        return top_layer_states(self.encoder, self.frozen_layers(), frozen_states, attention_mask)

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
               token_type_ids: torch.Tensor | None = None, segment_ids: torch.Tensor | None = None,
               frozen_states: torch.Tensor | None = None) -> torch.Tensor:
        """The regressor's input from the encoder's last hidden states: their masked mean ([B, hidden]) with
        ``pooling="mean"``; with ``"segments"`` the masked means ``c``, ``r``, ``x`` of the context, reference and
        candidate tokens (``segment_ids`` 0, 1, 2; -1 for none), each scaled to unit length, joined as
        ``[c, r, x, c*r, c*x, r*x]`` and the cosines ``cos(c, x)``, ``cos(r, x)``, ``cos(c, r)``;
        ``[c, x, c*x, cos(c, x)]`` without a reference. ``frozen_states``: the input's :meth:`frozen_states`, to run
        only the trained top layers."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        kwargs = {"token_type_ids": token_type_ids} if self.config.backbone == "bert" else {}
        hidden = self._last_hidden(input_ids, attention_mask, frozen_states, **kwargs)
        if self.config.pooling == "mean":
            return masked_mean(hidden, attention_mask.bool())
        if segment_ids is None:
            raise ValueError("pooling='segments' needs segment_ids (0 context, 1 reference, 2 candidate)")
        valid = attention_mask.bool()
        # unit vectors, as the sentence encoder's own embeddings: every feature then has a comparable scale
        c, r, x = (nn.functional.normalize(masked_mean(hidden, valid & (segment_ids == k)), dim=-1, eps=1e-6)
                   for k in range(3))

        def cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return (a * b).sum(-1, keepdim=True)

        if not self.config.use_reference:
            return torch.cat([c, x, c * x, cos(c, x)], dim=-1)
        return torch.cat([c, r, x, c * r, c * x, r * x, cos(c, x), cos(r, x), cos(c, r)], dim=-1)

    def score(self, pooled: torch.Tensor) -> torch.Tensor:
        """Pooled states -> [B, 2] scores in ``[score_min, score_max]``."""
        low, high = self.config.score_min, self.config.score_max
        return low + (high - low) * torch.sigmoid(self.regressor(pooled))

    def generation_loss(self, context_input_ids: torch.Tensor, context_attention_mask: torch.Tensor | None,
                        reference_labels: torch.Tensor, context_frozen_states: torch.Tensor | None = None
                        ) -> torch.Tensor:
        """Mean token NLL of the reference given the context (``context_frozen_states``: the context's
        :meth:`frozen_states`, to run only the encoder's trained top layers)."""
        if context_attention_mask is None:
            context_attention_mask = torch.ones_like(context_input_ids)
        if self.config.backbone == "seq2seq":
            return self.seq2seq(input_ids=context_input_ids, attention_mask=context_attention_mask,
                                labels=reference_labels).loss
        if not self.config.use_decoder:
            raise ValueError("this RADE checkpoint was saved for scoring, without its decoder: no generation loss "
                             "(train from a run's best/ checkpoint, which keeps it)")
        memory = self._last_hidden(context_input_ids, context_attention_mask, context_frozen_states)
        decoder_ids = reference_labels.masked_fill(reference_labels < 0, self.config.encoder_config["pad_token_id"])
        hidden = self.decoder.bert(input_ids=decoder_ids, attention_mask=(reference_labels >= 0).long(),
                                   encoder_hidden_states=memory, encoder_attention_mask=context_attention_mask,
                                   use_cache=False).last_hidden_state
        # position t predicts token t + 1: the vocabulary projection (30k words) only where that token is real,
        # not on the padding nor after each reference's last token (the loss BertLMHeadModel computes from all)
        targets = reference_labels[:, 1:]
        kept = targets >= 0
        logits = self.decoder.cls(hidden[:, :-1][kept])
        return nn.functional.cross_entropy(logits.float(), targets[kept])

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, segment_ids: torch.Tensor | None = None,
                context_input_ids: torch.Tensor | None = None,
                context_attention_mask: torch.Tensor | None = None, reference_labels: torch.Tensor | None = None,
                frozen_states: torch.Tensor | None = None, context_frozen_states: torch.Tensor | None = None,
                **kwargs) -> RadeOutput:
        scores = self.score(self.encode(input_ids, attention_mask, token_type_ids, segment_ids, frozen_states))
        loss = None
        if reference_labels is not None:
            if context_input_ids is None:
                raise ValueError("reference_labels need context_input_ids (the decoder generates from the context)")
            loss = self.generation_loss(context_input_ids, context_attention_mask, reference_labels,
                                        context_frozen_states)
        return RadeOutput(scores=scores, generation_loss=loss)

    # -- partial fine-tuning and small checkpoints ---------------------------------------------------------------

    def frozen_names(self) -> set[str]:
        """Encoder parameters that training leaves as they are: the embeddings and every layer below the top
        ``config.trainable_encoder_layers`` (none when that is -1, or for a `"seq2seq"` backbone); with adapters
        (``config.lora_rank > 0``) every encoder parameter but the adapters. `freeze_for_training` freezes them;
        the top encoder layers, the decoder and the regressor train."""
        if self.config.backbone != "bert":
            return set()
        encoder_names = [name for name, _ in self.named_parameters() if name.startswith(_ENCODER_PREFIX)]
        if self.config.lora_rank > 0:
            return {name for name in encoder_names if not is_adapter_weight(name)}
        if self.config.trainable_encoder_layers < 0:
            return set()
        top = tuple(_ENCODER_PREFIX + p for p in top_layer_prefixes(self.encoder, self.config.trainable_encoder_layers))
        return {name for name in encoder_names if not name.startswith(top)}

    def base_weights(self) -> dict[str, torch.Tensor]:
        """The package ``config.base_encoder``'s weights, named as this model's (:func:`warm_start_state_dict`)."""
        return warm_start_state_dict(self.config.base_encoder)

    def save_pretrained(self, save_directory, *args, drop_decoder: bool = False, **kwargs):
        """`PreTrainedModel.save_pretrained`, plus three ways to save less:

        * ``trainable_only``: leave out :meth:`frozen_names` (loading fills them from
          ``config.base_encoder``);
        * ``drop_decoder``: leave out the auxiliary decoder (a checkpoint for scoring; it cannot train further);
        * ``half``: store the weights in float16 (the config keeps float32, so loading computes in float32 with the
          stored values).
        """
        if not drop_decoder:
            return super().save_pretrained(save_directory, *args, **kwargs)
        if self.config.backbone != "bert":
            raise ValueError("drop_decoder is for the 'bert' backbone (a seq2seq model's decoder is part of it)")
        if kwargs.get("state_dict") is not None:
            raise ValueError("pass trainable_only / drop_decoder / half or state_dict, not both")
        weights = self.checkpoint_state_dict(kwargs.pop("trainable_only", False), kwargs.pop("half", False))
        kwargs["state_dict"] = {k: v for k, v in weights.items() if not k.startswith(_DECODER_MODULE)}
        previous = self.config.use_decoder
        self.config.use_decoder = False
        try:
            return super().save_pretrained(save_directory, *args, **kwargs)
        finally:
            self.config.use_decoder = previous

    @classmethod
    def from_base_encoder(cls, config: RadeConfig) -> RadeModel:
        """A new `"bert"`-backbone model warm-started from ``config.base_encoder`` (see `warm_start_state_dict`);
        an error if the package's weights leave any encoder or decoder self-attention parameter new."""
        if config.backbone != "bert":
            raise ValueError("warm-starting from the encoder package is for the 'bert' backbone")
        model = cls(config)
        weights = {k: v for k, v in warm_start_state_dict(config.base_encoder).items()
                   if config.use_decoder or not k.startswith(_DECODER_MODULE)}
        missing, unexpected = model.load_state_dict(weights, strict=False)
        expected_new = ("decoder.bert.encoder.layer.", "decoder.cls.", "regressor.")
        wrong = [k for k in missing if not is_adapter_weight(k) and (
                 not k.startswith(expected_new) or
                 (k.startswith("decoder.bert.encoder.layer.") and ".crossattention." not in k))]
        if wrong or unexpected:
            raise ValueError(f"{config.base_encoder} does not fit the configured encoder: missing {wrong[:5]}, "
                             f"unexpected {list(unexpected)[:5]}")
        if config.use_decoder:
            model.tie_weights()
        return model


RadeModel.register_for_auto_class("AutoModel")

__all__ = ["ADAPTED_PROJECTIONS", "LoRALinear", "RadeModel", "RadeOutput", "RadePreTrainedModel", "add_adapters",
           "bert_weights", "is_adapter_weight", "top_layer_prefixes", "warm_start_state_dict"]
