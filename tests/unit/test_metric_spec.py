"""One MetricSpec per metric: every place that lists metrics reads the specs, so a metric registered from here, one
declaration, is scored, listed, trained and demonstrated like the shipped ones; the shipped specs match their
folders."""

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

import dialeval
from dialeval.cli import app
from dialeval.cli.train import add_train_commands, recipes
from dialeval.errors import UnknownNameError
from dialeval.interfaces.space import SPACES
from dialeval.scoring import registry
from dialeval.scoring.base import Scorer
from dialeval.scoring.spec import (
    CombinationExportSpec,
    ExportSpec,
    MetricSpec,
    RecipeSpec,
    SpaceSpec,
    import_object,
)
from dialeval.training.options import RecipeOptions, option

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


# -- a tiny metric, declared from a test --------------------------------------------------------------------------
class WordCountScorer(Scorer):
    """The number of words of the response (a metric small enough to declare in a test)."""

    name = "word_count"

    def _score_items(self, items, *, batch_size, progress_bar):
        return np.array([len(item.response.split()) for item in items], dtype=np.float64)


@dataclass(kw_only=True)
class WordCountOptions(RecipeOptions):
    """Count words (a recipe small enough to declare in a test; no training loop)."""

    seed: int = option(1, help="Unused.")
    batch_size: int = option(1, help="Unused.", min=1)


def run(opts: WordCountOptions) -> dict:
    """The tiny recipe: writes a summary into the run folder."""
    Path(opts.output_dir).mkdir(parents=True, exist_ok=True)
    summary = {"finished": True, "words": 3}
    (Path(opts.output_dir) / "summary.json").write_text(json.dumps(summary))
    return summary


def summary_line(opts: WordCountOptions, summary: dict) -> str:
    return f"counted {summary['words']} words into {opts.output_dir}"


TINY = MetricSpec(
    name="word_count",
    scorer=f"{__name__}:WordCountScorer",
    kind="baseline",
    aliases=("word-count",),
    recipes=(RecipeSpec("word-count", f"{__name__}:WordCountOptions", __name__, f"{__name__}:summary_line"),),
    space=SpaceSpec(title="Word count", description="Words of the response.", score_label="words"),
    evaluate_module=True,
)


@pytest.fixture
def tiny_metric():
    registry.register(TINY)
    try:
        yield TINY
    finally:
        registry.unregister(TINY.name)


def test_a_registered_spec_is_scored_listed_trained_and_demonstrated_like_the_shipped_metrics(tiny_metric, tmp_path):
    assert "word_count" in dialeval.available_metrics()
    assert registry.metric_spec("word-count") is TINY  # the alias names the same metric
    out = dialeval.score("word-count", contexts=["Hi there"], responses=["Hello to you"])
    assert out.scores == [3.0] and out.signature.startswith("metric:word_count|")
    assert "word_count" in runner.invoke(app, ["list"]).output

    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"id": "a", "context": "Hi", "response": "one two"}) + "\n")
    scored = runner.invoke(app, ["score", "--metric", "word_count", "-i", str(source), "-q"])
    assert scored.exit_code == 0, scored.output
    assert "a\t2.0000" in scored.output

    commands = recipes()
    assert commands["word-count"] == ("word_count", TINY.recipes[0])
    trained = runner.invoke(add_train_commands(typer.Typer(), commands), ["word-count", "--output-dir",
                                                                          str(tmp_path / "run")])
    assert trained.exit_code == 0, trained.output
    assert f"counted 3 words into {tmp_path / 'run'}" in trained.output

    assert "word_count" in SPACES and SPACES["word_count"].answer("Hi", "one two three").startswith("words: 3.0000")


def test_a_removed_spec_is_gone_everywhere(tiny_metric):
    registry.unregister("word_count")
    try:
        with pytest.raises(UnknownNameError, match="word-count"):
            registry.metric_spec("word-count")
        assert "word_count" not in SPACES and "word-count" not in recipes()
    finally:
        registry.register(TINY)


def test_a_space_without_an_export_is_refused_by_the_release_before_any_work(tiny_metric, tmp_path):
    from dialeval.hub.release import ReleaseError, release

    with pytest.raises(ReleaseError, match="word_count has a Space but no export"):
        release(tmp_path / "out", ["word_count"], wheel=tmp_path / "none.whl")
    assert not (tmp_path / "out").exists()


def test_names_and_aliases_are_unique(tiny_metric):
    with pytest.raises(ValueError, match="taken already"):
        registry.register(MetricSpec(name="other", scorer=TINY.scorer, kind="baseline", aliases=("word_count",)))
    with pytest.raises(ValueError, match="taken already"):
        registry.register(MetricSpec(name="grade", scorer=TINY.scorer, kind="baseline"))


@pytest.mark.parametrize("bad, message", [
    (dict(name="no spaces"), "letters, digits"),
    (dict(kind="neural"), "kind must be"),
    (dict(space=SpaceSpec(title="t", description="d", score_label="s")), "evaluate module"),
    (dict(kind="combination", export=ExportSpec("m:Model")), "a combination exports with a CombinationExportSpec"),
    (dict(kind="learned", export=CombinationExportSpec("m:members")), "any other metric with an ExportSpec"),
])
def test_a_malformed_spec_is_refused_when_declared(bad, message):
    with pytest.raises(ValueError, match=message):
        MetricSpec(**{"name": "x", "scorer": "m:C", "kind": "baseline", **bad})


# -- the shipped specs agree with their folders ---------------------------------------------------------------------
SHIPPED = [s for s in registry.all_specs() if s.name != TINY.name]


@pytest.mark.parametrize("spec", SHIPPED, ids=lambda s: s.name)
def test_each_shipped_spec_names_classes_that_exist_and_folders_that_are_there(spec):
    scorer = spec.scorer_class()
    assert scorer.name == spec.name
    for recipe in spec.recipes:
        assert issubclass(recipe.options_class(), RecipeOptions)
        assert callable(import_object(recipe.summary_line))
    if isinstance(spec.export, ExportSpec):
        assert hasattr(import_object(spec.export.model_class), "from_pretrained")
    elif spec.export is not None:
        assert isinstance(spec.export, CombinationExportSpec) and spec.kind == "combination"
        assert callable(import_object(spec.export.members))
    folder = ROOT / "metrics" / spec.name
    assert folder.is_dir() == spec.evaluate_module, f"metrics/{spec.name}/ and the spec's evaluate_module disagree"
    if spec.evaluate_module:
        files = {"README.md", "requirements.txt", f"{spec.name}.py"} | ({"app.py"} if spec.space else set())
        assert files <= {p.name for p in folder.iterdir()}
        assert (ROOT / "hub_cards" / "results" / f"{spec.name}.json").is_file()
    if spec.kind == "learned":
        assert (ROOT / "dialeval" / "checkpoints" / scorer.checkpoint_dir / "default" / "config.json").is_file()


def test_every_package_a_spec_needs_is_installed():
    packages = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    metric_packages = {p.parent.name for p in (ROOT / "dialeval" / "metrics").glob("*/spec.py")}
    missing = [f"dialeval.metrics.{m}" for m in sorted(metric_packages) if f"dialeval.metrics.{m}" not in packages]
    missing += [f"dialeval.evaluate_modules.{s.name}" for s in SHIPPED
                if s.evaluate_module and f"dialeval.evaluate_modules.{s.name}" not in packages]
    missing += [f"dialeval.modeling.{p.name}" for p in (ROOT / "modeling").iterdir()
                if (p / "__init__.py").is_file() and f"dialeval.modeling.{p.name}" not in packages]
    assert not missing, f"pyproject.toml's packages lack {missing}"


def test_the_training_commands_are_the_specs_recipes():
    commands = recipes()
    assert sorted(commands) == sorted(r.command for s in SHIPPED for r in s.recipes)
    assert commands["bert-ruber"][0] == "bert_ruber" and commands["amr-parser"][0] == "amr_eval"


def test_a_card_whose_stored_results_miss_a_benchmark_of_its_spec_is_refused(tmp_path):
    from dialeval.hub.cards import CardError, load_results

    known = dialeval.available_metrics()
    stored = load_results("grade", known)
    kept = [r for r in stored if not (r["metric"] == "grade" and r["benchmark"] == "sanity_turn")]
    target = tmp_path / "hub_cards" / "results" / "grade.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(kept))
    with pytest.raises(CardError, match="no result of 'grade' on sanity_turn"):
        load_results("grade", known, root=tmp_path)
