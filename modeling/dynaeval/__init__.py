"""DynaEval as transformers custom code: `DynaEvalConfig` / `DynaEvalModel`.

Importing this package registers the classes with `AutoConfig` / `AutoModel` (model type ``"dialeval-dynaeval"``), so
``AutoModel.from_pretrained(path)`` works in-process; a checkpoint saved with `save_pretrained` also carries the two
files and an ``auto_map`` for ``trust_remote_code=True`` loading without this package.
"""

from transformers import AutoConfig, AutoModel

from .configuration_dynaeval import DynaEvalConfig
from .modeling_dynaeval import (
    DynaEvalModel,
    DynaEvalOutput,
    DynaEvalPreTrainedModel,
    WeightedRGCNConv,
    WindowEdgeAttention,
    alternating_speakers,
    build_dialogue_graph,
    relation_types,
    window_edges,
)

AutoConfig.register(DynaEvalConfig.model_type, DynaEvalConfig, exist_ok=True)
AutoModel.register(DynaEvalConfig, DynaEvalModel, exist_ok=True)

__all__ = [
    "DynaEvalConfig",
    "DynaEvalModel",
    "DynaEvalOutput",
    "DynaEvalPreTrainedModel",
    "WeightedRGCNConv",
    "WindowEdgeAttention",
    "alternating_speakers",
    "build_dialogue_graph",
    "relation_types",
    "window_edges",
]
