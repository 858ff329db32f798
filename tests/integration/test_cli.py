"""The command line: `dialeval score`, `benchmark`, `report`, `list`."""

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dialeval.cli import app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "dialeval" / "resources" / "example_dialogues.jsonl"
CONVERSATIONS = ROOT / "dialeval" / "resources" / "example_conversations.jsonl"
runner = CliRunner()


def test_score_jsonl_writes_every_row_in_order(tmp_path):
    out = tmp_path / "scored.jsonl"
    res = runner.invoke(app, ["score", "--metric", "bertscore", "--input", str(EXAMPLES), "--output", str(out)])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    src = [json.loads(line) for line in EXAMPLES.read_text().splitlines()]
    assert [r["id"] for r in rows] == [r["id"] for r in src]
    assert all(isinstance(r["score"], float) for r in rows)
    assert "signature: metric:bertscore|" in res.output


def test_score_dialogues_and_csv_output(tmp_path):
    out = tmp_path / "conv.csv"
    res = runner.invoke(app, ["score", "--metric", "context_cosine", "--input", str(CONVERSATIONS), "-o", str(out)])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(out.open()))
    assert [r["id"] for r in rows] == ["conv-good", "conv-bad"]
    assert float(rows[0]["score"]) > float(rows[1]["score"])


def test_score_csv_input_with_turn_separator(tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("id,context,response\na,hi there|||how are you?,fine thanks\nb,what is your name?,my name is Bob\n")
    res = runner.invoke(app, ["score", "--metric", "context_cosine", "-i", str(src), "--turn-separator", "|||"])
    assert res.exit_code == 0, res.output
    scored = [line.split("\t")[0] for line in res.output.splitlines() if "\t" in line]
    assert scored == ["a", "b"]


def test_score_bad_row_names_index_and_field(tmp_path):
    src = tmp_path / "bad.jsonl"
    src.write_text('{"context": "hi", "response": "ok"}\n{"context": "hi", "response": ""}\n')
    res = runner.invoke(app, ["score", "--metric", "context_cosine", "-i", str(src)])
    assert res.exit_code == 2
    assert f"{src}:2: field 'response' is empty" in res.output


def test_list_names_metrics_and_benchmarks():
    res = runner.invoke(app, ["list"])
    assert res.exit_code == 0
    assert "bertscore" in res.output and "benchmark grade_eval" in res.output


@pytest.mark.data
def test_benchmark_writes_table_json_csv_png_and_is_repeatable(tmp_path, data_dir):
    # a metric without a model: the command's files and its seeded bootstrap are the subject here (model scores'
    # determinism has its own tests)
    args = ["benchmark", "--metric", "utterance_length", "--benchmark", "grade_eval", "--bootstrap", "100",
            "--data-dir", str(data_dir)]
    first = runner.invoke(app, args + ["--output-dir", str(tmp_path / "a")])
    second = runner.invoke(app, args + ["--output-dir", str(tmp_path / "b")])
    assert first.exit_code == 0, first.output
    assert second.exit_code == 0, second.output
    assert "dailydialog/transformer_generator" in first.output and "pooled" in first.output
    stem = "utterance_length__grade_eval"
    a = json.loads((tmp_path / "a" / f"{stem}.json").read_text())
    b = json.loads((tmp_path / "b" / f"{stem}.json").read_text())
    assert a[0]["rows"] == b[0]["rows"]
    assert len(a[0]["rows"]) == 9  # 8 sets + pooled
    assert (tmp_path / "a" / f"{stem}.csv").read_text().count("\n") == 10
    assert (tmp_path / "a" / f"{stem}.png").stat().st_size > 10_000
    rep = runner.invoke(app, ["report", str(tmp_path / "a" / f"{stem}.json")])
    assert rep.exit_code == 0 and "| utterance_length |" in rep.output


@pytest.mark.data
def test_benchmark_skips_referenced_metric_without_references(tmp_path, data_dir):
    res = runner.invoke(app, ["benchmark", "--metric", "bleu4", "--benchmark", "fed_turn", "--bootstrap", "10",
                              "--data-dir", str(data_dir), "--output-dir", str(tmp_path), "--no-plot"])
    assert res.exit_code == 0, res.output
    assert "skipped: metric 'bleu4' needs references and fed_turn has none" in res.output


def _row(metric, subset, pearson, spearman):
    return {"metric": metric, "benchmark": "b", "aspect": "coherence", "subset": subset, "n": 10,
            "pearson_r": pearson, "pearson_p": 0.01, "spearman_r": spearman, "spearman_p": 0.01}


def test_report_merges_files_and_averages_per_corpus(tmp_path):
    a = [{"benchmark": "b", "rows": [_row("m1", "x/s1", 0.2, 0.4), _row("m1", "x/s2", 0.4, 0.6),
                                     _row("m1", "y/s1", 0.1, 0.1), _row("m1", "pooled", 0.3, 0.5)]}]
    b = [{"benchmark": "b", "rows": [_row("m2", "x/s1", -0.2, 0.0), _row("m2", "y/s1", 0.5, 0.7),
                                     _row("m2", "pooled", 0.0, 0.2)]}]
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    res = runner.invoke(app, ["report", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--by-corpus"])
    assert res.exit_code == 0, res.output
    assert "| metric | x (2 sets) | y (1 sets) | pooled |" in res.output
    assert "| m1 | 0.400 | 0.100 | 0.400 |" in res.output  # x: mean(0.3, 0.5); pooled: (0.3 + 0.5) / 2
    assert "| m2 | -0.100 | 0.600 | 0.100 |" in res.output
    none = runner.invoke(app, ["report", str(tmp_path / "a.json"), "--benchmark", "other"])
    assert none.exit_code != 0 and "no rows for benchmark 'other'" in none.output


def _unboxed(output: str) -> str:
    """Typer's error box, as one line of text."""
    return " ".join(output.replace("│", " ").split())


def _result(metric, benchmark, scores, human, aspect="Overall"):
    from dialeval.evaluation.runner import _correlation_rows

    subsets = ["pooled-only"] * len(scores)
    rows = _correlation_rows(np.asarray(scores, dtype=float), [[h] for h in human], [aspect], subsets,
                             n_boot=50, seed=0)
    for r in rows:
        r.update(metric=metric, benchmark=benchmark)
    return {"metric": metric, "benchmark": benchmark, "rows": rows, "scores": list(scores),
            "item_ids": [f"{benchmark}-{i}" for i in range(len(scores))], "human": {aspect: list(human)},
            "subsets": subsets}


def test_report_cells_detail_and_relative_gain(tmp_path):
    rng = np.random.default_rng(0)
    human = {b: rng.normal(size=30).tolist() for b in ("fed_turn", "usr_topicalchat")}
    noise = {b: rng.normal(size=30) for b in human}
    results = []
    for metric, scale in (("base", 2.0), ("better", 0.5)):
        results += [_result(metric, b, (np.asarray(h) + scale * noise[b]).tolist(), h) for b, h in human.items()]
    results.append(_result("partial", "fed_turn", human["fed_turn"], human["fed_turn"]))
    path = tmp_path / "r.json"
    path.write_text(json.dumps(results))
    res = runner.invoke(app, ["report", str(path), "--cells", "fed_turn,usr_topicalchat", "--relative-to", "base",
                              "--bootstrap", "100"])
    assert res.exit_code == 0, res.output
    fed_better = next(r for r in results if r["metric"] == "better" and r["benchmark"] == "fed_turn")["rows"][0]
    assert (f"| fed_turn:pooled:Overall | better | 30 | {fed_better['pearson_r']:.3f} "
            f"[{fed_better['pearson_ci_low']:.3f}, {fed_better['pearson_ci_high']:.3f}] | "
            f"{fed_better['pearson_p']:.1e} |") in res.output
    gain_lines = {line.split(" | ")[0][2:]: line for line in res.output.splitlines() if line.startswith("| ")}
    assert "(baseline)" in gain_lines["base"]
    assert "no result for usr_topicalchat:pooled:Overall" in gain_lines["partial"]
    points, relative = gain_lines["better"].split(" | ")[-3:-1]
    assert float(points.split(" ")[0]) > 0 and float(relative.split("%")[0]) > 0
    missing = runner.invoke(app, ["report", str(path), "--cells", "fed_turn,usr_personachat",
                                  "--relative-to", "base"])
    assert missing.exit_code != 0 and "no result of metric 'base'" in _unboxed(missing.output)
    bad = runner.invoke(app, ["report", str(path), "--cells", "fed_turn:pooled:Sweetness"])
    assert bad.exit_code != 0 and "has no aspect 'Sweetness'" in _unboxed(bad.output)
    twice = tmp_path / "twice.json"
    twice.write_text(json.dumps(results[:1]))
    dup = runner.invoke(app, ["report", str(path), str(twice), "--cells", "fed_turn"])
    assert dup.exit_code != 0 and "metric 'base' has two results for fed_turn" in _unboxed(dup.output)
    alone = runner.invoke(app, ["report", str(path), "--relative-to", "base"])
    assert alone.exit_code != 0 and "--relative-to needs --cells" in _unboxed(alone.output)


def test_scorer_option_reaches_the_scorer_and_its_signature(tmp_path):
    base = runner.invoke(app, ["score", "--metric", "dynaeval", "--input", str(EXAMPLES)])
    delta = runner.invoke(app, ["score", "--metric", "dynaeval", "--input", str(EXAMPLES),
                                "--option", "turn_score=delta"])
    assert base.exit_code == 0 and delta.exit_code == 0, base.output + delta.output
    assert "turn_score:dialogue" in base.output and "turn_score:delta" in delta.output
    assert base.output.splitlines()[:10] != delta.output.splitlines()[:10]  # other per-turn scores
    for options, message in ((["x=1"], "metric 'dynaeval' has no setting 'x'; settings: turn_score"),
                             (["turn_score"], "'turn_score' is not KEY=VALUE"),
                             (["turn_score=delta", "turn_score=delta"], "'turn_score' is given twice"),
                             (["turn_score=sideways"], "turn_score must be one of")):
        args = ["score", "--metric", "dynaeval", "--input", str(EXAMPLES)]
        res = runner.invoke(app, args + [a for o in options for a in ("--option", o)])
        assert res.exit_code != 0 and message in _unboxed(res.output), (options, res.output)
    two = runner.invoke(app, ["benchmark", "--metric", "bleu4,rougeL", "--benchmark", "fed_turn",
                              "--option", "x=1"])
    assert two.exit_code != 0 and "need exactly one metric" in _unboxed(two.output)


def test_options_a_scorer_passes_on_reach_its_graph_source(tmp_path):
    # amr_eval takes **graph_source_options: a KEY it does not name goes to the graph source, which names the folder
    res = runner.invoke(app, ["score", "--metric", "amr_eval", "--input", str(EXAMPLES), "--option",
                              "graph_source=parser", "--option", f"model_dir={tmp_path / 'nowhere'}"])
    assert res.exit_code == 2 and "(no config.json, nor best/config.json)" in _unboxed(res.output), res.output


def test_checkpoint_option_is_refused_for_metrics_without_checkpoints(tmp_path):
    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps({"context": ["hi"], "response": "hello"}) + "\n")
    res = runner.invoke(app, ["score", "--metric", "bleu4", "--input", str(inp), "--checkpoint", "x"])
    assert res.exit_code != 0
    assert "has no checkpoint to choose" in res.output


@pytest.mark.data
def test_benchmark_label_names_rows_and_files(tmp_path, data_dir):
    res = runner.invoke(app, ["benchmark", "--metric", "bert_ruber_unref", "--label", "ruber-variant", "--benchmark",
                              "fed_turn", "--bootstrap", "10", "--data-dir", str(data_dir), "--output-dir",
                              str(tmp_path), "--no-plot", "--quiet"])
    assert res.exit_code == 0, res.output
    # stderr: no progress bar under --quiet, then the closing summary (items, truncation, seconds, device)
    summary = res.stderr.strip().splitlines()
    assert len(summary) == 1 and summary[0].startswith("summary: 375 items, "), res.stderr
    assert " truncated items; " in summary[0] and " s scoring on " in summary[0]
    rows = json.loads((tmp_path / "ruber-variant__fed_turn.json").read_text())[0]["rows"]
    assert rows and {r["metric"] for r in rows} == {"ruber-variant"}
