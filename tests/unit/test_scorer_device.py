"""A scorer's device: one attribute (the resolved ``torch.device``, or None without a torch model), and a device
the machine lacks refused with :class:`DeviceUnavailable` when scoring as when training (project issue 36).

CUDA's presence is monkeypatched, so the tests behave the same on a machine with GPUs as on one without.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import torch
from conftest import ROOT
from typer.testing import CliRunner

import dialeval
from dialeval.backbone.device import DeviceUnavailable, check_device_available, resolve_device
from dialeval.backbone.encoder import Encoder
from dialeval.errors import DialevalError
from dialeval.metrics.bert_ruber.scorer import RuberScorer

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CONTEXTS = [["Do you want to go to the beach on Sunday?"], ["My dog is sick today.", "Oh no, is he at the vet?"]]
RESPONSES = ["Sure, I love swimming in the sea.", "Yes, the doctor gave him medicine."]


@pytest.fixture
def cuda_count(monkeypatch):
    """Set how many CUDA devices torch sees (0: none, CUDA unavailable); returns the setter."""

    def set_count(n: int) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: n > 0)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: n)

    set_count(0)
    return set_count


@pytest.fixture(scope="module")
def pone():
    """The shipped PONE checkpoint, on the CPU."""
    return dialeval.load_scorer("pone", device="cpu")


# -- the check itself ---------------------------------------------------------------------------------------------

def test_check_names_the_device_as_it_was_asked_for(cuda_count, monkeypatch):
    with pytest.raises(DeviceUnavailable, match=r"^device 'cuda' was asked for, but torch sees no CUDA device here$"):
        check_device_available("cuda")
    with pytest.raises(DeviceUnavailable, match=r"device 'cuda:5' .* no CUDA device"):
        resolve_device(torch.device("cuda", 5))
    cuda_count(2)
    assert resolve_device("cuda:1") == torch.device("cuda:1") and resolve_device("cuda") == torch.device("cuda")
    with pytest.raises(DeviceUnavailable, match=r"'cuda:3' .* sees 2 CUDA device\(s\) \(cuda:0 to cuda:1\)"):
        resolve_device("cuda:3")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(DeviceUnavailable, match="'mps' .* MPS is not available"):
        resolve_device("mps")
    assert resolve_device("cpu") == torch.device("cpu") and resolve_device(torch.device("meta")).type == "meta"


def test_the_error_is_a_user_error_and_training_uses_the_same_check(cuda_count):
    from dialeval.training import device as training

    assert issubclass(DeviceUnavailable, DialevalError) and issubclass(DeviceUnavailable, RuntimeError)
    assert training.DeviceUnavailable is DeviceUnavailable
    with pytest.raises(DeviceUnavailable, match="'cuda' was asked for"):
        training.training_device("cuda")


# -- learned scorers ----------------------------------------------------------------------------------------------

def test_load_refuses_a_missing_device_before_reading_weights(cuda_count, monkeypatch):
    loaded = []
    monkeypatch.setattr(RuberScorer, "load_model", lambda self, path: loaded.append(path))
    with pytest.raises(DeviceUnavailable, match="device 'cuda' was asked for, but torch sees no CUDA device"):
        dialeval.load_scorer("pone", device="cuda")
    assert loaded == []


def test_a_learned_scorer_keeps_one_resolved_device(pone):
    assert isinstance(pone.device, torch.device) and pone.device == torch.device("cpu")
    assert pone.compute_device() is pone.device
    assert not hasattr(pone, "_device")
    assert {p.device for p in pone.model.parameters()} == {pone.device} == {pone.encoder.device}
    assert "|cpu_threads:1|" in pone.signature  # the thread count follows the device (one_torch_thread: 1)


def test_score_refuses_a_missing_device_and_keeps_the_old_one(pone, cuda_count):
    before = pone.score(contexts=CONTEXTS, responses=RESPONSES)
    assert before.metadata["device"] == "cpu"
    with pytest.raises(DeviceUnavailable, match="device 'cuda:3' was asked for"):
        pone.score(contexts=CONTEXTS, responses=RESPONSES, device="cuda:3")
    with pytest.raises(DeviceUnavailable, match="device 'cuda:3' was asked for"):
        pone.score_dialogues(dialogues=[c + [r] for c, r in zip(CONTEXTS, RESPONSES)], device="cuda:3")
    with pytest.raises(DeviceUnavailable, match="device 'cuda' was asked for"):
        pone.to("cuda")
    assert pone.device == torch.device("cpu")
    assert {p.device for p in pone.model.parameters()} == {torch.device("cpu")}
    again = pone.score(contexts=CONTEXTS, responses=RESPONSES, device="cpu")
    assert again.scores == before.scores and again.signature == before.signature


# -- encoder baselines and scorers without a model -----------------------------------------------------------------

def test_an_encoder_baseline_resolves_and_checks_its_device(cuda_count):
    with pytest.raises(DeviceUnavailable, match="device 'cuda' was asked for"):
        dialeval.load_scorer("context_cosine", device="cuda")
    scorer = dialeval.load_scorer("context_cosine", device="cpu")
    assert scorer.device == torch.device("cpu")  # resolved before the encoder is loaded on first use
    assert scorer.score(contexts=CONTEXTS, responses=RESPONSES).metadata["device"] == "cpu"
    assert scorer.encoder.device == scorer.device and scorer.compute_device() is scorer.device
    assert not hasattr(scorer, "_device")
    with pytest.raises(DeviceUnavailable, match="device 'cuda:3' was asked for"):
        scorer.score(contexts=CONTEXTS, responses=RESPONSES, device="cuda:3")
    assert scorer.device == torch.device("cpu")


def test_a_shared_encoder_computes_on_the_scorer_device(monkeypatch):
    encoder = Encoder(device="cpu")
    scorer = dialeval.load_scorer("context_cosine", encoder=encoder)
    assert scorer.device == encoder.device == torch.device("cpu")
    reference = scorer.score(contexts=CONTEXTS, responses=RESPONSES).scores
    moves = []
    monkeypatch.setattr(encoder, "device", torch.device("meta"))  # as if another scorer sharing it had moved it
    monkeypatch.setattr(encoder.model, "to", lambda device: moves.append(device) or encoder.model)
    encoder._cache.clear()
    assert scorer.score(contexts=CONTEXTS, responses=RESPONSES).scores == reference
    assert moves == [torch.device("cpu")] and encoder.device == torch.device("cpu")


def test_a_scorer_without_a_torch_model_has_no_device(cuda_count):
    bleu = dialeval.load_scorer("bleu4", device="cuda:1")  # nothing runs on a device: the request is ignored
    assert bleu.device is None and bleu.compute_device() is None
    out = bleu.score(contexts=["a"], responses=["b c"], references=["b c"], device="cuda:3")
    assert out.metadata["device"] == "cpu" and "cpu_threads" not in out.signature


def test_no_scorer_keeps_a_second_device_attribute():
    """The device lives in ``device`` alone: no module of the package reads or writes a ``_device`` attribute."""
    found = []
    for path in sorted((ROOT / "dialeval").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "_device":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found


# -- the command line ---------------------------------------------------------------------------------------------

def test_the_command_line_names_the_missing_device(cuda_count, tmp_path: Path):
    from dialeval.cli import app

    data = tmp_path / "items.jsonl"
    data.write_text(json.dumps({"context": ["hi"], "response": "hello there"}) + "\n")
    res = CliRunner().invoke(app, ["score", "--metric", "pone", "-i", str(data), "--device", "cuda"])
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: device 'cuda' was asked for"), res.stderr
