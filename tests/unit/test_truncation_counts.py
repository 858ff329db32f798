"""Every learned metric here counts what it cut under one metadata key, ``truncated_texts`` (issue 36): GRADE and the
AMR evaluator the items whose (context, response) text was cut, DynaEval the distinct utterances its encoder cut.
GRADE cuts a very long reply without transformers' "longer than the specified maximum sequence length" warning.
The shipped checkpoints are used."""

from __future__ import annotations

import itertools
import logging

import pytest
from transformers.utils import logging as hf_logging

import dialeval
from dialeval.cli.app import TRUNCATION_KEY, summary_line

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# A 1,900-word reply: several times every encoder's 512 tokens.
LONG_REPLY = " ".join(itertools.islice(itertools.cycle(
    "we walked along the quiet river and talked about the old stone bridge".split()), 1900)) + "."
CONTEXT = ["Hi, how was your weekend?", "Where did you go?"]
LONG_WARNING = "longer than the specified maximum sequence length"


class _Records(logging.Handler):
    """Keeps the log records it receives."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_the_long_reply_is_long():
    assert len(LONG_REPLY.split()) == 1900


def test_grade_counts_each_cut_item_once_and_does_not_warn(capfd):
    scorer = dialeval.load_scorer("grade", device="cpu")  # a fresh tokenizer: transformers warns once per tokenizer
    records = _Records()
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_warning()  # the level at which the warning would show
    logging.getLogger("transformers").addHandler(records)
    try:
        out = scorer.score(contexts=[CONTEXT, [LONG_REPLY], CONTEXT],
                           responses=[LONG_REPLY, LONG_REPLY, "We went to the river."])
    finally:
        logging.getLogger("transformers").removeHandler(records)
        hf_logging.set_verbosity(verbosity)
    assert out.metadata[TRUNCATION_KEY] == 2  # the second item's context and reply were both cut: one item
    assert "truncated_pairs" not in out.metadata
    assert not [r.getMessage() for r in records.records if LONG_WARNING in r.getMessage()]
    assert LONG_WARNING not in capfd.readouterr().err
    # transformers marks a tokenizer that met a too-long sequence unasked, whether or not it printed the warning
    assert not scorer.inputs.tokenizer.deprecation_warnings.get(
        "sequence-length-is-longer-than-the-specified-maximum")
    assert scorer.score(contexts=[CONTEXT], responses=["Fine."]).metadata[TRUNCATION_KEY] == 0  # per call


def test_dynaeval_counts_the_distinct_utterances_its_encoder_cut():
    scorer = dialeval.load_scorer("dynaeval", device="cpu")
    turns = scorer.score(contexts=[CONTEXT, CONTEXT], responses=[LONG_REPLY, "We went to the river."])
    assert turns.metadata[TRUNCATION_KEY] == 1
    dialogues = scorer.score_dialogues(dialogues=[["Hi.", LONG_REPLY, "Nice.", LONG_REPLY], ["Hi.", "Hello."]])
    assert dialogues.metadata[TRUNCATION_KEY] == 1  # one utterance, said twice
    assert scorer.score(contexts=[CONTEXT], responses=["Fine."]).metadata[TRUNCATION_KEY] == 0


def test_amr_eval_counts_each_cut_item_once():
    scorer = dialeval.load_scorer("amr_eval", device="cpu", graph_cache=False)
    out = scorer.score(contexts=[CONTEXT, [LONG_REPLY], CONTEXT],
                       responses=[LONG_REPLY, LONG_REPLY, "We went to the river."])
    assert out.metadata[TRUNCATION_KEY] == 2  # the second item's context and reply were both cut: one item
    assert "truncated_inputs" not in out.metadata
    # the long reply's graph (twice) and the second item's context graph have far more than 64 concepts
    assert out.metadata["graphs_capped"] == 3
    short = scorer.score(contexts=[CONTEXT], responses=["Fine."]).metadata
    assert short[TRUNCATION_KEY] == 0 and short["graphs_capped"] == 0


def test_summary_line_adds_up_the_one_key_and_names_metrics_without_it():
    metadata = [{"metric": "grade", "n_items": 3, "truncated_texts": 2, "seconds": 1.0, "device": "cpu"},
                {"metric": "dynaeval", "n_items": 2, "truncated_texts": 1, "seconds": 0.5, "device": "cpu"},
                {"metric": "bleu4", "n_items": 2, "seconds": 0.1, "device": "cpu"}]
    line = summary_line(metadata)
    assert line.startswith("summary: 7 items, 3 truncated texts, truncation not reported by bleu4; 1.6 s"), line
    assert "truncated texts" not in summary_line(metadata[2:])
