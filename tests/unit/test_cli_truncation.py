"""`dialeval score` says once per run what it cut (items, the limit, the side), however many chunks the run has, and
shows no progress bar when stderr is not a terminal. A fake metric declared here cuts long responses; no model."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from dialeval.cli.app import app
from dialeval.scoring import registry
from dialeval.scoring.base import Scorer
from dialeval.scoring.spec import MetricSpec

runner = CliRunner()


class FakeCutter(Scorer):
    """Reads the first five words of a response; its score is how many it read."""

    name = "fake_cutter"

    def _score_items(self, items, *, batch_size, progress_bar):
        self._cut = [k for k, it in enumerate(items) if len(it.response.split()) > 5]
        return np.array([min(5, len(it.response.split())) for it in items], dtype=np.float64)

    def _metadata(self):
        return {"truncated_items": list(self._cut)}

    def truncation_rule(self):
        return "5 words per response, each keeping its first"


@pytest.fixture
def cutter():
    spec = registry.register(MetricSpec(name="fake_cutter", scorer=f"{__name__}:FakeCutter", kind="baseline"))
    try:
        yield spec
    finally:
        registry.unregister(spec.name)


@pytest.mark.parametrize("with_output", [False, True])
def test_a_run_says_once_how_many_items_it_cut_and_where(cutter, tmp_path, with_output):
    rows = [{"id": str(i), "context": "Hi", "response": r} for i, r in
            enumerate(["Hello.", "one two three four five six", "Fine.", "a b c d e f g", "h i j k l m n o"])]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["score", "--metric", "fake_cutter", "-i", str(source), "--chunk-size", "2"]
    res = runner.invoke(app, args + (["-o", str(tmp_path / "out.jsonl")] if with_output else []))
    assert res.exit_code == 0, res.output
    notes = [line for line in res.stderr.splitlines() if line.startswith("note:")]
    assert notes == ["note: fake_cutter: 3 of 5 items were cut to fit 5 words per response, each keeping its first; "
                     "each is scored on what was kept"]
    assert "3 truncated items" in res.stderr.splitlines()[-1]
    assert "%|" not in res.stderr  # stderr is not a terminal here: no progress bar


def test_a_run_that_cut_nothing_says_nothing_about_it(cutter, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"context": "Hi", "response": "Hello."}) + "\n")
    res = runner.invoke(app, ["score", "--metric", "fake_cutter", "-i", str(source)])
    assert res.exit_code == 0 and "note:" not in res.stderr and "0 truncated items" in res.stderr
