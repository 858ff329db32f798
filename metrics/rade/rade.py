"""RADE as an `evaluate` module: `evaluate.load("metrics/rade")`.

A thin wrapper over `dialeval`'s scorer (one implementation); the code every metric module shares is
`dialeval.interfaces.evaluate_module`.
"""

from dialeval.interfaces import evaluate_module

_CITATION = """\
@inproceedings{shi-etal-2023-rade,
  title = {{RADE}: Reference-Assisted Dialogue Evaluation for Open-Domain Dialogue},
  author = {Shi, Zhengliang and Sun, Weiwei and Zhang, Shuo and Zhang, Zhen and Ren, Pengjie and Ren, Zhaochun},
  booktitle = {Proceedings of the 61st Annual Meeting of the Association for Computational Linguistics
               (Volume 1: Long Papers)},
  year = {2023},
  pages = {12856--12875},
}
"""

_DESCRIPTION = """\
RADE scores a response on the human 1-5 scale by reading it beside its context and a reference response: one
encoder reads `context [SEP] reference [SEP] candidate` and a regressor predicts the scores of both the reference
and the candidate; during training an auxiliary decoder generates the reference from the context through the same
encoder, and a ranking loss keeps the annotated order of reference and candidate. This implementation is
dialeval's, on the bundled all-MiniLM-L6-v2 (encoder and decoder) instead of BART, trained by `dialeval train rade`
on RADE's released annotations; see the card for measured correlations and departures.
"""

_ARGUMENTS = """\
    predictions (`list` of `str`): the responses to score.
    contexts (`list` of `list` of `str`): for each response, its context turns, oldest first. A single string per
        item is accepted too.
    references (`list` of `list` of `str`): one or more reference responses per item (the candidate is scored
        against each; the scores are averaged). A single string per item is accepted too.
    batch_size (`int`, optional): inputs per forward pass (default 32). Scores do not depend on it.
"""

_EXAMPLE = """\
    >>> rade = evaluate.load("metrics/rade")  # config_name: a shipped checkpoint (default, base) or a folder
    >>> out = rade.compute(predictions=["Sure, what time works for you?", "I like trains."],
    ...                    contexts=[["Want to get lunch?"], ["Want to get lunch?"]],
    ...                    references=[["Yes! Where?"], ["Yes! Where?"]])
"""


class Rade(evaluate_module.DialevalMetric, scorer_name="rade"):
    about = evaluate_module.About(
        description=_DESCRIPTION, citation=_CITATION, arguments=_ARGUMENTS, example=_EXAMPLE,
        features=evaluate_module.response_features(references=True), homepage="https://github.com/shizhl/RADE",
        reference_urls=("https://github.com/shizhl/RADE",))
