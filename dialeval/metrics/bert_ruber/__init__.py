"""BERT-RUBER (Ghazarian et al., 2019): RUBER's unreferenced / referenced / hybrid scores on frozen BERT-style
sentence embeddings (here the bundled all-MiniLM-L6-v2).

Modules, lowest first (each imports only those above it in this list):

- :mod:`.data` -- (context, response) pairs from DailyDialog, response ids, uniform negatives;
- :mod:`.options` -- the head recipes' training options;
- :mod:`.ranges` -- the hybrid's normalisation: the ranges stored in a checkpoint and the map that applies them;
- :mod:`.head` -- loading a checkpoint's head (BERT-RUBER's or PONE's);
- :mod:`.calibration` -- fitting the ranges on validation data and writing them into a checkpoint;
- :mod:`.scorer` -- ``load_scorer("bert_ruber")`` (hybrid, needs references) and ``"bert_ruber_unref"``;
- :mod:`.train` -- head training on embeddings cached in a :class:`~dialeval.backbone.store.EmbeddingStore`
  (shared with PONE) and ``dialeval train bert-ruber``; calibrates its best checkpoint;
- :mod:`.normalization` -- what ``dialeval checkpoint calibrate --checkpoint DIR`` runs: it adds the ranges to a
  checkpoint made before they existed (it rebuilds the recipe's validation set with :mod:`.train`).

The model code is :mod:`dialeval.modeling.bert_ruber` (``BertRuberConfig`` / ``BertRuberModel``).
"""
