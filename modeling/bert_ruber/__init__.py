"""BERT-RUBER and PONE as transformers custom code: `BertRuberConfig` / `BertRuberModel`, `PoneConfig` / `PoneModel`.

PONE trains BERT-RUBER's unreferenced network, so both metrics share these two files; each has its own model type
(``"dialeval-bert-ruber"``, ``"dialeval-pone"``) so that a checkpoint says which metric it is. Importing this package
registers the classes with `AutoConfig` / `AutoModel`; a checkpoint saved with `save_pretrained` also carries the two
files and an ``auto_map`` for ``trust_remote_code=True`` loading without this package.
"""

from transformers import AutoConfig, AutoModel

from .configuration_bert_ruber import BertRuberConfig, PoneConfig
from .modeling_bert_ruber import BertRuberModel, BertRuberOutput, BertRuberPreTrainedModel, PoneModel

AutoConfig.register(BertRuberConfig.model_type, BertRuberConfig, exist_ok=True)
AutoModel.register(BertRuberConfig, BertRuberModel, exist_ok=True)
AutoConfig.register(PoneConfig.model_type, PoneConfig, exist_ok=True)
AutoModel.register(PoneConfig, PoneModel, exist_ok=True)

__all__ = ["BertRuberConfig", "BertRuberModel", "BertRuberOutput", "BertRuberPreTrainedModel", "PoneConfig",
           "PoneModel"]
