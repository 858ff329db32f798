"""Every learned metric here lists the items it cut under one metadata key, ``truncated_items`` (issue 50), and says
so once per call (a TruncationWarning: how many items, the limit, the side cut); its own count stays in
``truncated_texts`` (issue 36): GRADE and the AMR evaluator the items whose (context, response) text was cut,
DynaEval the distinct utterances its encoder cut. GRADE cuts a very long reply without transformers' "longer than
the specified maximum sequence length" warning. The shipped checkpoints are used."""

from __future__ import annotations

import itertools
import logging
import warnings

import pytest
from transformers.utils import logging as hf_logging

import dialeval
from dialeval.cli.app import TRUNCATION_KEY, summary_line
from dialeval.scoring.base import TruncationWarning

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
        with pytest.warns(TruncationWarning) as said:
            out = scorer.score(contexts=[CONTEXT, [LONG_REPLY], CONTEXT],
                               responses=[LONG_REPLY, LONG_REPLY, "We went to the river."])
    finally:
        logging.getLogger("transformers").removeHandler(records)
        hf_logging.set_verbosity(verbosity)
    assert out.metadata["truncated_texts"] == 2  # the second item's context and reply were both cut: one item
    assert out.metadata[TRUNCATION_KEY] == [0, 1]
    assert [str(w.message) for w in said] == [
        "grade: 2 of 3 items were cut to fit 128 tokens of [CLS] context [SEP] response [SEP], the longer side cut "
        "first (the context loses its oldest tokens, the response its last)"]
    assert "truncated_pairs" not in out.metadata
    assert not [r.getMessage() for r in records.records if LONG_WARNING in r.getMessage()]
    assert LONG_WARNING not in capfd.readouterr().err
    # transformers marks a tokenizer that met a too-long sequence unasked, whether or not it printed the warning
    assert not scorer.inputs.tokenizer.deprecation_warnings.get(
        "sequence-length-is-longer-than-the-specified-maximum")
    with warnings.catch_warnings():
        warnings.simplefilter("error", TruncationWarning)  # nothing cut, nothing said
        assert scorer.score(contexts=[CONTEXT], responses=["Fine."]).metadata[TRUNCATION_KEY] == []  # per call


def test_dynaeval_counts_the_distinct_utterances_its_encoder_cut():
    scorer = dialeval.load_scorer("dynaeval", device="cpu")
    with pytest.warns(TruncationWarning, match=r"^dynaeval: 1 of 2 items was cut to fit the encoder's 64 tokens per "
                                               r"utterance, each keeping its first$"):
        turns = scorer.score(contexts=[CONTEXT, CONTEXT], responses=[LONG_REPLY, "We went to the river."])
    assert turns.metadata["truncated_texts"] == 1 and turns.metadata[TRUNCATION_KEY] == [0]
    with pytest.warns(TruncationWarning, match="1 of 3 items"):
        dialogues = scorer.score_dialogues(dialogues=[["Hi.", "Hello."], ["Hi.", LONG_REPLY, "Nice.", LONG_REPLY],
                                                      ["Hi.", "Hello."]])
    assert dialogues.metadata["truncated_texts"] == 1  # one utterance, said twice
    assert dialogues.metadata[TRUNCATION_KEY] == [1]
    assert scorer.score(contexts=[CONTEXT], responses=["Fine."]).metadata[TRUNCATION_KEY] == []


def test_amr_eval_counts_each_cut_item_once():
    scorer = dialeval.load_scorer("amr_eval", device="cpu", graph_cache=False)
    with pytest.warns(TruncationWarning, match=r"2 of 3 items were cut to fit 256 tokens of \[CLS\] context \[SEP\] "
                                               r"response \[SEP\]: the response keeps its first 64 tokens"):
        out = scorer.score(contexts=[CONTEXT, [LONG_REPLY], CONTEXT],
                           responses=[LONG_REPLY, LONG_REPLY, "We went to the river."])
    assert out.metadata["truncated_texts"] == 2  # the second item's context and reply were both cut: one item
    assert out.metadata[TRUNCATION_KEY] == [0, 1]
    assert "truncated_inputs" not in out.metadata
    # the long reply's graph (twice) and the second item's context graph have far more than 64 concepts
    assert out.metadata["graphs_capped"] == 3
    short = scorer.score(contexts=[CONTEXT], responses=["Fine."]).metadata
    assert short[TRUNCATION_KEY] == [] and short["graphs_capped"] == 0


def test_summary_line_adds_up_the_cut_items_and_names_metrics_that_do_not_say():
    """A call's metadata lists the items; a chunk of `dialeval score` carries their count."""
    metadata = [{"metric": "grade", "n_items": 3, "truncated_items": [0, 2], "truncated_texts": 5, "seconds": 1.0,
                 "device": "cpu"},
                {"metric": "dynaeval", "n_items": 2, "n_truncated_items": 1, "seconds": 0.5, "device": "cpu"},
                {"metric": "bleu4", "n_items": 2, "seconds": 0.1, "device": "cpu"}]
    line = summary_line(metadata)
    assert line.startswith("summary: 7 items, 3 truncated items, truncation not reported by bleu4; 1.6 s"), line
    assert "truncated items" not in summary_line(metadata[2:])
