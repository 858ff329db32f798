"""Training options declared once: the ``dialeval train`` commands are generated from the recipes' dataclasses (one
name, one default, one help text per option), and the CLI and the Python API save the same options."""

from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, fields
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from dialeval.cli import app
from dialeval.cli.train import recipes, trains_through_loop
from dialeval.training import (
    DeviceUnavailable,
    RecipeOptions,
    TrainingOptions,
    TrainingOptionsError,
    option,
    training_device,
)
from dialeval.training.options import option_help, option_specs, typer_command

RECIPES = {command: recipe for command, (_, recipe) in recipes().items()}
RECIPE_NAMES = sorted(RECIPES)
#: The training loop's flags: every recipe that trains through it has them, the ensemble (fitted in closed form) none.
LOOP_FLAGS = {"--epochs", "--learning-rate", "--eval-every", "--max-steps", "--max-minutes", "--gradient-accumulation",
              "--precision", "--fused-optimizer", "--dataloader-workers"}


def _click_command(name: str):
    import typer

    group = typer.main.get_command(app)
    return group.commands["train"].commands[name]


def test_every_recipe_is_registered():
    assert RECIPE_NAMES == ["amr-eval", "amr-parser", "bert-ruber", "dynaeval", "ensemble", "grade", "pone", "rade"]


@pytest.mark.parametrize("name", RECIPE_NAMES)
def test_the_command_exposes_every_field_with_its_default_and_help(name):
    options_cls = RECIPES[name].options_class()
    params = {p.name: p for p in _click_command(name).params}
    specs = option_specs(options_cls)
    assert sorted(params) == sorted(f.name for f in fields(options_cls)) == sorted(s.name for s in specs)
    for spec in specs:
        param = params[spec.name]
        assert param.help == option_help(options_cls, spec.name) and param.help
        assert f"--{spec.flag}" in param.opts
        if spec.default is MISSING:
            assert param.required
        else:
            default = param.default.value if hasattr(param.default, "value") else param.default
            assert default == spec.default, spec.name
        if spec.base is bool:
            assert param.secondary_opts == [f"--no-{spec.flag}"]


def test_documented_flags_keep_their_spelling():
    pone = {p.name: p.opts for p in _click_command("pone").params}
    assert pone["temperature"] == ["--t"] and pone["candidates"] == ["--h"] and pone["k"] == ["--k"]
    grade = {p.name: (p.opts, p.secondary_opts) for p in _click_command("grade").params}
    assert grade["use_graph"] == (["--graph"], ["--no-graph"])
    assert grade["use_hop_attention"] == (["--hop-attention"], ["--no-hop-attention"])
    for name in RECIPE_NAMES:  # one spelling per concept across the recipes
        flags = {o for p in _click_command(name).params for o in p.opts}
        assert {"--output-dir", "--data-dir", "--seed", "--batch-size", "--threads", "--device", "--resume",
                "--prepare-only"} <= flags
        assert flags & LOOP_FLAGS == (LOOP_FLAGS if trains_through_loop(RECIPES[name]) else set()), name
        assert "--lr" not in flags


def test_only_the_ensemble_lacks_the_loop_and_its_options():
    assert [name for name in RECIPE_NAMES if not trains_through_loop(RECIPES[name])] == ["ensemble"]
    ensemble = RECIPES["ensemble"].options_class()
    assert issubclass(ensemble, RecipeOptions) and not issubclass(ensemble, TrainingOptions)
    shared = {f.name for f in fields(RecipeOptions)}
    assert {f.name for f in fields(TrainingOptions)} - shared == {flag[2:].replace("-", "_") for flag in LOOP_FLAGS}


@pytest.mark.parametrize("name", RECIPE_NAMES)
def test_help_exits_zero(name):
    res = CliRunner().invoke(app, ["train", name, "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "--output-dir" in res.output and "--prepare-only" in res.output
    assert ("--learning-rate" in res.output and "--max-minutes" in res.output) == trains_through_loop(RECIPES[name])


def test_defaults_that_trained_the_shipped_checkpoints():
    """The CLI defaults of before the options were generated (they trained the shipped checkpoints)."""
    from dialeval.metrics.bert_ruber.options import BertRuberTrainingOptions
    from dialeval.metrics.dynaeval.options import DynaEvalTrainingOptions
    from dialeval.metrics.grade.options import GradeTrainingOptions
    from dialeval.metrics.pone.options import PoneTrainingOptions

    grade = GradeTrainingOptions(output_dir="x")
    assert (grade.max_positives, grade.max_val_positives, grade.epochs, grade.batch_size, grade.learning_rate,
            grade.head_learning_rate, grade.trainable_encoder_layers, grade.max_seq_length, grade.eval_every,
            grade.seed) == (12_000, 500, 1, 16, 2e-5, 1e-4, 2, 128, 250, 71)
    dyna = DynaEvalTrainingOptions(output_dir="x")
    assert (dyna.max_dialogues, dyna.max_val_dialogues, dyna.max_test_dialogues, dyna.perturbations, dyna.epochs,
            dyna.batch_size, dyna.learning_rate, dyna.weight_decay, dyna.window_past, dyna.window_future, dyna.seed,
            dyna.threads) == (0, 500, 500, 20, 2, 128, 0.002, 1e-8, 4, 4, 345678, 1)
    ruber = BertRuberTrainingOptions(output_dir="x")
    assert (ruber.max_positives, ruber.max_val_positives, ruber.context_turns, ruber.epochs, ruber.batch_size,
            ruber.learning_rate, ruber.weight_decay, ruber.selection, ruber.seed, ruber.threads) == (
        30_000, 1_000, 2, 20, 256, 1e-3, 1e-4, "val_accuracy", 11, 0)
    pone = PoneTrainingOptions(output_dir="x")
    assert (pone.epochs, pone.stage2_epochs, pone.k, pone.candidates, pone.temperature, pone.uniform_every,
            pone.stage2_learning_rate, pone.fuzzy_threshold, pone.relabel_every, pone.max_filter_rounds) == (
        10, 10, 2, 200, 0.05, 2, 1e-4, 0.05, 2, 5)


def _capture(monkeypatch, name: str) -> dict:
    """Replace the recipe's ``run`` so the command only builds its options."""
    import importlib

    seen: dict = {}
    module = importlib.import_module(RECIPES[name].module)

    def fake_run(opts):
        seen["opts"] = opts
        raise SystemExit(0)

    monkeypatch.setattr(module, "run", fake_run)
    return seen


def test_cli_values_reach_the_dataclass(monkeypatch, tmp_path):
    seen = _capture(monkeypatch, "pone")
    res = CliRunner().invoke(app, ["train", "pone", "--output-dir", str(tmp_path), "--t", "0.2", "--h", "50",
                                   "--k", "1", "--no-label-filter", "--learning-rate", "0.01", "--selection",
                                   "val_loss", "--max-positives", "0", "--device", "cpu", "--threads", "1"])
    assert res.exit_code == 0, res.output
    opts = seen["opts"]
    assert (opts.temperature, opts.candidates, opts.k, opts.label_filter, opts.learning_rate) == (0.2, 50, 1, False,
                                                                                                0.01)
    assert opts.selection == "val_loss" and isinstance(opts.selection, str) and opts.max_positives == 0
    assert opts.generator is None and opts.progress_bar is None and opts.stage2_epochs == 10


def test_the_command_reports_a_prepared_folder_and_exits_3_when_stopped(monkeypatch, tmp_path):
    import importlib

    module = importlib.import_module(RECIPES["dynaeval"].module)
    summaries = {True: {"prepared": True, "files": {"a": "0", "b": "1"}},
                 False: {"finished": False, "steps": 40, "total_steps": 100}}
    monkeypatch.setattr(module, "run", lambda opts: summaries[opts.prepare_only])
    base = ["train", "dynaeval", "--output-dir", str(tmp_path)]
    prepared = CliRunner().invoke(app, [*base, "--prepare-only"])
    assert prepared.exit_code == 0 and f"prepared {tmp_path} (2 files" in prepared.output
    stopped = CliRunner().invoke(app, [*base, "--max-minutes", "5"])
    assert stopped.exit_code == 3, stopped.output
    assert "stopped at step 40 of 100" in stopped.output and "run the same command again" in stopped.output


@pytest.mark.parametrize("args, message", [
    (["--selection", "best"], ("Invalid value for '--selection': Value error, 'best' is not one of "
                               "'val_accuracy', 'val_loss'")),
    (["--epochs", "0"], "Invalid value for '--epochs': Input should be greater than or equal to 1"),
    (["--batch-size", "many"], "Invalid value for '--batch-size': Input should be a valid integer"),
    (["--no-such-option", "1"], "No such option: --no-such-option"),
])
def test_cli_refuses_bad_values_with_a_usage_error(args, message, tmp_path):
    res = CliRunner().invoke(app, ["train", "bert-ruber", "--output-dir", str(tmp_path), *args])
    text = " ".join(res.output.replace("│", " ").split())  # the message without its box
    assert res.exit_code == 2 and message in text
    assert not any(tmp_path.iterdir())  # nothing ran


def test_values_the_cli_cannot_check_raise_a_clear_error(tmp_path):
    """Cross-option rules and the device form are checked by the dataclass, before anything runs: a
    TrainingOptionsError (one of the user-error family the CLI front door prints as one line)."""

    def error(args: list[str]) -> str:
        res = CliRunner().invoke(app, ["train", *args, "--output-dir", str(tmp_path)])
        assert res.exit_code != 0
        if isinstance(res.exception, SystemExit):  # the front door printed it
            return res.output
        assert isinstance(res.exception, TrainingOptionsError)
        return str(res.exception)

    assert "it needs augment=True (--augment)" in error(["pone", "--no-augment"])
    assert "device must be cpu, cuda, cuda:N or mps" in error(["grade", "--device", "gpu"])
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("kwargs, message", [
    ({"selection": "best"}, "selection must be one of 'val_accuracy', 'val_loss', got 'best'"),
    ({"selection": None}, "selection must be one of 'val_accuracy', 'val_loss', got None"),
    ({"activation": "gelu"}, "activation must be one of 'tanh', 'relu' or None, got 'gelu'"),
    ({"epochs": 0}, "epochs must be >= 1, got 0"),
    ({"max_positives": None}, "max_positives must be an integer, got None"),
    ({"learning_rate": "fast"}, "learning_rate must be a number, got 'fast'"),
    ({"resume": "yes"}, "resume must be true or false, got 'yes'"),
    ({"device": "cuda:x"}, "device must be cpu, cuda, cuda:N or mps"),
])
def test_python_api_validates_like_the_cli(kwargs, message):
    from dialeval.metrics.bert_ruber.options import BertRuberTrainingOptions

    with pytest.raises(TrainingOptionsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        BertRuberTrainingOptions(output_dir="x", **kwargs)
    with pytest.raises(TypeError, match="unexpected keyword argument 'lr'"):
        BertRuberTrainingOptions(output_dir="x", lr=0.1)


def test_paths_and_integers_are_stored_as_json_types(tmp_path):
    from dialeval.metrics.bert_ruber.options import BertRuberTrainingOptions

    opts = BertRuberTrainingOptions(output_dir=tmp_path, learning_rate=1)
    assert opts.output_dir == str(tmp_path) and isinstance(opts.learning_rate, float)
    json.dumps(asdict(opts))


def test_a_field_without_help_is_refused():
    @dataclass(kw_only=True)
    class Bad(TrainingOptions):
        seed: int = 1
        epochs: int = 1
        batch_size: int = 1
        learning_rate: float = 0.1
        undocumented: int = 3

    with pytest.raises(TypeError, match="Bad.undocumented has no help text"):
        option_specs(Bad)

    @dataclass(kw_only=True)
    class Good(Bad):
        undocumented: int = option(3, help="Now documented.")

    assert option_help(Good, "undocumented") == "Now documented." and option_help(Good, "seed").startswith("Random")
    assert typer_command(Good, lambda opts: None, help="x").__doc__ == "x"


def test_training_device():
    assert training_device("cpu") == torch.device("cpu")
    assert training_device(None).type in {"cpu", "cuda", "mps", "xpu"}
    if not torch.cuda.is_available():
        with pytest.raises(DeviceUnavailable, match="no CUDA device"):
            training_device("cuda:1")
    else:
        with pytest.raises(DeviceUnavailable, match="CUDA device"):
            training_device(f"cuda:{torch.cuda.device_count()}")
    with pytest.raises(ValueError, match="got 'cuda1'"):
        training_device("cuda1")


def test_a_run_looks_up_the_device_and_sets_up_before_preparing_and_sets_its_threads(tmp_path):
    from dialeval.training.recipe import run_recipe

    calls = []

    class Options:  # the fields run_recipe reads
        output_dir, device, prepare_only, threads = str(tmp_path), "cuda:1", False, 1

        def check(self):
            calls.append("checked")

    def prepare(opts):
        calls.append("prepared")
        return {"metric": "x"}

    def setup(opts):  # as a recipe's: the encoder on the training device
        training_device(opts.device)
        calls.append("set up")
        return "encoder"

    def train(run):
        calls.append(f"trained with {run.setup} on {torch.get_num_threads()} thread(s)")
        return {"finished": True}

    if torch.cuda.device_count() < 2:
        with pytest.raises(DeviceUnavailable, match="'cuda:1'"):
            run_recipe(Options(), metric="x", prepare=prepare, setup=setup, train=train)
        assert calls == ["checked"]  # nothing set up or prepared
    only = Options()
    only.prepare_only = True  # no device needed to prepare
    assert run_recipe(only, metric="x", prepare=prepare, setup=setup, train=train) == {"prepared": True, "metric": "x"}
    assert calls[-2:] == ["checked", "prepared"]
    on_cpu, before = Options(), torch.get_num_threads()
    on_cpu.device = "cpu"
    assert run_recipe(on_cpu, metric="x", prepare=prepare, setup=setup, train=train) == {"finished": True}
    assert calls[-4:] == ["checked", "set up", "prepared", "trained with encoder on 1 thread(s)"]
    assert torch.get_num_threads() == before


def _write_dailydialog(root: Path) -> Path:
    from test_pone import (
        _write_dailydialog as write,  # the tiny DailyDialog of the PONE tests (same folder)
    )

    return write(root)


def test_cli_and_python_api_write_identical_options(tmp_path):
    """A tiny BERT-RUBER run through ``dialeval train`` and the same through the Python API save the same options."""
    from dialeval.metrics.bert_ruber.train import BertRuberTrainingOptions, run

    data = _write_dailydialog(tmp_path / "data")
    store = tmp_path / "store"
    common = ["--data-dir", str(data), "--epochs", "1", "--batch-size", "8", "--max-val-positives", "12",
              "--device", "cpu", "--threads", "1", "--no-progress-bar", "--embedding-dir", str(store)]
    cli_out, api_out = tmp_path / "cli", tmp_path / "api"
    res = CliRunner().invoke(app, ["train", "bert-ruber", "--output-dir", str(cli_out), *common])
    assert res.exit_code == 0, res.output
    assert f"checkpoint: {cli_out}/best" in res.output
    run(BertRuberTrainingOptions(output_dir=str(api_out), data_dir=str(data), epochs=1, batch_size=8,
                                 max_val_positives=12, device="cpu", threads=1, progress_bar=False,
                                 embedding_dir=str(store)))

    def saved(out: Path) -> tuple[dict, dict]:
        options = json.loads((out / "summary.json").read_text())["options"]
        args = json.loads((out / "training_args.json").read_text())
        assert options["output_dir"] == str(out)
        options.pop("output_dir"), args["options"].pop("output_dir"), args["loop"].pop("output_dir")
        return options, args

    cli_options, cli_args = saved(cli_out)
    api_options, api_args = saved(api_out)
    assert cli_options == api_options == cli_args["options"] == api_args["options"]
    assert cli_args["loop"] == api_args["loop"] and cli_args["loop"]["device"] == "cpu"
    assert cli_options["threads"] == 1 and cli_options["max_positives"] == 30_000
    assert set(cli_options) | {"output_dir"} == {f.name for f in fields(BertRuberTrainingOptions)}
    weights = [(out / "best" / "model.safetensors").read_bytes() for out in (cli_out, api_out)]
    assert weights[0] == weights[1]


class _Stop(Exception):
    pass


def test_the_loop_trains_on_the_device_asked_for(tmp_path, monkeypatch):
    from dialeval.training import TrainingArguments, loop, train

    @dataclass
    class Tiny:
        note: str = "tiny"

    def run(device: str | None):
        model = torch.nn.Linear(2, 1)
        args = TrainingArguments(output_dir=str(tmp_path / str(device)), epochs=1, eval_every=1, device=device)
        train(model, args=args, options=Tiny(), epoch_batches=lambda epoch: [torch.ones(1, 2)], steps_per_epoch=1,
              loss_fn=lambda m, batch: m(batch).sum(), evaluate_fn=lambda m: {"v": 0.0},
              save_best=lambda m, path: None, selection_key="v", greater_is_better=True)
        return model

    if torch.cuda.device_count() < 2:
        with pytest.raises(DeviceUnavailable, match="'cuda:1'"):  # never a silent fall back to the CPU
            run("cuda:1")
    asked = []
    monkeypatch.setattr(loop, "training_device", lambda spec: asked.append(spec) or torch.device("cpu"))
    model = run("cuda:1")
    assert asked == ["cuda:1"] and next(model.parameters()).device == torch.device("cpu")
    saved = json.loads((tmp_path / "cuda:1" / "training_args.json").read_text())
    assert saved["options"] == {"note": "tiny"} and saved["loop"]["device"] == "cuda:1"


@pytest.mark.parametrize("recipe", ["grade", "bert-ruber", "pone"])
def test_recipes_encode_on_the_training_device(recipe, tmp_path, monkeypatch):
    """GRADE, BERT-RUBER and PONE build their encoder on the training device (they used to pin it to the CPU)."""
    import importlib

    module = importlib.import_module({"grade": "dialeval.metrics.grade.train",
                                      "bert-ruber": "dialeval.metrics.bert_ruber.train",
                                      "pone": "dialeval.metrics.bert_ruber.train"}[recipe])
    asked = []

    def encoder(*args, device=None, **kwargs):
        asked.append(device)
        raise _Stop

    monkeypatch.setattr(module, "Encoder", encoder)
    monkeypatch.setattr(module, "training_device", lambda spec: f"resolved {spec}")
    with pytest.raises(_Stop):
        RECIPES[recipe].run(RECIPES[recipe].options_class()(output_dir=str(tmp_path), device="cuda:1"))
    assert asked == ["resolved cuda:1"]
