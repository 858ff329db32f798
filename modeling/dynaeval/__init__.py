"""DynaEval as transformers custom code: `DynaEvalConfig` / `DynaEvalModel` (model type ``"dialeval-dynaeval"``).

Importing this package registers both with `AutoConfig` / `AutoModel` for in-process loading; `save_pretrained`
writes the two flat files and an ``auto_map`` beside the weights for ``trust_remote_code=True`` loading.
"""

from transformers import AutoConfig, AutoModel

from . import modeling_dynaeval
from .configuration_dynaeval import DynaEvalConfig
from .modeling_dynaeval import *  # noqa: F403  (the public names listed in modeling_dynaeval.__all__)

AutoConfig.register(DynaEvalConfig.model_type, DynaEvalConfig, exist_ok=True)
AutoModel.register(DynaEvalConfig, modeling_dynaeval.DynaEvalModel, exist_ok=True)

__all__ = ["DynaEvalConfig", *modeling_dynaeval.__all__]
