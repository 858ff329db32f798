"""BERT-RUBER (hybrid) as an `evaluate` module: `evaluate.load("metrics/bert_ruber")`.

A thin wrapper over `dialeval`'s scorer (one implementation); the code every metric module shares is
`dialeval.interfaces.evaluate_module`.
The hybrid score needs references; BERT-RUBER's unreferenced score alone is `dialeval.load_scorer("bert_ruber_unref")`.
"""

from dialeval.interfaces import evaluate_module

_CITATION = """\
@inproceedings{ghazarian-etal-2019-better,
  title = {Better Automatic Evaluation of Open-Domain Dialogue Systems with Contextualized Embeddings},
  author = {Ghazarian, Sarik and Wei, Johnny and Galstyan, Aram and Peng, Nanyun},
  booktitle = {Proceedings of the Workshop on Methods for Optimizing and Evaluating Neural Language Generation},
  year = {2019},
  pages = {82--89},
}
"""

_DESCRIPTION = """\
BERT-RUBER combines an unreferenced score (a network trained to tell the true response to a context from random
ones, reading frozen BERT-style sentence embeddings) with a referenced score (cosine between the sentence embeddings
of the response and of the reference). Each is mapped linearly onto [0, 1] over a range fixed at training time and
stored in the checkpoint (min and max on DailyDialog validation data), with strictly increasing tails onto
(-0.05, 0) and (1, 1.05) beyond it, so an item's score never depends on the other items and different scores never
tie; the two are combined with min (default) or max. This implementation is dialeval's reimplementation on frozen
all-MiniLM-L6-v2 embeddings, trained by `dialeval train bert-ruber`; see the card for measured correlations and
departures.
"""

_ARGUMENTS = """\
    predictions (`list` of `str`): the responses to score.
    contexts (`list` of `list` of `str`): for each response, its context turns, oldest first (the most recent
        `context_turns` of the checkpoint are read, 2 by default). A single string per item is accepted too.
    references (`list` of `list` of `str`): one or more reference responses per item (the best cosine is kept).
        A single string per item is accepted too.
    hybrid (`str`, optional): "min" (default) or "max" of the two normalised scores.
    normalization (`str`, optional): "calibrated" (default: each score mapped with the checkpoint's fixed range,
        (s - low) / (high - low) inside it and strictly increasing tails onto (-0.05, 0) and (1, 1.05) outside it,
        item by item) or "minmax_over_call" (the original's behaviour:
        rescaled over the items of this call, so a score depends on the other items and at least two items with
        different scores are needed).
    batch_size (`int`, optional): texts per encoder batch (default 32). Scores do not depend on it.
"""

_EXAMPLE = """\
    >>> ruber = evaluate.load("metrics/bert_ruber")  # config_name: a shipped checkpoint (default, base) or a folder
    >>> out = ruber.compute(predictions=["Sure, what time works for you?", "I like trains."],
    ...                     contexts=[["Want to get lunch?"], ["Want to get lunch?"]],
    ...                     references=[["Yes! Where?"], ["Yes! Where?"]])
"""


class BertRuber(evaluate_module.DialevalMetric, scorer_name="bert_ruber"):
    about = evaluate_module.About(
        description=_DESCRIPTION, citation=_CITATION, arguments=_ARGUMENTS, example=_EXAMPLE,
        features=evaluate_module.response_features(references=True), homepage="https://github.com/gmftbyGMFTBY/PONE",
        reference_urls=("https://aclanthology.org/W19-2310",))

    def configure_scorer(self, hybrid="min", normalization="calibrated"):
        self._scorer.set_hybrid(hybrid, normalization)
