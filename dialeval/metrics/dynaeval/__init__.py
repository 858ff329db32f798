"""DynaEval (Zhang et al., ACL 2021): dialogue-level coherence from a speaker-aware graph over the utterances.

The model itself (``DynaEvalConfig`` / ``DynaEvalModel``) is transformers custom code in ``modeling/dynaeval``
(installed as :mod:`dialeval.modeling.dynaeval`). This package holds what only DynaEval needs around it:

- :mod:`.data` -- DailyDialog dialogues and their perturbations (utterance replacement, speaker-level shuffling) as
  seeded (original, perturbed) pairs;
- :mod:`.inputs` -- speaker ids from roles (or alternation), the response's speaker at turn level;
- :mod:`.train` -- ``dialeval train dynaeval`` (utterance embeddings kept in the backbone's
  :class:`~dialeval.backbone.store.EmbeddingStore`);
- :mod:`.scorer` -- :class:`~.scorer.DynaEvalScorer` (``dialeval.load_scorer("dynaeval")``);
- :mod:`.bench` -- ``dialeval bench dynaeval``: scoring speed on FED.
"""
