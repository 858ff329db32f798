"""BERT-RUBER (Ghazarian et al., 2019): RUBER's unreferenced / referenced / hybrid scores on frozen BERT-style
sentence embeddings (here the bundled all-MiniLM-L6-v2).

- :mod:`.data` -- (context, response) pairs from DailyDialog, response ids, uniform negatives;
- :mod:`.train` -- head training on embeddings cached in a :class:`~dialeval.backbone.store.EmbeddingStore` (shared with PONE) and ``dialeval train bert-ruber``;
- :mod:`.normalization` -- the hybrid's normalisation ranges, fitted on validation data when training ends and stored
  in the checkpoint (also a command that adds them to an existing checkpoint);
- :mod:`.scorer` -- ``load_scorer("bert_ruber")`` (hybrid, needs references) and ``"bert_ruber_unref"``.

The model code is :mod:`dialeval.modeling.bert_ruber` (``BertRuberConfig`` / ``BertRuberModel``).
"""
