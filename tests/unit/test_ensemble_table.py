"""`dialeval ensemble table`: one member set's leave-one-out table from a loo.json as the card's markdown."""

import json

from typer.testing import CliRunner

from dialeval.cli import app


def _report() -> dict:
    def row(name, members, candidates, best, difference):
        return {"set": name, "n": 10, "in_domain": [], "members": members, "candidates": candidates,
                "best_member": best, "excluded": {},
                "versus_best_member": {"difference": difference, "ci_low": difference - 0.1,
                                       "ci_high": difference + 0.1}}

    rows = [row("a/test", {"m1": 0.2, "m2": 0.4}, {"mean": 0.45, "power_0": 0.35}, "m2", 0.05),
            row("b", {"m1": 0.3, "m2": 0.1}, {"mean": 0.25, "power_0": 0.32}, "m1", -0.05)]
    summary = {"n_sets": 2, "n_sets_out_of_domain": 2, "member_mean": {"m1": 0.25, "m2": 0.25},
               "member_mean_out_of_domain": {"m1": 0.25, "m2": 0.25},
               "candidate_mean": {"mean": 0.35, "power_0": 0.335},
               "candidate_mean_out_of_domain": {"mean": 0.35, "power_0": 0.335},
               "above_best_member": {"mean": 1, "power_0": 0},
               "wins": {"m1": {"wins": 2, "sets": 2}, "m2": {"wins": 1, "sets": 2}}}
    return {"member_set": "full", "members": ["m1", "m2"], "columns": ["m1", "m2"], "candidates": ["mean", "power_0"],
            "chosen": "mean", "rows": rows, "summary": summary, "left_out": {}, "checks": {}}


def test_the_table_marks_the_chosen_candidate_and_counts_from_the_report(tmp_path):
    loo = tmp_path / "loo.json"
    loo.write_text(json.dumps({"member_sets": {"full": _report()}}))
    res = CliRunner().invoke(app, ["ensemble", "table", str(loo), "--member-set", "full"])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert lines[0] == "| held-out set | n | m1 | m2 | **mean** | p=0 | mean - best member [95% CI] |"
    assert lines[2] == "| a/test | 10 | 0.200 | 0.400 | **0.450** | 0.350 | +0.050 [-0.050, +0.150] vs m2 |"
    assert lines[3] == "| b | 10 | 0.300 | 0.100 | **0.250** | 0.320 | -0.050 [-0.150, +0.050] vs m1 |"
    assert lines[4] == "| **mean over the 2 sets** |  | 0.250 | 0.250 | **0.350** | 0.335 |  |"
    assert lines[-2] == "| **sets above the set's best member** |  |  |  | **1/2** | 0/2 |  |"
    assert lines[-1] == "| sets where mean beats the member |  | 2/2 | 1/2 |  |  |  |"
    assert len(lines) == 8


def test_a_member_set_the_file_lacks_is_an_error_naming_what_it_has(tmp_path):
    loo = tmp_path / "loo.json"
    loo.write_text(json.dumps({"member_sets": {"full": _report()}}))
    res = CliRunner().invoke(app, ["ensemble", "table", str(loo), "--member-set", "base"])
    assert res.exit_code != 0 and "no member set 'base'" in res.output and "full" in res.output


def test_a_member_with_no_score_of_a_set_shows_a_dash(tmp_path):
    # full+length's turn_count scores dialogues only: no figure on a turn-level set (None in loo.json)
    report = _report()
    report["columns"] = ["m1", "m2", "turn_count"]
    report["rows"][0]["members"]["turn_count"] = None
    report["rows"][1]["members"]["turn_count"] = 0.5
    for key in ("member_mean", "member_mean_out_of_domain"):
        report["summary"][key]["turn_count"] = 0.5
    report["summary"]["wins"]["turn_count"] = {"wins": 0, "sets": 1}
    loo = tmp_path / "loo.json"
    loo.write_text(json.dumps({"member_sets": {"full+length": report}}))
    res = CliRunner().invoke(app, ["ensemble", "table", str(loo), "--member-set", "full+length"])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert lines[2] == "| a/test | 10 | 0.200 | 0.400 | - | **0.450** | 0.350 | +0.050 [-0.050, +0.150] vs m2 |"
    assert lines[3] == "| b | 10 | 0.300 | 0.100 | 0.500 | **0.250** | 0.320 | -0.050 [-0.150, +0.050] vs m1 |"
    assert lines[-1] == "| sets where mean beats the member |  | 2/2 | 1/2 | 0/1 |  |  |  |"
