"""The learned metrics, one subpackage each (grade, dynaeval, bert_ruber, pone), all of the same shape:

- ``scorer.py`` -- the metric on the shared scoring API: a :class:`~dialeval.scoring.learned.LearnedScorer`
  subclass that names its checkpoint folder and training command, loads its model and turns normalised items
  into model inputs (registered by name in :mod:`dialeval.scoring.registry`);
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
