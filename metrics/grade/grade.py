"""GRADE as an `evaluate` module: `evaluate.load("metrics/grade")`.

A thin wrapper over `dialeval`'s scorer (one implementation); the code every metric module shares is
`dialeval.interfaces.evaluate_module`.
"""

from dialeval.interfaces import evaluate_module

_CITATION = """\
@inproceedings{huang-etal-2020-grade,
  title = {{GRADE}: Automatic Graph-Enhanced Coherence Metric for Evaluating Open-Domain Dialogue Systems},
  author = {Huang, Lishan and Ye, Zheng and Qin, Jinghui and Lin, Liang and Liang, Xiaodan},
  booktitle = {Proceedings of EMNLP 2020},
  year = {2020},
  pages = {9230--9240},
}
"""

_DESCRIPTION = """\
GRADE scores how coherent a response is with its dialogue context. It fuses a transformer reading
`[CLS] context [SEP] response [SEP]` with a graph attention network over the context's and response's keywords,
linked through ConceptNet with attention scaled by 1/hops. Score in (0, 1), higher is more coherent. Only the two
most recent context turns are read (GRADE was trained on two-turn contexts). This implementation is dialeval's
reimplementation, trained by `dialeval train grade`; see the card for measured correlations and departures.
"""

_ARGUMENTS = """\
    predictions (`list` of `str`): the responses to score.
    contexts (`list` of `list` of `str`): for each response, its context turns, oldest first (the last two are
        used). A single string per item is accepted too (one turn).
    batch_size (`int`, optional): items per forward pass (default 32). Scores do not depend on it.
"""

_EXAMPLE = """\
    >>> grade = evaluate.load("metrics/grade")  # config_name: a shipped checkpoint (default, base) or a folder
    >>> out = grade.compute(predictions=["Sure, what time works for you?"],
    ...                     contexts=[["Want to get lunch?", "I'm starving, yes!"]])
"""


class Grade(evaluate_module.DialevalMetric, scorer_name="grade"):
    about = evaluate_module.About(
        description=_DESCRIPTION, citation=_CITATION, arguments=_ARGUMENTS, example=_EXAMPLE,
        features=evaluate_module.response_features(), homepage="https://github.com/li3cmz/GRADE",
        reference_urls=("https://aclanthology.org/2020.emnlp-main.742",))
