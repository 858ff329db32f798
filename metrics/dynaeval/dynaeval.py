"""DynaEval as an `evaluate` module: `evaluate.load("metrics/dynaeval")`.

A thin wrapper over `dialeval`'s scorer (one implementation); the code every metric module shares is
`dialeval.interfaces.evaluate_module`.
"""

from dialeval.interfaces import evaluate_module

_CITATION = """\
@inproceedings{zhang-etal-2021-dynaeval,
  title = {{D}yna{E}val: Unifying Turn and Dialogue Level Evaluation},
  author = {Zhang, Chen and Chen, Yiming and D'Haro, Luis Fernando and Zhang, Yan and Friedrichs, Thomas and
            Lee, Grandee and Li, Haizhou},
  booktitle = {Proceedings of ACL-IJCNLP 2021},
  year = {2021},
  pages = {5676--5689},
}
"""

_DESCRIPTION = """\
DynaEval scores the coherence of a whole dialogue. Each utterance is embedded by a frozen sentence encoder, a
BiLSTM reads the utterances in order, and a relational graph convolution over a window of neighbouring utterances
(edge types: which speaker talks to which, earlier or later) feeds a scorer that averages over the utterances. The
score is unbounded; higher is more coherent. It was trained to rank DailyDialog dialogues above copies with a
replaced utterance or with one speaker's utterances shuffled. This is dialeval's reimplementation, trained by
`dialeval train dynaeval`; see the card for measured correlations and departures from the paper.
"""

_ARGUMENTS = """\
    dialogues (`list` of `list`): one dialogue per item, its turns oldest first: either strings (speakers then
        alternate by position) or messages `{"role": ..., "content": ...}` (at most two distinct roles per dialogue).
        At least two turns each.
    batch_size (`int`, optional): utterances per encoder batch (default 32). Scores do not depend on it.
"""

_EXAMPLE = """\
    >>> dynaeval = evaluate.load("metrics/dynaeval")  # config_name: a shipped checkpoint (default, base) or a folder
    >>> out = dynaeval.compute(dialogues=[["Want to get lunch?", "Yes, I'm starving!", "Pizza?", "Perfect."]])
"""


class DynaEval(evaluate_module.DialevalMetric, scorer_name="dynaeval"):
    about = evaluate_module.About(
        description=_DESCRIPTION, citation=_CITATION, arguments=_ARGUMENTS, example=_EXAMPLE,
        features=evaluate_module.dialogue_features(), homepage="https://github.com/e0397123/DynaEval",
        reference_urls=("https://aclanthology.org/2021.acl-long.441",))
