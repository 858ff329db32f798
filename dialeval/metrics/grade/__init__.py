"""GRADE (Huang et al., EMNLP 2020): graph-enhanced coherence metric.

Data side (this package so far):

- :mod:`.keywords` -- GRADE's keyword rule (POS weight x TF x IDF > 0.15) with spaCy, IDF fitted on a corpus and
  stored as JSON.
- :mod:`.conceptnet` -- readers of the commonsense sources (ConceptNet-100K shipped in the data directory, the
  user's full ConceptNet 5 assertions CSV, Numberbatch vectors).
- :mod:`.graph` -- the concept graph (CSR), keyword -> concept alignment and hop distances.
- :mod:`.node_embeddings` -- concept vectors (MiniLM / GloVe name embeddings, PCA, retrofitting, Numberbatch).
- :mod:`.tables` -- :class:`~.tables.GraphTables`, the graph with its vectors and the neighbour selection: everything
  scoring needs, saved to / loaded from a folder.
- :mod:`.cache` -- where built keyword IDF and graph tables are cached, and the file hash keying them.
- :mod:`.features` -- per (context, response) pair graph inputs (node features, ctx/resp edges weighted 1/hop)
  and their batching.
- :mod:`.coverage` -- ``dialeval grade coverage``: keyword / alignment / reachability report.
- :mod:`.graph_experiments` -- ``dialeval grade graph build|measure``: build the graph tables, compare
  node-embedding substitutes (imported by nothing used for scoring or training).
"""
