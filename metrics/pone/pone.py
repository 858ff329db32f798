"""PONE as an `evaluate` module: `evaluate.load("metrics/pone")`.

A thin wrapper over `dialeval`'s scorer (one implementation); the code every metric module shares is
`dialeval.interfaces.evaluate_module`.
"""

from dialeval.interfaces import evaluate_module

_CITATION = """\
@article{lan-etal-2020-pone,
  title = {{PONE}: A Novel Automatic Evaluation Metric for Open-domain Generative Dialogue Systems},
  author = {Lan, Tian and Mao, Xian-Ling and Wei, Wei and Gao, Xiaoyan and Huang, Heyan},
  journal = {ACM Transactions on Information Systems},
  volume = {39},
  number = {1},
  year = {2020},
  doi = {10.1145/3423168},
}
"""

_DESCRIPTION = """\
PONE scores how appropriate a response is to its dialogue context, without a reference. It is BERT-RUBER's
unreferenced network (a bilinear term between the context and response sentence embeddings, an MLP and a sigmoid)
trained with augmented POsitive samples, weighted (hard) NEgative samples and a label filter for the augmented
positives. Score in (0, 1), higher is better. This implementation is dialeval's reimplementation on frozen
all-MiniLM-L6-v2 embeddings, trained by `dialeval train pone`; see the card for measured correlations and departures.
"""

_ARGUMENTS = """\
    predictions (`list` of `str`): the responses to score.
    contexts (`list` of `list` of `str`): for each response, its context turns, oldest first (the most recent
        `context_turns` of the checkpoint are read, 2 by default). A single string per item is accepted too.
    batch_size (`int`, optional): texts per encoder batch (default 32). Scores do not depend on it.
"""

_EXAMPLE = """\
    >>> pone = evaluate.load("metrics/pone")  # config_name: a shipped checkpoint (default, base) or a folder
    >>> out = pone.compute(predictions=["Sure, what time works for you?", "Bananas are yellow."],
    ...                    contexts=["Want to get lunch?", "Want to get lunch?"])
"""


class Pone(evaluate_module.DialevalMetric, scorer_name="pone"):
    about = evaluate_module.About(
        description=_DESCRIPTION, citation=_CITATION, arguments=_ARGUMENTS, example=_EXAMPLE,
        features=evaluate_module.response_features(), homepage="https://github.com/gmftbyGMFTBY/PONE",
        reference_urls=("https://doi.org/10.1145/3423168", "https://arxiv.org/abs/2004.02399"))
