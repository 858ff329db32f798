"""`dialeval scale-benchmark` at a tiny size: its synthetic rows come from DailyDialog, and every run it reports
(the bare encoder and the metric) scored every row in a fresh process."""

import json

import pytest
from typer.testing import CliRunner

from dialeval.cli import app
from dialeval.scale.benchmark import BARE_ENCODER, synthetic_rows

pytestmark = pytest.mark.data


def test_synthetic_rows_are_real_turns_and_the_same_every_time(data_dir):
    first = list(synthetic_rows(50, data_dir))
    assert first == list(synthetic_rows(50, data_dir))
    assert [r["id"] for r in first] == [f"s{k}" for k in range(50)]
    turns = {t for line in (data_dir / "dailydialog/derived/train.jsonl").read_text().splitlines()
             for t in json.loads(line)["utterances"]}
    for row in first:
        assert 1 <= len(row["context"]) <= 3 and set(row["context"]) <= turns
        assert row["response"] in turns and row["references"][0] in turns
    assert sum(r["response"] == r["references"][0] for r in first) >= 25  # every other row keeps the real turn


def test_scale_benchmark_reports_each_run(data_dir, tmp_path):
    res = CliRunner().invoke(app, ["scale-benchmark", "--metric", "utterance_length", "--sizes", "40",
                                   "--processes", "1", "--work-dir", str(tmp_path), "--data-dir", str(data_dir),
                                   "--chunk-size", "16"])
    assert res.exit_code == 0, res.output
    runs = json.loads((tmp_path / "results.json").read_text())["runs"]
    assert [(r["metric"], r["items"], r["processes"]) for r in runs] == [(BARE_ENCODER, 40, 1),
                                                                         ("utterance_length", 40, 1)]
    assert all(r["items_per_second"] > 0 and r["peak_rss_mib"] > 50 for r in runs)
    assert "utterance_length" in res.output and "x" in res.output.splitlines()[1]
    assert not list(tmp_path.glob("*.jsonl.dialeval.json"))  # the scores are removed; results.json stays
