"""The small AMR parser of the AMR evaluator (sentence -> linearised simplified AMR), transformers custom code.

This file is flat on purpose (no import of ``dialeval``): it travels next to a checkpoint on the Hub and is loaded with
``AutoModel.from_pretrained(path_or_repo, trust_remote_code=True)``.

An encoder-decoder warm-started from the bundled sentence encoder: the encoder reads the sentence; a decoder of the
same architecture (its first layers, plus cross-attention) writes the graph's tokens (`AmrParserConfig`). It trains
either weights (cross-attention new) or, with ``config.lora_rank``, low-rank adapters over the package's weights
(cross-attention a copy of self-attention), which makes a checkpoint of about 1 MB. Word
pieces reuse the encoder's frozen word embeddings on both sides of the decoder, so the output layer costs the pieces
the parser can write, not the encoder's whole vocabulary. Turning tokens back into a graph is the library's business
(``dialeval.metrics.amr_eval.parser``); the model only scores and writes token ids.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers import BertModel, PreTrainedModel
from transformers.utils import ModelOutput

from .configuration_amr_parser import AmrParserConfig
from .modeling_shared import (
    SmallCheckpointMixin,
    add_adapters,
    base_encoder_state_dict,
    init_adapter,
    is_adapter_weight,
    top_layer_prefixes,
)

PAD_ID, BOS_ID, EOS_ID = 0, 1, 2
_ENCODER_PREFIX = "encoder."
_DECODER_PREFIX = "decoder."


def warm_start_weights(config: AmrParserConfig) -> dict[str, torch.Tensor]:
    """What the package ``config.base_encoder`` gives a new parser, by parameter name: the encoder whole; the
    decoder's position and type embeddings and its layers from the encoder's first ``config.decoder_layers``; with
    adapters (``config.lora_rank > 0``) also each decoder layer's cross-attention, a copy of its self-attention."""
    base = base_encoder_state_dict(config.base_encoder)
    weights = dict(base)
    for key, tensor in base.items():
        name = key[len(_ENCODER_PREFIX):]
        if name.startswith("embeddings.") and "word_embeddings" not in name:
            weights[_DECODER_PREFIX + name] = tensor
        elif name.startswith("encoder.layer.") and int(name.split(".")[2]) < config.decoder_layers:
            weights[_DECODER_PREFIX + name] = tensor
            if config.lora_rank > 0 and ".attention." in name:
                weights[_DECODER_PREFIX + name.replace(".attention.", ".crossattention.")] = tensor
    return weights


@dataclass
class AmrParserOutput(ModelOutput):
    """``logits`` [B, T, output_size] of each next output token; ``loss``, the mean token cross-entropy, when
    ``labels`` were given."""

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None


class AmrParserPreTrainedModel(PreTrainedModel):
    config_class = AmrParserConfig
    base_model_prefix = "amr_parser"
    main_input_name = "input_ids"
    _supports_sdpa = True

    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        init_adapter(module)


class AmrParserModel(SmallCheckpointMixin, AmrParserPreTrainedModel):
    """Encoder -> memory; decoder over the output tokens so far -> the next token (see the module docstring).

    ``labels`` [B, T] are output ids ending with ``EOS_ID`` and padded with -100; the decoder reads them shifted right
    behind ``BOS_ID``.
    """

    def __init__(self, config: AmrParserConfig) -> None:
        super().__init__(config)
        self.encoder = BertModel(config.get_encoder_config(), add_pooling_layer=False)
        self.decoder = BertModel(config.get_decoder_config(), add_pooling_layer=False)
        if config.lora_rank > 0:
            add_adapters(self.encoder, config.trainable_encoder_layers, config.lora_rank, config.lora_alpha)
            add_adapters(self.decoder, -1, config.lora_rank, config.lora_alpha)
        hidden = config.encoder_config["hidden_size"]
        self.special_embeddings = nn.Embedding(len(config.special_tokens), hidden)
        self.head_transform = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(),
                                            nn.LayerNorm(hidden, eps=config.encoder_config.get("layer_norm_eps", 1e-12)))
        self.output_bias = nn.Parameter(torch.zeros(config.output_size))
        self._piece_index: torch.Tensor | None = None  # config.piece_ids as a tensor on the weights' device
        self.post_init()

    def output_embeddings(self) -> torch.Tensor:
        """[output_size, hidden]: the special tokens' own embeddings, then the encoder's rows of ``piece_ids``."""
        words = self.encoder.embeddings.word_embeddings.weight
        if self._piece_index is None or self._piece_index.device != words.device:
            self._piece_index = torch.tensor(self.config.piece_ids, dtype=torch.long, device=words.device)
        return torch.cat([self.special_embeddings.weight, words[self._piece_index]], dim=0)

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        return self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    def next_token_logits(self, memory: torch.Tensor, memory_mask: torch.Tensor, decoder_ids: torch.Tensor,
                          decoder_mask: torch.Tensor | None = None) -> torch.Tensor:
        """[B, T, output_size] logits after each of ``decoder_ids`` (output ids starting with ``BOS_ID``)."""
        table = self.output_embeddings()
        if decoder_mask is None:
            decoder_mask = torch.ones_like(decoder_ids)
        hidden = self.decoder(inputs_embeds=nn.functional.embedding(decoder_ids, table), attention_mask=decoder_mask,
                              encoder_hidden_states=memory, encoder_attention_mask=memory_mask).last_hidden_state
        return self.head_transform(hidden) @ table.T + self.output_bias

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                labels: torch.Tensor | None = None, **kwargs) -> AmrParserOutput:
        if labels is None:
            raise ValueError("AmrParserModel.forward needs labels (the output ids); use generate_ids to parse")
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        memory = self.encode(input_ids, attention_mask)
        targets = labels.masked_fill(labels < 0, PAD_ID)
        decoder_ids = torch.cat([torch.full_like(targets[:, :1], BOS_ID), targets[:, :-1]], dim=1)
        decoder_mask = torch.cat([torch.ones_like(labels[:, :1]), (labels[:, :-1] >= 0).long()], dim=1)
        logits = self.next_token_logits(memory, attention_mask, decoder_ids, decoder_mask)
        loss = nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                           ignore_index=-100)
        return AmrParserOutput(loss=loss, logits=logits)

    @torch.inference_mode()
    def generate_ids(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                     max_length: int | None = None) -> list[list[int]]:
        """Greedy decoding, one token per step with the decoder's key/value cache: per sentence, the output ids
        written before ``EOS_ID`` (at most ``max_length``, default ``config.max_target_length``)."""
        from transformers.cache_utils import DynamicCache, EncoderDecoderCache

        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        limit = max_length or self.config.max_target_length
        memory = self.encode(input_ids, attention_mask)
        table = self.output_embeddings()
        batch = input_ids.shape[0]
        step = torch.full((batch,), BOS_ID, dtype=torch.long, device=input_ids.device)
        done = torch.zeros(batch, dtype=torch.bool, device=input_ids.device)
        cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        written = []
        for t in range(limit):
            out = self.decoder(inputs_embeds=nn.functional.embedding(step[:, None], table),
                               attention_mask=torch.ones_like(attention_mask[:, :1]).expand(batch, t + 1),
                               encoder_hidden_states=memory, encoder_attention_mask=attention_mask, cache=cache,
                               use_cache=True)
            logits = self.head_transform(out.last_hidden_state[:, -1]) @ table.T + self.output_bias
            step = logits.argmax(-1).masked_fill(done, PAD_ID)
            written.append(step)
            done |= step == EOS_ID
            if bool(done.all()):
                break
        rows = torch.stack(written, dim=1).tolist()
        return [row[:row.index(EOS_ID)] if EOS_ID in row else row for row in rows]

    # -- training and warm start ------------------------------------------------------------------------------------

    def frozen_names(self) -> set[str]:
        """Parameters that training leaves as they are: the encoder's embeddings (also the pieces' output
        embeddings) and its layers below the top ``config.trainable_encoder_layers`` (none with -1), and the
        decoder's unused one-row word-embedding table; with adapters, every encoder and decoder weight but the
        adapters."""
        names = {name for name, _ in self.named_parameters()}
        frozen = {_DECODER_PREFIX + "embeddings.word_embeddings.weight"}
        if self.config.lora_rank > 0:
            return frozen | {n for n in names if n.startswith((_ENCODER_PREFIX, _DECODER_PREFIX))
                             and not is_adapter_weight(n)}
        encoder = {n for n in names if n.startswith(_ENCODER_PREFIX)}
        if self.config.trainable_encoder_layers < 0:
            return frozen | {n for n in encoder if n.startswith(_ENCODER_PREFIX + "embeddings.")}
        top = tuple(_ENCODER_PREFIX + p for p in top_layer_prefixes(self.encoder, self.config.trainable_encoder_layers))
        return frozen | {n for n in encoder if not n.startswith(top)}

    def base_weights(self) -> dict[str, torch.Tensor]:
        """The package's weights for this parser: its warm start (:func:`warm_start_weights`)."""
        return warm_start_weights(self.config)

    def weights_from_base_encoder(self) -> set[str]:
        """What a ``trainable_only`` checkpoint leaves out: the frozen weights, which all come from the package
        (:meth:`base_weights`) but the decoder's one-row table, which is saved (384 numbers)."""
        return self.frozen_names() - {_DECODER_PREFIX + "embeddings.word_embeddings.weight"}

    @classmethod
    def from_base_encoder(cls, config: AmrParserConfig, special_pieces: list[list[int]] | None = None
                          ) -> AmrParserModel:
        """A new parser warm-started from the package ``config.base_encoder`` (:func:`warm_start_weights`; without
        adapters the cross-attention is new). ``special_pieces[k]``, when given and non-empty, are encoder-vocabulary
        ids whose mean word embedding starts special token ``k`` (``:arg0`` from the pieces of ``arg0``)."""
        model = cls(config)
        missing, unexpected = model.load_state_dict(warm_start_weights(config), strict=False)
        new = ("special_embeddings.", "head_transform.", "output_bias", _DECODER_PREFIX + "embeddings.word_embeddings.")
        wrong = [k for k in missing if not k.startswith(new) and not is_adapter_weight(k)
                 and (config.lora_rank > 0 or ".crossattention." not in k)]
        if wrong or unexpected:
            raise ValueError(f"{config.base_encoder} does not fit the configured parser: missing {wrong[:5]}, "
                             f"unexpected {list(unexpected)[:5]}")
        if special_pieces is not None:
            words = model.encoder.embeddings.word_embeddings.weight
            with torch.no_grad():
                for k, ids in enumerate(special_pieces):
                    if ids:
                        model.special_embeddings.weight[k] = words[torch.tensor(ids)].mean(0)
        return model


AmrParserModel.register_for_auto_class("AutoModel")

__all__ = ["BOS_ID", "EOS_ID", "PAD_ID", "AmrParserModel", "AmrParserOutput", "AmrParserPreTrainedModel",
           "warm_start_weights"]
