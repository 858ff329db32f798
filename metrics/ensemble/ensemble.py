"""The ensemble as an `evaluate` module: `evaluate.load("metrics/ensemble")`.

A thin wrapper over `dialeval`'s scorer (one implementation); the code every metric module shares is
`dialeval.interfaces.evaluate_module`. Turn level, without references; the dialogue level (and, in a checkpoint
that holds one, the member set that adds RADE, which reads references) are in `dialeval.load_scorer("ensemble", ...)`.
"""

from dialeval import load_scorer
from dialeval.interfaces import evaluate_module

_CITATION = """\
@misc{zhang-etal-2022-mme-crs,
  title = {{MME-CRS}: Multi-Metric Evaluation Based on Correlation Re-Scaling for Evaluating Open-Domain Dialogue},
  author = {Zhang, Pengfei and Hu, Xiaohui and Yu, Kaidong and Wang, Jian and Han, Song and Liu, Cao and Yuan, Chunyang},
  year = {2022},
  eprint = {2206.09403},
  archivePrefix = {arXiv},
}
"""

_DESCRIPTION = """\
dialeval's ensemble scores how appropriate a response is to its dialogue context by combining the library's other
metrics. Each member (GRADE, PONE, BERT-RUBER's unreferenced score and the context cosine in the default `full`
set: the members whose agreement with human ratings is established above 0 across the training sets; the
encoder-only members in `fast`; `full+length` adds the reply's length for data whose raters reward long replies)
scores the item, its raw score is mapped to [0, 1] by a fixed calibration stored in the checkpoint, and a combiner
combines them (in `full`, the power mean with p = 0.25, which lets one member's low score count more than another's
high one).
The combiner was chosen by leave-one-benchmark-out, by the number of held-out sets where it beats the set's best
member, among those that pass sanity checks on validation data; an item's score never depends on its batch-mates.
See the card for the leave-one-out table, the weights and what the ensemble cannot do.
"""

_ARGUMENTS = """\
    predictions (`list` of `str`): the responses to score.
    contexts (`list` of `list` of `str`): for each response, its context turns, oldest first. A single string per
        item is accepted too.
    member_set (`str`, optional): "full" (default), "fast" (the members that share one MiniLM encoder pass),
        "base" (`full` with BERT-RUBER's and PONE's all-mpnet-base-v2 heads: `dialeval encoders install
        all-mpnet-base-v2`) or "full+length" (`full` and the reply's length).
    batch_size (`int`, optional): items per member batch (default 32). Scores do not depend on it.
"""

_EXAMPLE = """\
    >>> ensemble = evaluate.load("metrics/ensemble")  # config_name: a shipped checkpoint (default, base) or a folder
    >>> out = ensemble.compute(predictions=["Sure, what time works for you?", "Bananas are yellow."],
    ...                        contexts=["Want to get lunch?", "Want to get lunch?"], member_set="fast")
"""


class Ensemble(evaluate_module.DialevalMetric, scorer_name="ensemble"):
    about = evaluate_module.About(
        description=_DESCRIPTION, citation=_CITATION, arguments=_ARGUMENTS, example=_EXAMPLE,
        features=evaluate_module.response_features(), homepage="https://arxiv.org/abs/2206.09403",
        reference_urls=("https://arxiv.org/abs/2206.09403",))

    def _download_and_prepare(self, dl_manager):
        """Nothing yet: the members load at the first ``compute()``, for the member set it asks for."""
        self._scorer = None

    def configure_scorer(self, member_set=None):
        """Load the scorer of ``member_set`` (default: the checkpoint's) unless it is the one already loaded."""
        loaded = self._scorer
        if loaded is None or (member_set or loaded.config.default_member_set) != loaded.member_set:
            self._scorer = load_scorer(self.scorer_name, checkpoint=self.config_name, member_set=member_set)
