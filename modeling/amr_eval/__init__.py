"""The AMR-enhanced evaluator's small model as transformers custom code: `AmrEvalConfig` / `AmrEvalModel`.

Importing this package registers the classes with `AutoConfig` / `AutoModel`; a checkpoint saved with
`save_pretrained` also carries the two files and an ``auto_map`` for ``trust_remote_code=True`` loading without this
package.
"""

from transformers import AutoConfig, AutoModel

from .configuration_amr_eval import MINILM_L6_ENCODER_CONFIG, AmrEvalConfig
from .modeling_amr_eval import AmrEvalModel, AmrEvalOutput, AmrEvalPreTrainedModel, base_encoder_state_dict

AutoConfig.register(AmrEvalConfig.model_type, AmrEvalConfig, exist_ok=True)
AutoModel.register(AmrEvalConfig, AmrEvalModel, exist_ok=True)

__all__ = ["MINILM_L6_ENCODER_CONFIG", "AmrEvalConfig", "AmrEvalModel", "AmrEvalOutput", "AmrEvalPreTrainedModel",
           "base_encoder_state_dict"]
