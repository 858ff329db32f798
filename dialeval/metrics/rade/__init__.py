"""RADE (Shi et al., ACL 2023): a reference-assisted evaluator trained in two stages on scored references.

The model itself (``RadeConfig`` / ``RadeModel``) is transformers custom code in ``modeling/rade`` (installed as
:mod:`dialeval.modeling.rade`). This package holds what only RADE needs around it:

- :mod:`.losses` -- the stage-1 and stage-2 objectives (score MSE, generation NLL, the pairwise ranking loss), each
  switchable for the ablations.
"""
