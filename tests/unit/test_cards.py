"""Cards rendered from measured results (dialeval.hub.cards): every card matches its stored results, the results
are of the shipped checkpoints, and the model card's model-index carries the same numbers."""

import json
import re

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
    collect,
    dataset_repos,
    diagnostics_table,
    load_results,
    model_card,
    render_card,
    reproduce_commands,
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


def _shipped_fingerprint(metric: str) -> str:
    scorer = scorer_class(metric)
    return checkpoint_fingerprint(resolve_checkpoint(None, scorer.checkpoint_dir, scorer.train_command))


@pytest.mark.parametrize("metric", card_metrics())
def test_stored_results_were_measured_on_the_shipped_checkpoints(metric):
    for res in load_results(metric, KNOWN):
        fields = dict(part.split(":", 1) for part in res["signature"].split("|"))
        if "checkpoint_sha256" in fields:  # a learned metric (the baselines have no checkpoint)
            assert fields["checkpoint_sha256"] == _shipped_fingerprint(res["metric"]), (
                f"hub_cards/results/{metric}.json: {res['metric']} on {res['benchmark']} was measured on another "
                "checkpoint than the shipped one; benchmark it again and run `dialeval cards collect`")


@pytest.mark.parametrize("metric", sorted(SPACES))
def test_the_model_index_carries_the_stored_numbers(metric):
    results = load_results(metric, KNOWN)
    card = str(model_card(metric, card_path(metric).read_text(encoding="utf-8"), results, namespace="someone"))
    header = yaml.safe_load(card.split("---\n")[1])
    entries = {(r["dataset"]["config"], m["name"]): m["value"]
               for r in header["model-index"][0]["results"] for m in r["metrics"]}
    expected = {}
    for res in results:
        if res["metric"] != metric:
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
                      "spearman_r": 0.2, "spearman_p": 0.4}], "scores": [0.1, 0.2, 0.3]}


def test_collect_keeps_what_a_card_reads_and_refuses_what_it_cannot_reproduce(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps([_result("pone"), _result("context_cosine")]))
    b.write_text(json.dumps([_result("pone", "usr_personachat")]))
    stored = collect("pone", [a, b], tmp_path / "out.json", KNOWN)
    assert [(r["metric"], r["benchmark"]) for r in stored] == [
        ("pone", "grade_eval"), ("context_cosine", "grade_eval"), ("pone", "usr_personachat")]
    assert "scores" not in json.loads((tmp_path / "out.json").read_text())[0]
    assert reproduce_commands(stored) == [
        "HF_HUB_OFFLINE=1 dialeval benchmark --metric pone --benchmark grade_eval,usr_personachat",
        "HF_HUB_OFFLINE=1 dialeval benchmark --metric context_cosine --benchmark grade_eval"]
    cases = {"twice": [_result("pone"), _result("pone")], "label": [_result("pone"), _result("pone-nograph", "usr")],
             "checkpoint": [_result("pone", checkpoint="runs/x")], "itself": [_result("context_cosine")]}
    messages = {"twice": "also in", "label": "not a registered metric", "checkpoint": "not the shipped one",
                "itself": "no result of 'pone'"}
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
