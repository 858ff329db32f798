"""``dialeval checkpoint quantise``: a checkpoint's large linear weights stored as int8 rows, in place, reproducibly;
the config lists them, training.json records the step, and the model loads them as int8 layers that score as the
float ones within the quantisation error."""

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from typer.main import get_command
from typer.testing import CliRunner

from dialeval.cli import app
from dialeval.errors import CheckpointNotFoundError
from dialeval.modeling.grade import GradeConfig, GradeModel
from dialeval.modeling.grade.modeling_shared import Int8RowLinear, dequantise_rows
from dialeval.scoring.learned import load_pretrained
from dialeval.training.quantise import DEFAULT_MIN_PARAMS, quantise_checkpoint
from dialeval.training.runs import CONVERSIONS_FIELD

TINY_ENCODER = {"vocab_size": 60, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
                "intermediate_size": 64, "max_position_embeddings": 32, "type_vocab_size": 2}
#: The tiny model's plain linear layers of at least 1,000 weights: each layer's four 32 x 32 projections and its
#: two 32 x 64 feed-forward ones (the text projection has 320, the scorer 4).
LARGE = sorted(f"encoder.encoder.layer.{i}.{p}" for i in (0, 1) for p in (
    "attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
    "intermediate.dense", "output.dense"))


def _tensors(path: Path) -> dict[str, torch.Tensor]:
    with safe_open(str(path / "model.safetensors"), "pt") as fh:
        return {key: fh.get_tensor(key) for key in fh.keys()}  # noqa: SIM118 (a safetensors handle)


def _scores(folder: Path) -> torch.Tensor:
    model = load_pretrained(GradeModel, folder, dtype=torch.float32)
    ids = torch.randint(1, TINY_ENCODER["vocab_size"], (3, 9), generator=torch.Generator().manual_seed(3))
    with torch.inference_mode():
        return model(input_ids=ids, attention_mask=torch.ones_like(ids)).score


@pytest.fixture
def checkpoint(tmp_path) -> Path:
    """A tiny GRADE checkpoint in float16 (a full one: no base encoder), with a training.json."""
    torch.manual_seed(0)
    model = GradeModel(GradeConfig(encoder_config=TINY_ENCODER, base_encoder="", trainable_encoder_layers=-1,
                                   use_graph=False, text_dim=10, fusion_dims=[4]))
    folder = tmp_path / "ckpt"
    model.save_pretrained(folder, half=True)
    (folder / "training.json").write_text(json.dumps({"metric": "grade", "run": "tiny"}, indent=1) + "\n")
    return folder


def test_quantise_stores_the_large_linear_weights_as_int8_rows_and_the_model_loads_them(checkpoint):
    before = _tensors(checkpoint)
    floats = _scores(checkpoint)
    (checkpoint / "model.safetensors").chmod(0o644)
    done = quantise_checkpoint(checkpoint, min_params=1000)
    assert (checkpoint / "model.safetensors").stat().st_mode & 0o777 == 0o644
    assert done.modules == LARGE and done.before > done.after == (checkpoint / "model.safetensors").stat().st_size
    after = _tensors(checkpoint)
    assert set(after) == set(before) | {f"{name}.weight_scale" for name in LARGE}
    for key, tensor in before.items():
        name = key.removesuffix(".weight")
        if name in LARGE:  # each value within half a step of its row
            assert after[key].dtype == torch.int8 and after[f"{name}.weight_scale"].dtype == torch.float32
            err = (dequantise_rows(after[key], after[f"{name}.weight_scale"]) - tensor.float()).abs()
            assert (err <= after[f"{name}.weight_scale"][:, None] / 2 * (1 + 1e-6)).all(), key
        else:  # everything else as it was (float16)
            assert after[key].dtype == tensor.dtype and torch.equal(after[key], tensor), key

    config = json.loads((checkpoint / "config.json").read_text())
    assert config["int8_weights"] == LARGE
    model = load_pretrained(GradeModel, checkpoint, dtype=torch.float32)
    assert {n for n, m in model.named_modules() if isinstance(m, Int8RowLinear)} == set(LARGE)
    assert model.encoder.encoder.layer[0].output.dense.weight.dtype == torch.int8  # not cast by dtype=float32
    quantised = _scores(checkpoint)
    assert not torch.equal(quantised, floats)
    torch.testing.assert_close(quantised, floats, atol=2e-3, rtol=0)

    record = json.loads((checkpoint / "training.json").read_text())
    assert record["run"] == "tiny" and record[CONVERSIONS_FIELD] == [{
        "command": "dialeval checkpoint quantise --checkpoint CHECKPOINT --min-params 1000",
        "format": "int8 rows, one float32 scale per row", "modules": LARGE,
        "bytes_before": done.before, "bytes_after": done.after}]


def test_quantise_is_reproducible_and_converts_only_what_is_left(checkpoint, tmp_path):
    twin = tmp_path / "twin"
    shutil.copytree(checkpoint, twin)
    quantise_checkpoint(checkpoint, min_params=1000)
    quantise_checkpoint(twin, min_params=1000)
    for name in ("model.safetensors", "config.json", "training.json"):
        assert (checkpoint / name).read_bytes() == (twin / name).read_bytes(), name

    files = {p.name: p.read_bytes() for p in checkpoint.iterdir()}
    again = quantise_checkpoint(checkpoint, min_params=1000)  # nothing left of that size: no file changes
    assert again.modules == [] and again.before == again.after
    assert {p.name: p.read_bytes() for p in checkpoint.iterdir()} == files

    smaller = quantise_checkpoint(checkpoint, min_params=300)  # the text projection (32 x 10) joins
    assert smaller.modules == ["text_proj"]
    assert json.loads((checkpoint / "config.json").read_text())["int8_weights"] == sorted([*LARGE, "text_proj"])
    assert [step["modules"] for step in json.loads((checkpoint / "training.json").read_text())[CONVERSIONS_FIELD]] == [
        LARGE, ["text_proj"]]


def test_only_converts_the_modules_under_the_given_prefixes(checkpoint, tmp_path):
    twin = tmp_path / "twin"
    shutil.copytree(checkpoint, twin)
    done = quantise_checkpoint(checkpoint, min_params=1000, only=["encoder.encoder.layer.1.", "text_proj"])
    assert done.modules == [name for name in LARGE if name.startswith("encoder.encoder.layer.1.")]
    record = json.loads((checkpoint / "training.json").read_text())[CONVERSIONS_FIELD][0]
    assert record["command"].endswith("--min-params 1000 --only encoder.encoder.layer.1. --only text_proj")
    res = CliRunner().invoke(app, ["checkpoint", "quantise", "--checkpoint", str(twin), "--min-params", "1000",
                                   "--only", "encoder.encoder.layer.1.", "--only", "text_proj"])
    assert res.exit_code == 0, res.output
    for name in ("model.safetensors", "config.json", "training.json"):  # the command is the function
        assert (checkpoint / name).read_bytes() == (twin / name).read_bytes(), name


def test_a_quantised_checkpoint_is_for_scoring_its_int8_layers_refuse_to_train(checkpoint):
    quantise_checkpoint(checkpoint, min_params=1000)
    model = load_pretrained(GradeModel, checkpoint, dtype=torch.float32).train()
    ids = torch.ones(1, 4, dtype=torch.long)
    with pytest.raises(RuntimeError, match="stored as int8 rows.*cannot train"):
        model(input_ids=ids)


def test_quantise_refuses_what_is_not_a_learned_metrics_checkpoint(checkpoint, tmp_path):
    with pytest.raises(CheckpointNotFoundError, match="not a checkpoint folder"):
        quantise_checkpoint(tmp_path / "missing")
    config = json.loads((checkpoint / "config.json").read_text())
    (checkpoint / "config.json").write_text(json.dumps({**config, "model_type": "bert"}))
    with pytest.raises(CheckpointNotFoundError, match="model type 'bert' is not one of the learned metrics'"):
        quantise_checkpoint(checkpoint)


def test_the_command_converts_each_folder_and_prints_its_bytes(checkpoint, tmp_path):
    shutil.copytree(checkpoint, tmp_path / "b")
    res = CliRunner().invoke(app, ["checkpoint", "quantise", "--checkpoint", str(checkpoint),
                                   "--checkpoint", str(tmp_path / "b"), "--min-params", "1000"])
    assert res.exit_code == 0, res.output
    for folder in (checkpoint, tmp_path / "b"):
        size = (folder / "model.safetensors").stat().st_size
        assert f"{folder}: " in res.output and f" -> {size:,} bytes (12 linear weights as int8 rows: " in res.output
    res = CliRunner().invoke(app, ["checkpoint", "quantise", "--checkpoint", str(checkpoint)])
    assert res.exit_code == 0 and "no float linear weight of 65,536 numbers or more is left; unchanged" in res.output
    options = {p.opts[0]: p for p in get_command(app).commands["checkpoint"].commands["quantise"].params}
    assert options["--min-params"].default == DEFAULT_MIN_PARAMS == 65_536  # the library's default, written twice
