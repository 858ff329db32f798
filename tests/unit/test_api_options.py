"""``dialeval.score`` takes every option of the metric in one call: the scorer's constructor options (what
``load_scorer`` takes) and the score call's, each sent where it is declared; a key neither takes is named, with the
metric and the accepted keys, unless the constructor takes ``**kwargs``."""

from __future__ import annotations

import numpy as np
import pytest

import dialeval
from dialeval.errors import DialevalError, UnknownNameError
from dialeval.schema import ScoringItem
from dialeval.scoring import Scorer
from dialeval.scoring import registry
from dialeval.scoring.spec import MetricSpec

LONG_CONTEXT = "We spent the whole afternoon walking along the river, looking for the old bridge my grandfather built."
CONTEXTS = [LONG_CONTEXT, "Hi!"]
RESPONSES = ["Did you find it in the end?", "Hello there, how are you today?"]


class _OptionsProbe(Scorer):
    """A scorer whose constructor takes any keyword: the response's character count times its ``factor`` option."""

    name = "options_probe"

    def __init__(self, *, device=None, **settings) -> None:
        super().__init__(device=device)
        self.factor = settings.pop("factor", 1.0)
        if settings:
            raise ValueError(f"options_probe has no setting {sorted(settings)}")

    def _score_items(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        return np.asarray([len(it.response) * self.factor for it in items], dtype=np.float64)


def test_constructor_and_call_options_go_where_they_are_declared():
    out = dialeval.score("context_cosine", contexts=CONTEXTS, responses=RESPONSES, max_length=8, device="cpu",
                         batch_size=1)
    loaded = dialeval.load_scorer("context_cosine", max_length=8, device="cpu")
    assert out.scores == loaded.score(contexts=CONTEXTS, responses=RESPONSES, batch_size=1).scores
    assert "max_length:8" in out.signature and out.metadata["batch_size"] == 1
    assert out.metadata["truncated_contexts"] == 1  # the long context was cut at 8 tokens
    default = dialeval.score("context_cosine", contexts=CONTEXTS, responses=RESPONSES, device="cpu")
    assert default.metadata["truncated_contexts"] == 0 and default.scores[0] != out.scores[0]


def test_dialogue_scoring_takes_its_own_options():
    dialogues = [["Hi there.", "Hello, how are you?", "Fine."], ["One two three four.", "Five six.", ""]]
    out = dialeval.score("utterance_length", dialogues=dialogues, empty_turns="skip", device="cpu")
    assert out.scores == [pytest.approx(7 / 3), None] and out.metadata["level"] == "dialogue"
    with pytest.raises(UnknownNameError, match=r"unknown 'utterance_length' option 'contexts' .*"
                                               r"Scorer.score_dialogues"):
        dialeval.score("utterance_length", dialogues=dialogues, contexts=["x"])


def test_an_unknown_key_is_named_with_the_metric_and_the_accepted_keys():
    with pytest.raises(UnknownNameError) as err:
        dialeval.score("bleu4", contexts=["a"], responses=["b c"], references=["b c"], batchsize=4)
    message = str(err.value)
    assert isinstance(err.value, DialevalError)
    assert message.startswith("unknown 'bleu4' option 'batchsize'; did you mean 'batch_size'?")
    assert "choices: device, contexts, responses, references, batch_size, progress_bar, empty_turns, scale" in message
    with pytest.raises(UnknownNameError, match=r"unknown 'bleu4' option 'max_length'"):
        dialeval.score("bleu4", contexts=["a"], responses=["b"], references=["b"], max_length=8)


@pytest.fixture
def options_probe():
    registry.register(MetricSpec(name="options_probe", scorer=f"{__name__}:_OptionsProbe", kind="baseline"))
    yield
    registry.unregister("options_probe")


def test_a_constructor_with_kwargs_receives_the_keys_nobody_declares(options_probe):
    out = dialeval.score("options_probe", contexts=["a", "b"], responses=["four", "ab"], factor=2.0, batch_size=1)
    assert out.scores == [8.0, 4.0] and out.metadata["batch_size"] == 1  # batch_size still went to the call
    with pytest.raises(ValueError, match=r"options_probe has no setting \['colour'\]"):
        dialeval.score("options_probe", contexts=["a"], responses=["b"], colour="red")
