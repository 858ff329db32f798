"""The words that count or list the learned metrics agree with the specs (project issue 36): the package docstrings,
the READMEs and the command line's module docstring."""

from __future__ import annotations

import re
from importlib import import_module

import pytest
import typer
from conftest import ROOT

import dialeval.metrics
import dialeval.scoring.learned
from dialeval.scoring.registry import all_specs

NUMBER_WORDS = {4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}


def _learned() -> tuple[set[str], set[str]]:
    """(the learned metrics with their own module and card, every learned metric name) as the specs declare them."""
    learned = [s for s in all_specs() if s.kind == "learned"]
    return {s.name for s in learned if s.evaluate_module}, {s.name for s in learned}


def _texts() -> dict[str, str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return {
        "dialeval/metrics/__init__.py": dialeval.metrics.__doc__,
        "dialeval/scoring/learned.py": dialeval.scoring.learned.__doc__.split("\n\n")[0],
        "metrics/README.md": (ROOT / "metrics" / "README.md").read_text(encoding="utf-8").split("\n\n")[1],
        "README.md": readme.split("\n\n")[2],  # the paragraph that says what the project covers
    }


def test_the_specs_declare_the_metrics_the_words_count():
    main, every = _learned()
    assert len(main) in NUMBER_WORDS and every - main == {"bert_ruber_unref"}


@pytest.mark.parametrize("where", sorted(_texts()))
def test_each_text_names_and_counts_every_learned_metric(where):
    main, _ = _learned()
    text = _texts()[where]
    words = set(re.findall(r"[a-z_]+", text))
    assert main <= words, f"{where} misses {sorted(main - words)}"
    assert re.search(rf"\b{NUMBER_WORDS[len(main)]}\b", text), f"{where} does not say {NUMBER_WORDS[len(main)]}"
    assert "(grade, dynaeval, bert_ruber, pone)" not in text and "GRADE, DynaEval, BERT-RUBER and PONE" not in text


def test_the_metric_packages_say_where_a_metric_is_declared():
    doc = dialeval.metrics.__doc__
    assert "``spec.py``" in doc and "MetricSpec" in doc and "dialeval.scoring.registry" in doc
    assert "bert_ruber_unref" in doc


def test_the_evaluate_module_folders_are_the_ones_the_readme_lists():
    main, _ = _learned()
    combined = {s.name for s in all_specs() if s.kind == "combination" and s.evaluate_module}
    folders = {p.parent.name for p in (ROOT / "metrics").glob("*/README.md")}
    listed = set(re.findall(r"`([a-z_]+)`", _texts()["metrics/README.md"].split(":")[0]))
    assert combined == {"ensemble"} and folders == main | combined == listed


def test_the_command_line_docstring_names_every_command():
    module = import_module("dialeval.cli.app")  # the module: ``dialeval.cli.app`` is also the name of its Typer app
    commands = set(typer.main.get_command(module.app).commands)
    named = set(re.findall(r"``([a-z-]+)(?: \.\.\.)?``", module.__doc__.split("\n\n")[0]))
    assert commands == named, (sorted(commands - named), sorted(named - commands))
