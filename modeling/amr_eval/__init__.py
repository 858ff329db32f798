"""The AMR-enhanced evaluator's models as transformers custom code: the small model (`AmrEvalConfig` /
`AmrEvalModel`) and the small AMR parser that can produce its graphs (`AmrParserConfig` / `AmrParserModel`).

Importing this package registers the classes with `AutoConfig` / `AutoModel`; a checkpoint saved with
`save_pretrained` also carries the two files and an ``auto_map`` for ``trust_remote_code=True`` loading without this
package.
"""

from transformers import AutoConfig, AutoModel

from .configuration_amr_eval import MINILM_L6_ENCODER_CONFIG, AmrEvalConfig
from .configuration_amr_parser import CONTROL_TOKENS, AmrParserConfig
from .modeling_amr_eval import (
    AmrEvalModel,
    AmrEvalOutput,
    AmrEvalPreTrainedModel,
    base_encoder_state_dict,
    is_adapter_weight,
)
from .modeling_amr_parser import BOS_ID, EOS_ID, PAD_ID, AmrParserModel, AmrParserOutput, warm_start_weights

AutoConfig.register(AmrEvalConfig.model_type, AmrEvalConfig, exist_ok=True)
AutoModel.register(AmrEvalConfig, AmrEvalModel, exist_ok=True)
AutoConfig.register(AmrParserConfig.model_type, AmrParserConfig, exist_ok=True)
AutoModel.register(AmrParserConfig, AmrParserModel, exist_ok=True)

__all__ = ["BOS_ID", "CONTROL_TOKENS", "EOS_ID", "MINILM_L6_ENCODER_CONFIG", "PAD_ID", "AmrEvalConfig", "AmrEvalModel",
           "AmrEvalOutput", "AmrEvalPreTrainedModel", "AmrParserConfig", "AmrParserModel", "AmrParserOutput",
           "base_encoder_state_dict", "is_adapter_weight", "warm_start_weights"]
