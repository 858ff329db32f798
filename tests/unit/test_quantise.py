"""``dialeval checkpoint quantise``: a checkpoint's large weights stored as int8 rows, in place, reproducibly; the
config lists them, training.json records the step, and the model loads them as int8 rows that score as the float
weights within the quantisation error: GRADE's linear layers, BERT-RUBER's and PONE's MLP and bilinear matrix,
DynaEval's linear layers, LSTM, edge attention and relational layer; an exported folder of a quantised checkpoint
loads with trust_remote_code without dialeval."""

import inspect
import json
import shutil
import struct
import textwrap
from pathlib import Path

import pytest
import torch
from conftest import ROOT, run_without_dialeval
from safetensors import safe_open
from test_checkpoints import fixed_inputs, int8_key, score_of
from typer.main import get_command
from typer.testing import CliRunner

from dialeval.cli import app
from dialeval.errors import CheckpointNotFoundError
from dialeval.modeling.bert_ruber import BertRuberConfig, BertRuberModel, PoneConfig, PoneModel
from dialeval.modeling.dynaeval import DynaEvalConfig, DynaEvalModel
from dialeval.modeling.grade import GradeConfig, GradeModel
from dialeval.modeling.shared.modeling_shared import dequantise_rows, row_scale_name
from dialeval.scoring.export import export_checkpoint
from dialeval.scoring.learned import load_pretrained
from dialeval.training import save_half_checkpoint
from dialeval.training.quantise import DEFAULT_MIN_PARAMS, quantise_checkpoint
from dialeval.training.runs import CONVERSIONS_FIELD

TINY_ENCODER = {"vocab_size": 60, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
                "intermediate_size": 64, "max_position_embeddings": 32, "type_vocab_size": 2}
#: The tiny GRADE's plain linear layers of at least 1,000 weights: each layer's four 32 x 32 projections and its
#: two 32 x 64 feed-forward ones (the text projection has 320, the scorer 4).
LARGE = sorted(f"encoder.encoder.layer.{i}.{p}" for i in (0, 1) for p in (
    "attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
    "intermediate.dense", "output.dense"))
#: metric -> (a tiny model's class and config, its weights of at least 1,000 numbers that it can store as int8 rows,
#: by their names in int8_weights). BERT-RUBER: the bilinear matrix (32 x 32) and the MLP layers of 65 x 64 and
#: 64 x 32 (the output 32); PONE: the matrix and 65 x 48; DynaEval: the input projection (48 x 32), the LSTM's four
#: weights (64 x 32, 64 x 16), the edge attention (32 x 32), the relational layer's basis (2 x 32 x 32) and root
#: (32 x 32) and the hidden layer (64 x 32), not PyG's graph convolution (no nn.Linear) nor the output.
TINY = {
    "grade": (GradeModel, GradeConfig(encoder_config=TINY_ENCODER, base_encoder="", trainable_encoder_layers=-1,
                                      use_graph=False, text_dim=10, fusion_dims=[4]), LARGE),
    "bert_ruber": (BertRuberModel, BertRuberConfig(embedding_dim=32, hidden_dims=[64, 32]),
                   ["bilinear", "hidden.0", "hidden.1"]),
    "pone": (PoneModel, PoneConfig(embedding_dim=32, hidden_dims=[48]), ["bilinear", "hidden.0"]),
    "dynaeval": (DynaEvalModel, DynaEvalConfig(utterance_dim=48, node_dim=32, graph_dim=32, lstm_layers=1,
                                               num_bases=2),
                 ["edge_attention.weight", "hidden", "input_proj", "lstm.weight_hh_l0", "lstm.weight_hh_l0_reverse",
                  "lstm.weight_ih_l0", "lstm.weight_ih_l0_reverse", "rgcn.basis", "rgcn.root"]),
}


def _data_bytes(path: Path) -> int:
    """The bytes of the tensors of a safetensors file: its size less the 8-byte length and the header."""
    with open(path / "model.safetensors", "rb") as fh:
        return (path / "model.safetensors").stat().st_size - 8 - struct.unpack("<Q", fh.read(8))[0]


def _tensors(path: Path) -> dict[str, torch.Tensor]:
    with safe_open(str(path / "model.safetensors"), "pt") as fh:
        return {key: fh.get_tensor(key) for key in fh.keys()}  # noqa: SIM118 (a safetensors handle)


def _scores(metric: str, model) -> torch.Tensor:
    """The model's scores of the fixed input of test_checkpoints."""
    with torch.inference_mode():
        return torch.tensor(score_of(metric, model(**fixed_inputs(metric, model.config))))


def tiny_checkpoint(metric: str, folder: Path) -> Path:
    """A tiny checkpoint of ``metric`` in float16, saved as its recipe saves it (GRADE's a full one: no base
    encoder), with a training.json."""
    model_class, config, _ = TINY[metric]
    torch.manual_seed(0)
    model = model_class(config)
    if metric == "grade":
        model.save_pretrained(folder, half=True)
    else:
        save_half_checkpoint(model, folder)
    (folder / "training.json").write_text(json.dumps({"metric": metric, "run": "tiny"}, indent=1) + "\n")
    return folder


@pytest.fixture
def checkpoint(tmp_path) -> Path:
    """A tiny GRADE checkpoint in float16, with a training.json."""
    return tiny_checkpoint("grade", tmp_path / "ckpt")


@pytest.mark.parametrize("metric", sorted(TINY))
def test_quantise_stores_the_large_weights_as_int8_rows_and_the_model_loads_them(metric, tmp_path):
    model_class, _, large = TINY[metric]
    checkpoint = tiny_checkpoint(metric, tmp_path / "ckpt")
    before = _tensors(checkpoint)
    keys = {name: int8_key(name, before) for name in large}
    floats = _scores(metric, load_pretrained(model_class, checkpoint, dtype=torch.float32))
    (checkpoint / "model.safetensors").chmod(0o644)
    data_before = _data_bytes(checkpoint)
    done = quantise_checkpoint(checkpoint, min_params=1000)
    assert (checkpoint / "model.safetensors").stat().st_mode & 0o777 == 0o644
    assert done.modules == large and done.before > done.after == (checkpoint / "model.safetensors").stat().st_size
    after = _tensors(checkpoint)
    assert set(after) == set(before) | {row_scale_name(key) for key in keys.values()}
    # each weight's float16 bytes become one byte a number and four a row
    saved = sum(before[key].numel() - 4 * before[key][..., 0].numel() for key in keys.values())
    assert _data_bytes(checkpoint) == data_before - saved
    for key, tensor in before.items():
        if key in keys.values():  # each value within half a step of its row
            scale = after[row_scale_name(key)]
            assert after[key].dtype == torch.int8 and scale.dtype == torch.float32 and scale.shape == tensor.shape[:-1]
            err = (dequantise_rows(after[key], scale) - tensor.float()).abs()
            assert (err <= scale[..., None] / 2 * (1 + 1e-6)).all(), key
        else:  # everything else as it was (float16)
            assert after[key].dtype == tensor.dtype and torch.equal(after[key], tensor), key

    config = json.loads((checkpoint / "config.json").read_text())
    assert config["int8_weights"] == large
    model = load_pretrained(model_class, checkpoint, dtype=torch.float32)
    int8 = {k: v for k, v in model.state_dict().items() if v.dtype == torch.int8}  # not cast by dtype=float32
    assert set(int8) == set(keys.values())
    assert {n for n, m in model.named_modules() if type(m).__name__ == "Int8RowLinear"} == {
        n for n, k in keys.items() if k != n}
    quantised = _scores(metric, model)
    assert not torch.equal(quantised, floats)
    # close to the float scores: within 5% of what the converted weights contribute (the change of the scores with
    # them read as zero, as weights whose int8 values or scales failed to load would compute), which the scales 10%
    # off exceed. Measured: 0.4% to 1.5% of it; with the scales 10% off, 14% to 19%
    scales = {key: model.get_buffer(row_scale_name(key)) for key in int8}
    kept = {key: scale.clone() for key, scale in scales.items()}
    for scale in scales.values():
        scale.mul_(1.1)
    off = (_scores(metric, model) - floats).abs().max()
    for scale in scales.values():
        scale.zero_()
    contribution = (_scores(metric, model) - floats).abs().max()
    for key, scale in scales.items():
        scale.copy_(kept[key])
    assert torch.equal(_scores(metric, model), quantised)
    assert (quantised - floats).abs().max() <= 0.05 * contribution < off, (quantised, floats, contribution, off)

    record = json.loads((checkpoint / "training.json").read_text())
    assert record["run"] == "tiny" and record[CONVERSIONS_FIELD] == [{
        "command": "dialeval checkpoint quantise --checkpoint CHECKPOINT --min-params 1000",
        "format": "int8 rows, one float32 scale per row", "modules": large,
        "bytes_before": done.before, "bytes_after": done.after}]


def test_an_exported_quantised_checkpoint_keeps_its_int8_rows_and_loads_without_dialeval(tmp_path):
    """BERT-RUBER's, PONE's and DynaEval's quantised checkpoints export with their folder's copy of the shared model
    code: the folder keeps the int8 weights (linear layers', the bilinear matrix, the LSTM's and graph weights), and
    loads with trust_remote_code in a process that cannot import dialeval, building them as int8 rows and scoring as
    the checkpoint does in process. (GRADE's and RADE's: their
    shipped checkpoints, test_checkpoints.py.)"""
    folders, expected = {}, {}
    for metric in ("bert_ruber", "dynaeval", "pone"):
        model_class, _, large = TINY[metric]
        checkpoint = tiny_checkpoint(metric, tmp_path / metric)
        quantise_checkpoint(checkpoint, min_params=1000)
        expected[metric] = {"scores": _scores(metric, load_pretrained(model_class, checkpoint,
                                                                       dtype=torch.float32)).tolist()}
        folders[metric] = str(export_checkpoint(metric, checkpoint, tmp_path / "exported" / metric))
        exported = Path(folders[metric])
        for shared in ("modeling_shared.py", "configuration_shared.py"):
            assert (exported / shared).read_bytes() == (ROOT / "modeling" / "shared" / shared).read_bytes(), shared
        stored = _tensors(exported)
        expected[metric]["int8"] = sorted(int8_key(name, stored) for name in large)
        assert sorted(k for k, v in stored.items() if v.dtype == torch.int8) == expected[metric]["int8"]
        assert json.loads((exported / "config.json").read_text())["int8_weights"] == large
    code = inspect.getsource(fixed_inputs) + inspect.getsource(score_of) + textwrap.dedent("""
        for metric, folder in json.loads(args[0]).items():
            model = AutoModel.from_pretrained(folder, trust_remote_code=True, dtype=torch.float32).eval()
            with torch.inference_mode():
                scores = score_of(metric, model(**fixed_inputs(metric, model.config)))
            int8 = sorted(k for k, v in model.state_dict().items() if v.dtype == torch.int8)
            result[metric] = {"scores": scores, "module": type(model).__module__, "int8": int8}
    """)
    result = run_without_dialeval(code, json.dumps(folders), cwd=tmp_path)
    assert result["dialeval_loaded"] == []
    for metric, folder in folders.items():
        got = result[metric]
        assert got["module"].startswith("transformers_modules") and got["int8"] == expected[metric]["int8"], metric
        assert got["scores"] == pytest.approx(expected[metric]["scores"], abs=1e-6), metric


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
        assert f"{folder}: " in res.output and f" -> {size:,} bytes (12 weights as int8 rows: " in res.output
    res = CliRunner().invoke(app, ["checkpoint", "quantise", "--checkpoint", str(checkpoint)])
    assert res.exit_code == 0
    assert "no float weight of 65,536 numbers or more is left to convert; unchanged" in res.output
    options = {p.opts[0]: p for p in get_command(app).commands["checkpoint"].commands["quantise"].params}
    assert options["--min-params"].default == DEFAULT_MIN_PARAMS == 65_536  # the library's default, written twice
