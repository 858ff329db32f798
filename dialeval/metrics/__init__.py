"""The learned metrics, one subpackage each: six (grade, dynaeval, bert_ruber, pone, rade, amr_eval), plus
``bert_ruber_unref``, BERT-RUBER's unreferenced half, declared in the bert_ruber package; ``dialeval list`` prints
them. Every package has the same shape:

- ``spec.py`` -- what the metric is, declared once: ``SPECS``, a tuple of :class:`~dialeval.scoring.spec.MetricSpec`
  (name, scorer class, training commands, export, Space, card). :mod:`dialeval.scoring.registry` finds every
  package here that has one: no list of metrics is edited when one is added;
- ``scorer.py`` -- the metric on the shared scoring API: a :class:`~dialeval.scoring.learned.LearnedScorer`
  subclass that names its checkpoint folder and training command, loads its model and turns normalised items
  into model inputs (its spec names it to the registry);
- ``options.py`` -- its training options, one dataclass inheriting :class:`dialeval.training.TrainingOptions`
  (``dialeval train <metric>`` is generated from it; light to import);
- ``train.py`` -- its training recipe, ``run(options)``: the data builder and the loss, run by the one loop in
  :mod:`dialeval.training`;
- the input preparation both of them share (featurisation, negatives, augmentation...), in small modules;
- ``bench.py`` where the metric has a speed benchmark.

The model itself (``PreTrainedModel`` + config) is not here: it is the flat custom-code folder ``modeling/<metric>/``
at the repository root, installed as :mod:`dialeval.modeling`. Nothing in these packages is imported by the model
code, and scorers never import training code.
"""
