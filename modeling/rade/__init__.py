"""RADE as transformers custom code: `RadeConfig` / `RadeModel`.

Importing this package registers the classes with `AutoConfig` / `AutoModel`; a checkpoint saved with
`save_pretrained` also carries the two files and an ``auto_map`` for ``trust_remote_code=True`` loading without this
package.
"""

from transformers import AutoConfig, AutoModel

from .configuration_rade import BACKBONES, MINILM_L6_ENCODER_CONFIG, POOLINGS, RadeConfig
from .modeling_rade import (
    RadeModel,
    RadeOutput,
    RadePreTrainedModel,
    bert_weights,
    is_adapter_weight,
    warm_start_state_dict,
)

AutoConfig.register(RadeConfig.model_type, RadeConfig, exist_ok=True)
AutoModel.register(RadeConfig, RadeModel, exist_ok=True)

__all__ = ["BACKBONES", "MINILM_L6_ENCODER_CONFIG", "POOLINGS", "RadeConfig", "RadeModel", "RadeOutput",
           "RadePreTrainedModel", "bert_weights", "is_adapter_weight", "warm_start_state_dict"]
