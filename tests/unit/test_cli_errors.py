"""The command line's front door: every --help works, and a user's mistake is one line on stderr with status 2."""

import importlib
import json
import os
import subprocess
import sys

import click
import pytest
import typer
from typer import rich_utils
from typer.testing import CliRunner

from dialeval.cli import app
from dialeval.cli.app import PIPED_WIDTH
from dialeval.errors import DialevalError, InputFileError
from dialeval.scale import open_source

runner = CliRunner()


def _command_paths(command, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [prefix]
    if hasattr(command, "commands"):  # a group
        for name, sub in command.commands.items():
            paths += _command_paths(sub, (*prefix, name))
    return paths


COMMANDS = _command_paths(typer.main.get_command(app))


def test_the_command_tree_is_the_expected_one():
    names = {" ".join(p) for p in COMMANDS}
    assert {"", "score", "benchmark", "report", "compare", "list", "train", "train grade", "train dynaeval",
            "train bert-ruber", "train pone"} <= names


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "dialeval")
def test_every_help_exits_zero(path):
    res = runner.invoke(app, [*path, "--help"])
    assert res.exit_code == 0, res.output
    assert "Usage:" in res.output and "Traceback" not in res.output


def _option_names(path: tuple[str, ...]) -> list[str]:
    """Every flag of the command at ``path`` (``--metric``, ``--no-resume``...), as its help lists them."""
    command = typer.main.get_command(app)
    ctx = click.Context(command)
    for name in path:
        command = command.get_command(ctx, name)
    return [name for p in command.params if p.param_type_name == "option" and not getattr(p, "hidden", False)
            for name in (*p.opts, *p.secondary_opts)]


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "dialeval")
def test_help_written_to_a_pipe_is_not_cut(path, monkeypatch):
    monkeypatch.setattr(rich_utils, "MAX_WIDTH", None)  # no TERMINAL_WIDTH: CliRunner's stdout is not a terminal
    res = runner.invoke(app, [*path, "--help"])
    assert res.exit_code == 0, res.output
    assert "\u2026" not in res.output, res.output  # rich's ellipsis where a column is cut
    missing = [name for name in _option_names(path) if name not in res.output]
    assert not missing, (missing, res.output)
    assert rich_utils.MAX_WIDTH is None  # the wide setting lasts for the call only


def test_terminal_width_set_by_the_user_wins(monkeypatch):
    monkeypatch.setattr(rich_utils, "MAX_WIDTH", 90)  # what TERMINAL_WIDTH=90 sets
    res = runner.invoke(app, ["score", "--help"])
    assert res.exit_code == 0 and res.output.strip()
    assert max(len(line) for line in res.output.splitlines()) == 90
    assert rich_utils.MAX_WIDTH == 90


def test_piped_help_of_the_installed_command_is_wide(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("TERMINAL_WIDTH", "COLUMNS")}
    res = subprocess.run([sys.executable, "-m", "dialeval", "train", "grade", "--help"], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stderr
    widths = {len(line) for line in res.stdout.splitlines() if line.strip()}
    assert max(widths) == PIPED_WIDTH and "\u2026" not in res.stdout
    assert "--gradient-accumulation" in res.stdout  # cut to "--gradient-acc…" at 80 columns


def _one_line_error(res, *fragments: str) -> str:
    """The run failed with status 2 and exactly one line on stderr naming the problem."""
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert "Traceback" not in res.output
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.fixture
def good(tmp_path):
    path = tmp_path / "good.jsonl"
    path.write_text(json.dumps({"context": ["hi"], "response": "hello there", "references": ["hello"]}) + "\n")
    return path


def test_unknown_metric_suggests_the_close_name(good):
    line = _one_line_error(runner.invoke(app, ["score", "--metric", "bleu", "-i", str(good)]), "unknown metric 'bleu'")
    assert "did you mean 'bleu4'" in line


def test_unknown_benchmark_suggests_the_close_name(tmp_path):
    res = runner.invoke(app, ["benchmark", "--metric", "bleu4", "--benchmark", "fed_trn",
                              "--output-dir", str(tmp_path)])
    _one_line_error(res, "unknown benchmark 'fed_trn'", "did you mean 'fed_turn'")


def test_unknown_metric_in_a_list_is_found_before_anything_runs(tmp_path):
    res = runner.invoke(app, ["benchmark", "--metric", "bleu4,rogueL", "--benchmark", "fed_turn",
                              "--output-dir", str(tmp_path)])
    _one_line_error(res, "unknown metric 'rogueL'", "did you mean 'rougeL'")


def test_unknown_aspect_and_split_are_named_with_their_benchmark(tmp_path):
    res = runner.invoke(app, ["benchmark", "--metric", "bleu4", "--benchmark", "fed_turn", "--aspect", "overall",
                              "--output-dir", str(tmp_path)])
    _one_line_error(res, "unknown fed_turn aspect 'overall'", "did you mean 'Overall'")
    res = runner.invoke(app, ["benchmark", "--metric", "bleu4", "--benchmark", "fed_turn", "--split", "train",
                              "--output-dir", str(tmp_path)])
    _one_line_error(res, "unknown fed_turn split 'train'", "choices: test")


def test_unknown_metric_is_named_before_the_input_is_opened(tmp_path):
    missing = tmp_path / "missing.jsonl"
    line = _one_line_error(runner.invoke(app, ["score", "--metric", "grad", "-i", str(missing)]),
                           "unknown metric 'grad'", "did you mean 'grade'", "choices: ", "bleu4")
    assert "does not exist" not in line and str(missing) not in line


def test_missing_input_file(tmp_path):
    missing = tmp_path / "nowhere.jsonl"
    _one_line_error(runner.invoke(app, ["score", "--metric", "bleu4", "-i", str(missing)]),
                    f"{missing} does not exist")


def test_non_utf8_file_names_line_and_byte(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"context": "hi", "response": "ok", "references": "ok"}\n'
                     b'{"context": "caf\xe9", "response": "ok", "references": "ok"}\n')
    _one_line_error(runner.invoke(app, ["score", "--metric", "bleu4", "-i", str(path)]),
                    f"{path}:2: not UTF-8", "byte 0xe9")


def test_bad_jsonl_line_names_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"context": "hi", "response": "ok", "references": "ok"}\n\n{"context": "hi", "response": }\n')
    _one_line_error(runner.invoke(app, ["score", "--metric", "bleu4", "-i", str(path)]), f"{path}:3: not valid JSON")
    path.write_text('["hi", "ok"]\n')
    _one_line_error(runner.invoke(app, ["score", "--metric", "bleu4", "-i", str(path)]),
                    f"{path}:1: expected a JSON object")


@pytest.mark.parametrize("name, content", [("empty.jsonl", ""), ("blank.jsonl", "\n  \n"),
                                           ("header.csv", "context,response\n")])
def test_empty_input_is_an_error_not_nan(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content)
    res = runner.invoke(app, ["score", "--metric", "bleu4", "-i", str(path)])
    line = _one_line_error(res, f"{path} has no rows")
    assert "nan" not in res.output and "nan" not in line


def test_missing_checkpoint_folder(good, tmp_path):
    res = runner.invoke(app, ["score", "--metric", "grade", "-i", str(good), "--checkpoint", str(tmp_path / "no")])
    _one_line_error(res, f"{tmp_path / 'no'} is not a grade checkpoint folder", "dialeval train grade")


def test_missing_field_names_the_file_and_rows(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"context": "hi", "response": "ok"}\n{"context": "hi"}\n')
    _one_line_error(runner.invoke(app, ["score", "--metric", "utterance_length", "-i", str(path)]),
                    f"{path}:2: no 'response' field")
    _one_line_error(runner.invoke(app, ["score", "--metric", "rougeL", "-i", str(path)]),
                    f"{path}:1: no 'references' field; metric 'rougeL' needs references")


def test_train_commands_share_the_handler(tmp_path):
    res = runner.invoke(app, ["train", "grade", "--output-dir", str(tmp_path / "run"),
                              "--data-dir", str(tmp_path / "no-data")])
    _one_line_error(res, "data directory not found", str(tmp_path / "no-data"))


def test_report_of_a_file_that_is_not_results(tmp_path):
    path = tmp_path / "r.json"
    _one_line_error(runner.invoke(app, ["report", str(path)]), f"{path} does not exist")
    path.write_text('{"rows": []}')
    _one_line_error(runner.invoke(app, ["report", str(path)]), "is not a results file of `dialeval benchmark`")


def test_debug_shows_the_exception(tmp_path):
    res = runner.invoke(app, ["--debug", "score", "--metric", "bleu4", "-i", str(tmp_path / "nowhere.jsonl")])
    assert isinstance(res.exception, InputFileError) and isinstance(res.exception, DialevalError)
    assert "error: " not in res.stderr


def test_usage_errors_stay_usage_errors(good):
    res = runner.invoke(app, ["score", "--metric", "bleu4", "-i", str(good), "--empty-turns", "drop"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "drop" in res.output and "error" in res.output and "skip" in res.output


# -- reading and writing rows (dialeval.scale.sources, dialeval.scale.output) ----------------------------------------
def read_rows(path, turn_separator=None):
    return [row.fields for row in open_source(path, turn_separator=turn_separator).rows()]


def test_csv_written_by_score_reads_back_as_lists(tmp_path):
    rows = [{"id": "a", "context": ["hi there", "how are you?"], "response": "fine, thanks",
             "references": ["good, thanks", "fine"]},
            {"id": "b", "context": [{"role": "user", "content": "your name?"}], "response": "Bob",
             "references": ["I am Bob"]}]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    first = tmp_path / "scored.csv"
    res = runner.invoke(app, ["score", "--metric", "bleu4", "-i", str(src), "-o", str(first)])
    assert res.exit_code == 0, res.output
    back = read_rows(first)
    assert [r["context"] for r in back] == [r["context"] for r in rows]
    assert [r["references"] for r in back] == [r["references"] for r in rows]
    again = tmp_path / "again.jsonl"
    res = runner.invoke(app, ["score", "--metric", "bleu4", "-i", str(first), "-o", str(again)])
    assert res.exit_code == 0, res.output
    rescored = [json.loads(line) for line in again.read_text().splitlines()]
    assert [r["score"] for r in rescored] == [float(r["score"]) for r in back]
    assert [r["id"] for r in rescored] == ["a", "b"]


def test_csv_list_cell_that_is_not_json_names_file_row_and_column(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text('id,context,response\na,"[""hi"", ""there""]",ok\nb,"[""hi"", oops]",ok\n')
    _one_line_error(runner.invoke(app, ["score", "--metric", "utterance_length", "-i", str(path)]),
                    f"{path}:3: column 'context'", "not valid JSON")  # the file line of that row


def test_csv_plain_cells_and_separator(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("context,response,references\nhi|||how are you?,fine,good\n")
    assert read_rows(path)[0]["context"] == "hi|||how are you?"
    row = read_rows(path, turn_separator="|||")[0]
    assert row["context"] == ["hi", "how are you?"] and row["references"] == ["good"]


def test_utf8_bom_is_dropped(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes("\ufeffcontext,response\nhi,ok\n".encode())
    assert read_rows(path) == [{"context": "hi", "response": "ok"}]


@pytest.mark.parametrize("command", [["score", "-i", "rows.jsonl"], ["benchmark", "--benchmark", "fed_turn"]])
def test_a_batch_size_below_one_is_refused_before_the_model_loads(command, monkeypatch):
    """Issue 50: `--batch-size 0` is a usage error at once, not after the model has loaded."""
    cli = importlib.import_module("dialeval.cli.app")  # the module (dialeval.cli.app is also the Typer object)

    def no_loading(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(cli, "_load", no_loading)
    res = runner.invoke(app, [command[0], "--metric", "grade", *command[1:], "--batch-size", "0"])
    assert res.exit_code == 2
    assert "Invalid value for '--batch-size': Input should be greater than or equal to 1" in res.output


def test_score_takes_a_data_directory_only_for_a_metric_that_reads_one(good):
    """`score --data-dir` reaches the scorers that read a data directory (rade's pseudo-references: test_rade_scorer);
    for another metric, and given twice, it is a usage error; `score --help` names the pseudo-references."""
    res = runner.invoke(app, ["score", "--metric", "bleu4", "-i", str(good), "--data-dir", str(good.parent)])
    assert res.exit_code == 2 and "metric 'bleu4' reads nothing from a data directory" in res.output
    res = runner.invoke(app, ["score", "--metric", "rade", "-i", str(good), "--data-dir", str(good.parent),
                              "--option", f"data_dir={good.parent}"])
    assert res.exit_code == 2 and "the data directory is given twice" in " ".join(res.output.split())
    helped = " ".join(runner.invoke(app, ["score", "--help"]).output.replace("│", " ").split())
    assert "rade with --option pseudo_references=dailydialog" in helped and "--data-dir" in helped


def test_a_data_directory_not_found_names_each_path_once(monkeypatch, tmp_path):
    """From the checkout's root, ../shared/data seen from there and from the source are one folder: tried once."""
    from conftest import ROOT

    from dialeval import paths

    monkeypatch.delenv(paths.ENV_VAR, raising=False)
    monkeypatch.chdir(ROOT)
    tried = paths._candidates(None)
    assert tried == [ROOT.parent / "shared" / "data"]
    monkeypatch.chdir(tmp_path)
    assert paths._candidates(None) == [tmp_path.parent / "shared" / "data", ROOT.parent / "shared" / "data"]

