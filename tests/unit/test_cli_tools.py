"""``dialeval bench|checkpoint|grade ...``: the commands that were ``python -m`` scripts, and that no library module
keeps a script entry point of its own."""

import ast
import json
from pathlib import Path

import pytest
import torch
import typer
from typer.testing import CliRunner

import dialeval
from dialeval.cli import app

runner = CliRunner()
PACKAGE = Path(dialeval.__file__).parent

#: Every new command with the options (and defaults) of the ``python -m`` script it replaces.
COMMANDS = {
    ("bench", "bertscore"): {"--n": 2000, "--batch-size": 32, "--device": None, "--threads": None,
                             "--data-dir": None, "--repeats": 1, "--json": None},
    ("bench", "grade"): {"--checkpoint": None, "--batch-size": 32, "--data-dir": None, "--large": 10_000,
                         "--json": None},
    ("bench", "dynaeval"): {"--checkpoint": None, "--batch-size": 32, "--data-dir": None, "--threads": None,
                            "--json": None},
    ("checkpoint", "half"): {"--checkpoint": None},
    ("checkpoint", "quantise"): {"--checkpoint": None, "--min-params": 65_536, "--only": None},
    ("checkpoint", "calibrate"): {"--checkpoint": None, "--data-dir": None, "--seed": None,
                                  "--max-val-positives": None, "--embedding-dir": None},
    ("grade", "coverage"): {"--data-dir": None, "--cache-dir": None, "--embedding": "minilm-pca50-retrofit",
                            "--max-depth": 4, "--no-directed": False, "--no-dailydialog": False, "--json": None},
    ("grade", "graph", "build"): {"--data-dir": None, "--embedding": "minilm-pca50-retrofit",
                                  "--conceptnet-csv": None, "--directed": False, "--cache-dir": None, "--out": None},
    ("grade", "graph", "measure"): {"--data-dir": None, "--kinds": None, "--json": None},
}


def _command(path: tuple[str, ...]):
    """The click command at ``path`` under ``dialeval``."""
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return command


def _options(path: tuple[str, ...]) -> dict:
    """``{first flag: option}`` of the command at ``path``, without ``--help``."""
    return {p.opts[0]: p for p in _command(path).params if p.param_type_name == "option" and p.opts[0] != "--help"}


@pytest.mark.parametrize("group,names", [((), ["bench", "checkpoint", "grade"]),
                                         (("bench",), ["bertscore", "grade", "dynaeval", "ensemble"]),
                                         (("checkpoint",), ["half", "quantise", "share", "calibrate"]),
                                         (("grade",), ["coverage", "graph"]),
                                         (("grade", "graph"), ["build", "measure"])])
def test_each_group_lists_its_commands(group, names):
    res = runner.invoke(app, [*group, "--help"])
    assert res.exit_code == 0, res.output
    listed = [line.split()[1] for line in res.output.splitlines() if line.startswith("│ ") and len(line.split()) > 1]
    assert set(names) <= set(listed), res.output


@pytest.mark.parametrize("path", list(COMMANDS), ids=" ".join)
def test_options_and_defaults_are_those_of_the_old_scripts(path):
    options = _options(path)
    expected = COMMANDS[path]
    assert set(options) == set(expected)
    for name, default in expected.items():
        assert options[name].default == default, name
    res = runner.invoke(app, [*path, "--help"])
    assert res.exit_code == 0 and all(name in res.output for name in expected), res.output


def test_checkpoint_options_that_were_required_still_are():
    assert _options(("checkpoint", "half"))["--checkpoint"].required
    assert _options(("checkpoint", "quantise"))["--checkpoint"].required
    assert _options(("checkpoint", "calibrate"))["--checkpoint"].required
    assert not _options(("checkpoint", "calibrate"))["--seed"].required


def _write_checkpoint(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import save_file

    folder.mkdir()
    weights = {"w": torch.randn(3, 5), "b": torch.randn(5, dtype=torch.float64), "index": torch.arange(4)}
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text('{"dtype": "float32"}')
    return weights


def test_checkpoint_half_casts_every_given_checkpoint(tmp_path):
    from safetensors import safe_open

    originals = {name: _write_checkpoint(tmp_path / name) for name in ("a", "b")}
    sizes = {name: (tmp_path / name / "model.safetensors").stat().st_size for name in originals}
    res = runner.invoke(app, ["checkpoint", "half", "--checkpoint", str(tmp_path / "a"),
                              "--checkpoint", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    for name, weights in originals.items():
        path = tmp_path / name / "model.safetensors"
        assert f"{tmp_path / name}: {sizes[name]:,} -> {path.stat().st_size:,} bytes" in res.output
        with safe_open(str(path), "pt") as fh:
            assert fh.metadata() == {"format": "pt"}
            stored = {key: fh.get_tensor(key) for key in fh.keys()}
        assert {k: t.dtype for k, t in stored.items()} == {"w": torch.float16, "b": torch.float16,
                                                            "index": torch.int64}
        assert torch.equal(stored["w"], weights["w"].half()) and torch.equal(stored["index"], weights["index"])
        assert (tmp_path / name / "config.json").read_text() == '{"dtype": "float32"}'


def test_checkpoint_commands_name_a_folder_that_is_no_checkpoint(tmp_path):
    res = runner.invoke(app, ["checkpoint", "half", "--checkpoint", str(tmp_path)])
    assert res.exit_code == 2 and res.stderr.strip() == f"error: {tmp_path} holds no model.safetensors", res.output
    res = runner.invoke(app, ["checkpoint", "calibrate", "--checkpoint", str(tmp_path / "nowhere")])
    assert res.exit_code == 2, res.output
    assert res.stderr.strip() == f"error: {tmp_path / 'nowhere'} is not a checkpoint folder (no config.json)"
    assert runner.invoke(app, ["checkpoint", "half"]).exit_code == 2  # --checkpoint is required


def test_bench_bertscore_runs_on_a_few_synthetic_pairs(tmp_path):
    """Without GRADE's evaluation data in the data directory the benchmark falls back to its synthetic pairs."""
    (tmp_path / "data").mkdir()
    out = tmp_path / "results" / "throughput.json"
    res = runner.invoke(app, ["bench", "bertscore", "--n", "3", "--batch-size", "2", "--device", "cpu",
                              "--data-dir", str(tmp_path / "data"), "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert "data:    synthetic (deterministic, seed 0)" in res.output and f"wrote {out}" in res.output
    result = json.loads(out.read_text())
    assert result["n_pairs"] == 3 and result["batch_size"] == 2 and result["device"] == "cpu"
    assert result["raw_forward_all"]["texts_encoded"] == 6
    assert result["bertscore"]["texts_encoded"] == result["raw_forward_distinct"]["texts_encoded"] <= 6


@pytest.fixture
def cn100k(tmp_path):
    """A data directory with a tiny ConceptNet-100K: train, held-out (valid, test) and corrupted (dev1, dev2)."""
    folder = tmp_path / "data" / "conceptnet_cn100k"
    folder.mkdir(parents=True)
    (folder / "train.txt").write_text("IsA\tdog\tanimal\nIsA\tcat\tanimal\nAtLocation\tcup\ttable\n"
                                      "UsedFor\tknife\tcut bread\nIsA\tcar\tvehicle\n")
    (folder / "valid.txt").write_text("IsA\tpuppy\tdog\nAtLocation\tplate\ttable\n")
    (folder / "test.txt").write_text("IsA\tkitten\tcat\nIsA\ttruck\tvehicle\n")
    (folder / "dev1.txt").write_text("IsA\tdog\tvehicle\t0\nIsA\tpuppy\tcat\t1\n")
    (folder / "dev2.txt").write_text("AtLocation\tcar\tbread\t0\n")
    return tmp_path / "data"


def test_grade_graph_build_builds_and_saves_tables(cn100k, tmp_path):
    from dialeval.metrics.grade.tables import GraphTables

    res = runner.invoke(app, ["grade", "graph", "build", "--data-dir", str(cn100k), "--embedding", "glove",
                              "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    # every true triple (dev1's labelled 1 too: 10), each edge with its reverse
    assert res.output.startswith("tables: 13 nodes, 20 edges, dim 50"), res.output
    assert "embeddings.safetensors:" in res.output
    assert GraphTables.load(tmp_path / "out", verify=True).graph.names == [
        "animal", "car", "cat", "cup", "cut bread", "dog", "kitten", "knife", "plate", "puppy", "table", "truck",
        "vehicle"]
    directed = runner.invoke(app, ["grade", "graph", "build", "--data-dir", str(cn100k), "--embedding", "glove",
                                   "--cache-dir", str(tmp_path / "cache"), "--directed"])
    assert directed.exit_code == 0 and directed.output.startswith("tables: 13 nodes, 10 edges"), directed.output


def test_grade_graph_measure_takes_kinds_comma_separated_or_repeated(cn100k, tmp_path):
    out = tmp_path / "measure.json"
    res = runner.invoke(app, ["grade", "graph", "measure", "--data-dir", str(cn100k), "--kinds", "glove-plain,glove",
                              "--json", str(out)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    setup = json.loads(lines[0])
    assert setup["graph"] == "train.txt only" and setup["n_heldout_pos"] == 4 and setup["n_corrupted"] == 2
    assert [line.split()[0] for line in lines[2:]] == ["glove-plain", "glove"]
    result = json.loads(out.read_text())
    assert set(result) == {"_setup", "glove-plain", "glove"}
    assert all(0.0 <= result[k][m] <= 1.0 for k in ("glove-plain", "glove")
               for m in ("auc_random", "auc_shuffled", "auc_corrupted", "coverage"))
    again = runner.invoke(app, ["grade", "graph", "measure", "--data-dir", str(cn100k), "--kinds", "glove",
                                "--kinds", "glove-plain"])
    assert again.exit_code == 0, again.output
    assert [line.split()[0] for line in again.output.splitlines()[2:]] == ["glove", "glove-plain"]


def _script_entry_points(path: Path) -> list[str]:
    """What in the module at ``path`` makes it a script: an ``if __name__ == "__main__"`` block at its top level,
    an import of argparse anywhere."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and \
                {getattr(n, "id", getattr(n, "value", None)) for n in (node.test.left, *node.test.comparators)} \
                == {"__name__", "__main__"}:
            found.append(f"if __name__ == '__main__' (line {node.lineno})")
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        found += [f"import {n} (line {node.lineno})" for n in names if n.split(".")[0] == "argparse"]
    return found


def test_the_checker_finds_a_script_entry_point(tmp_path):
    script = tmp_path / "script.py"
    script.write_text("def main():\n    import argparse\n\n\nif '__main__' == __name__:\n    main()\n")
    assert _script_entry_points(script) == ["if __name__ == '__main__' (line 5)", "import argparse (line 2)"]
    script.write_text("from argparse import ArgumentParser\nif __name__ == '__main__':\n    pass\n")
    assert len(_script_entry_points(script)) == 2
    script.write_text("name = __name__\nif name == 'x':\n    pass\n")
    assert _script_entry_points(script) == []


def test_no_library_module_is_a_script_of_its_own():
    """The commands are `dialeval ...` subcommands; only `python -m dialeval` and the bare encoder pass that
    `dialeval scale-benchmark` launches as a subprocess (dialeval/scale/benchmark.py) are run as modules."""
    allowed = {PACKAGE / "__main__.py", PACKAGE / "scale" / "benchmark.py"}
    offenders = {str(p.relative_to(PACKAGE)): found for p in sorted(PACKAGE.rglob("*.py"))
                 if p not in allowed and (found := _script_entry_points(p))}
    assert offenders == {}
