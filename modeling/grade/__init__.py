"""GRADE as transformers custom code: `GradeConfig` / `GradeModel` (model type ``"dialeval-grade"``).

Importing this package registers both with `AutoConfig` / `AutoModel` for in-process loading; `save_pretrained`
writes the two flat files and an ``auto_map`` beside the weights for ``trust_remote_code=True`` loading.
"""

from transformers import AutoConfig, AutoModel

from . import modeling_grade
from .configuration_grade import ENCODER_TYPES, MINILM_L6_ENCODER_CONFIG, GradeConfig
from .modeling_grade import *  # noqa: F403  (the public names listed in modeling_grade.__all__)

AutoConfig.register(GradeConfig.model_type, GradeConfig, exist_ok=True)
AutoModel.register(GradeConfig, modeling_grade.GradeModel, exist_ok=True)

__all__ = ["ENCODER_TYPES", "GradeConfig", "MINILM_L6_ENCODER_CONFIG", *modeling_grade.__all__]
