"""The README's set-up commands are the ones CI runs and the ones that work."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _ci_command() -> str:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    marker = next(i for i, line in enumerate(lines) if line.startswith("# ---") and "README's test command" in line)
    return lines[marker + 1].strip()


def test_readme_test_command_is_what_ci_runs():
    assert _ci_command() in (ROOT / "README.md").read_text()
    assert "-rs" in _ci_command().split()  # each skipped test is listed with its reason (issue 50)


def test_readme_main_job_scores_the_bundled_examples():
    readme = (ROOT / "README.md").read_text()
    main = next(line for line in readme.splitlines() if "dialeval score" in line and "pip install" in line)
    example = main.split("--input ")[1].split()[0]
    assert (ROOT / example).is_file(), example
    assert "--metric grade" in main  # the main job scores with the flagship metric, offline


def test_readme_lists_every_evaluate_module_by_name():
    """The README's `evaluate` paragraph names `dialeval/<m>` for every module the package installs (issue 50: the
    ensemble's was missing)."""
    from dialeval.interfaces.evaluate_cache import module_names

    readme = (ROOT / "README.md").read_text()
    paragraph = readme.split("* **`evaluate`**:", 1)[1].split("\n* ", 1)[0]
    named = [m for m in module_names() if f"`dialeval/{m}`" in paragraph or f'"dialeval/{m}"' in paragraph]
    assert named == module_names()

