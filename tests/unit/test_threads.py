"""The CPU thread count: pinned for a block or a command, recorded in the signature of torch-backed scorers, and what
makes two processes' scores bit-identical (tests/integration/test_scale_processes.py relies on it)."""

import pytest
import torch

import dialeval
from dialeval.backbone.device import cpu_threads_label, set_torch_threads, torch_threads


def test_torch_threads_pins_the_count_for_the_block_and_restores_it():
    before = torch.get_num_threads()
    other = 1 if before != 1 else 2
    with torch_threads(other) as inside:
        assert inside == other == torch.get_num_threads()
    assert torch.get_num_threads() == before
    with torch_threads(None) as inside:
        assert inside == before


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_a_thread_count_that_is_not_a_positive_integer_is_refused(bad):
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        set_torch_threads(bad)
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        with torch_threads(bad):
            pass


def test_the_label_names_the_count_on_the_cpu_only():
    with torch_threads(1):
        assert cpu_threads_label(torch.device("cpu")) == {"cpu_threads": "1"}
    assert cpu_threads_label(torch.device("cuda:0")) == {}
    assert cpu_threads_label(None) == {}


def test_a_torch_scorer_signs_its_thread_count_and_a_torchless_one_does_not():
    cosine = dialeval.load_scorer("context_cosine", device="cpu")
    with torch_threads(1):
        one = cosine.signature
    with torch_threads(2):
        two = cosine.signature
    assert "|cpu_threads:1|" in one and "|cpu_threads:2|" in two
    assert one.replace("cpu_threads:1", "cpu_threads:2") == two
    assert "cpu_threads" not in dialeval.load_scorer("bleu4").signature


def test_scores_are_bit_identical_at_one_thread_count_across_calls():
    scorer = dialeval.load_scorer("context_cosine", device="cpu")
    contexts = [["How was the trip?", "Long, but the mountains were worth it."]] * 3
    responses = ["Did you take pictures?", "I would love to go there next summer with my brother.", "Nice."]
    with torch_threads(1):
        first = scorer.score(contexts=contexts, responses=responses).scores
        again = scorer.score(contexts=contexts[::-1], responses=responses[::-1], batch_size=1).scores
    assert first == again[::-1]
