"""The quickstart notebook runs as written (its code cells are executed in order)."""

import json
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"


def _cells():
    nb = json.loads(NOTEBOOK.read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def test_quickstart_cells_run_without_data():
    ns: dict = {}
    for source in _cells():
        if "run_benchmark" in source:
            continue
        exec(compile(source, str(NOTEBOOK), "exec"), ns)
    assert len(ns["out"].scores) == 2 and ns["d"].metadata["dialogue_aggregation"]


@pytest.mark.data
def test_quickstart_benchmark_cell(data_dir, monkeypatch):
    monkeypatch.setenv("DIALEVAL_DATA_DIR", str(data_dir))
    ns: dict = {}
    for source in _cells():
        exec(compile(source, str(NOTEBOOK), "exec"), ns)
    assert len(ns["result"].rows) == 9
