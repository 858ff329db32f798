"""The shared training loop: interrupted runs resume to the same weights, bounded runs stop cleanly, gradient
accumulation and batch-building workers change nothing but speed."""

import json
import time
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from dialeval.training import TrainingArguments, train

STEPS = 2000


@dataclass
class Tiny:
    note: str = "tiny"


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Dropout(0.3), torch.nn.Linear(16, 1))


def _epoch_batches(epoch: int):
    rng = np.random.default_rng([5, epoch])
    for _ in range(STEPS // 2):  # two epochs of 1,000 batches
        x = rng.normal(size=(8, 4)).astype(np.float32)
        yield {"x": x, "y": x.sum(axis=1, keepdims=True)}


def _collate(batch: dict) -> dict:
    return {k: torch.from_numpy(v) for k, v in batch.items()}


def _run(out, *, model=None, collate=_collate, **loop):
    model = model or _model()
    loop.setdefault("eval_every", 300)
    args = TrainingArguments(output_dir=str(out), epochs=2, learning_rate=1e-2, log_every=10_000, device="cpu",
                             **loop)
    result = train(model, args=args, options=Tiny(), epoch_batches=_epoch_batches, steps_per_epoch=STEPS // 2,
                   loss_fn=lambda m, b: torch.nn.functional.mse_loss(m(b["x"]), b["y"]),
                   evaluate_fn=lambda m: {"w": float(next(m.parameters()).detach().sum())},
                   save_best=lambda m, path: None, selection_key="w", greater_is_better=True, collate=collate)
    return model, result


def _same(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("straight"))


def test_a_run_cut_at_step_1000_and_resumed_ends_with_identical_weights(straight, tmp_path):
    model, first = _run(tmp_path, stop_after_steps=1000)
    assert not first.finished and first.steps == 1000 and first.total_steps == STEPS
    assert not _same(model, straight[0])
    resumed, second = _run(tmp_path)  # a fresh model and optimizer: everything comes from the saved state
    assert second.finished and second.steps == STEPS
    assert _same(resumed, straight[0])
    assert [h["step"] for h in second.history] == [h["step"] for h in straight[1].history]
    # the resumed run's seconds cover both calls: the first call's time is carried in the saved progress
    assert first.seconds_cover == second.seconds_cover == "run"
    saved = json.loads((tmp_path / "progress.json").read_text())
    assert second.seconds >= first.seconds and saved["seconds"] >= first.seconds


def test_a_state_saved_without_its_time_resumes_saying_its_seconds_cover_this_call_only(tmp_path):
    _run(tmp_path, stop_after_steps=200)
    progress = tmp_path / "progress.json"
    saved = json.loads(progress.read_text())
    del saved["seconds"]  # as a state saved before the loop recorded its time
    progress.write_text(json.dumps(saved))
    _, result = _run(tmp_path, stop_after_steps=200)
    assert result.steps == 400 and result.seconds_cover == "this_call"
    assert "seconds" not in json.loads(progress.read_text())  # nothing claims to cover the whole run later


def test_a_deadline_stops_with_state_saved_and_the_rerun_finishes_identically(straight, tmp_path):
    model, first = _run(tmp_path, deadline=time.monotonic() + 0.5)
    assert not first.finished and first.steps < STEPS
    assert (tmp_path / "last_state").is_dir() and (tmp_path / "progress.json").exists()
    resumed, second = _run(tmp_path)
    assert second.finished and _same(resumed, straight[0])


def test_an_expired_deadline_stops_before_the_first_step(tmp_path):
    _, result = _run(tmp_path, deadline=time.monotonic() - 1)
    assert not result.finished and result.steps == 0


def test_workers_build_the_same_batches_in_the_same_order(straight, tmp_path):
    model, result = _run(tmp_path, dataloader_workers=2)
    assert result.finished and _same(model, straight[0])


def test_resuming_with_workers_skips_exactly_the_batches_seen(straight, tmp_path):
    _run(tmp_path, stop_after_steps=700, dataloader_workers=2)
    resumed, _ = _run(tmp_path, dataloader_workers=2)
    assert _same(resumed, straight[0])


def test_gradient_accumulation_counts_optimizer_steps_and_matches_one_big_batch(tmp_path):
    """Two accumulated batches of 8 make the step of one batch of 16 (no dropout, mean losses)."""
    def model():
        torch.manual_seed(0)
        return torch.nn.Linear(4, 1)

    accumulated, result = _run(tmp_path / "acc", model=model(), gradient_accumulation=2, eval_every=100)
    assert result.steps == STEPS // 2 and result.total_steps == STEPS // 2

    def merged(epoch):
        it = _epoch_batches(epoch)
        for a, b in zip(it, it):
            yield {k: np.concatenate([a[k], b[k]]) for k in a}

    single = model()
    args = TrainingArguments(output_dir=str(tmp_path / "one"), epochs=2, learning_rate=1e-2, log_every=10_000,
                             device="cpu", eval_every=100)
    train(single, args=args, options=Tiny(), epoch_batches=merged, steps_per_epoch=STEPS // 4,
          loss_fn=lambda m, b: torch.nn.functional.mse_loss(m(b["x"]), b["y"]),
          evaluate_fn=lambda m: {"w": 0.0}, save_best=lambda m, path: None, selection_key="w",
          greater_is_better=True, collate=_collate)
    for a, b in zip(accumulated.parameters(), single.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert not all(torch.equal(a, b) for a, b in zip(accumulated.parameters(), model().parameters()))


def test_bf16_autocast_trains_and_bad_precision_is_refused(tmp_path):
    model, result = _run(tmp_path / "bf16", precision="bf16", stop_after_steps=50)
    assert result.steps == 50 and all(p.dtype == torch.float32 for p in model.parameters())
    with pytest.raises(ValueError, match="precision"):
        _run(tmp_path / "bad", precision="fp8")


@pytest.mark.parametrize("instructions", [(), ("avx512_bf16",)])
def test_bf16_on_a_cpu_without_bf16_instructions_is_warned_of(tmp_path, monkeypatch, instructions):
    import warnings

    from dialeval.training import loop

    monkeypatch.setattr(loop, "cpu_bf16_instructions", lambda: instructions)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, result = _run(tmp_path, precision="bf16", stop_after_steps=2)
    warned = [w for w in caught if str(w.message) == loop.BF16_WITHOUT_INSTRUCTIONS]
    assert result.steps == 2 and len(warned) == (0 if instructions else 1)


def test_the_fused_optimizer_takes_the_same_steps_up_to_rounding(tmp_path, monkeypatch):
    built = []

    class Recorded(torch.optim.AdamW):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            built.append(self.defaults["fused"])

    monkeypatch.setattr(torch.optim, "AdamW", Recorded)
    model, result = _run(tmp_path / "fused", fused_optimizer=True, stop_after_steps=200)
    unfused, _ = _run(tmp_path / "loop", stop_after_steps=200)
    assert built == [True, None]
    assert result.steps == 200 and not _same(model, _model())
    for fused, plain in zip(model.state_dict().values(), unfused.state_dict().values()):
        torch.testing.assert_close(fused, plain, atol=1e-4, rtol=1e-4)


def test_more_accumulation_than_batches_is_refused(tmp_path):
    with pytest.raises(ValueError, match="gradient-accumulation"):
        _run(tmp_path, gradient_accumulation=STEPS)


def test_learning_rate_of_names_each_parameters_rate(tmp_path):
    """A rate of 0 leaves a parameter as it was; the others train."""
    def run(out, **kwargs):
        model = _model()
        before = {k: v.clone() for k, v in model.state_dict().items()}
        args = TrainingArguments(output_dir=str(out), epochs=1, learning_rate=1e-2, log_every=10_000,
                                 eval_every=10_000, device="cpu", max_steps=20)
        train(model, args=args, options=Tiny(), epoch_batches=_epoch_batches, steps_per_epoch=STEPS // 2,
              loss_fn=lambda m, b: torch.nn.functional.mse_loss(m(b["x"]), b["y"]),
              evaluate_fn=lambda m: {"w": 0.0}, save_best=lambda m, path: None, selection_key="w",
              greater_is_better=True, collate=_collate, **kwargs)
        return {k for k, v in model.state_dict().items() if not torch.equal(v, before[k])}

    assert run(tmp_path / "a", learning_rate_of=lambda name: 0.0 if name.startswith("0.") else 1e-2) == \
        {"3.weight", "3.bias"}
    assert run(tmp_path / "b", learning_rate_of=lambda name: 0.0 if name.startswith("3.") else 1e-2) == \
        {"0.weight", "0.bias"}


def test_halve_checkpoint_casts_floats_keeps_the_rest_and_loads_back(tmp_path):
    from safetensors import safe_open
    from safetensors.torch import save_file

    from dialeval.training.half import halve_checkpoint

    weights = {"w": torch.randn(3, 5), "b": torch.randn(5, dtype=torch.float64), "index": torch.arange(4),
               "q.weight": torch.ones(3, 5, dtype=torch.int8), "q.weight_scale": torch.rand(3),  # int8 rows
               "m": torch.ones(2, 3, 5, dtype=torch.int8), "m_scale": torch.rand(2, 3)}  # of a parameter
    save_file(weights, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    (tmp_path / "config.json").write_text('{"dtype": "float32"}')
    before = (tmp_path / "model.safetensors").stat().st_size
    assert halve_checkpoint(tmp_path) == (before, (tmp_path / "model.safetensors").stat().st_size)
    assert (tmp_path / "model.safetensors").stat().st_size < before
    with safe_open(str(tmp_path / "model.safetensors"), "pt") as fh:
        assert fh.metadata() == {"format": "pt"}
        stored = {key: fh.get_tensor(key) for key in fh.keys()}
    assert {k: t.dtype for k, t in stored.items()} == {"w": torch.float16, "b": torch.float16, "index": torch.int64,
                                                       "q.weight": torch.int8, "q.weight_scale": torch.float32,
                                                       "m": torch.int8, "m_scale": torch.float32}
    assert torch.equal(stored["w"], weights["w"].half()) and torch.equal(stored["b"], weights["b"].half())
    for key in ("index", "q.weight", "q.weight_scale", "m", "m_scale"):
        assert torch.equal(stored[key], weights[key]), key
    assert (tmp_path / "config.json").read_text() == '{"dtype": "float32"}'
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == []
    with pytest.raises(FileNotFoundError, match="holds no model.safetensors"):
        halve_checkpoint(tmp_path / "missing")
