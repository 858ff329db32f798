"""GRADE (Huang et al., EMNLP 2020): graph-enhanced coherence metric.

Data side (this package so far):

- :mod:`.keywords` -- GRADE's keyword rule (POS weight x TF x IDF > 0.15) with spaCy, IDF fitted on a corpus and
  stored as JSON.
- :mod:`.graph` -- the commonsense graph (ConceptNet-100K shipped in the data directory, or the user's full
  ConceptNet 5 assertions CSV), node embeddings, keyword -> concept alignment, hop distances and neighbour
  selection; :class:`~.graph.GraphTables` is everything scoring needs, saved to / loaded from a folder.
- :mod:`.features` -- per (context, response) pair graph inputs (node features, ctx/resp edges weighted 1/hop)
  and their batching.
- :mod:`.coverage` -- ``python -m dialeval.metrics.grade.coverage``: keyword / alignment / reachability report.
"""
