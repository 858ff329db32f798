"""Classic dialogue-evaluation baselines on the shared scoring API.

* ``bleu4`` -- :class:`~dialeval.baselines.overlap.Bleu4Scorer`: sentence BLEU-4 (sacrebleu), referenced.
* ``rougeL`` -- :class:`~dialeval.baselines.overlap.RougeLScorer`: ROUGE-L F1 (rouge-score), referenced.
* ``embedding_average`` -- :class:`~dialeval.baselines.glove.EmbeddingAverageScorer`: cosine of mean GloVe
  vectors, referenced.
* ``vector_extrema`` -- :class:`~dialeval.baselines.glove.VectorExtremaScorer`: cosine of GloVe extrema
  vectors, referenced.
* ``greedy_matching`` -- :class:`~dialeval.baselines.glove.GreedyMatchingScorer`: symmetric GloVe greedy
  matching, referenced.
* ``bertscore`` -- :class:`~dialeval.baselines.bertscore.BertScoreScorer`: BERTScore F1 with the shared encoder
  (default all-MiniLM-L6-v2), referenced.
* ``context_cosine`` -- :class:`~dialeval.baselines.cosine.ContextCosineScorer`: cosine of mean-pooled context
  and response embeddings, unreferenced.
* ``adjacent_cosine`` -- :class:`~dialeval.baselines.cosine.AdjacentCosineScorer`: cosine of the last context turn
  and the response (dialogue level: mean cosine of adjacent turns), unreferenced.
* ``utterance_length`` -- :class:`~dialeval.baselines.length.UtteranceLengthScorer`: words in the response (dialogue
  level: mean words per turn), unreferenced; the length control.

Several references per item: ``bleu4`` uses sacrebleu's native multi-reference BLEU; every other referenced
metric scores the response against each reference and keeps the maximum.

Importing this package imports nothing heavy; each metric module loads its own dependencies (use
:func:`dialeval.load_scorer`).
"""
