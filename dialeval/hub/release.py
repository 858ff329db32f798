"""``dialeval release``: every folder a Hub release pushes, built and checked offline; pushed only with ``--push``.

For each released metric ``m`` (the metrics with a Space; each has an export too), under the output folder:

* ``models/m/``: :func:`export_model`, the one function that ``dialeval export`` calls too: the complete checkpoint
  (:func:`dialeval.scoring.export.export_checkpoint`: for a learned metric weights, config, custom code, tokenizer,
  graph tables; for a combination, the ensemble, its ``config.json`` as shipped) and its model card ``README.md``
  (:func:`dialeval.hub.cards.exported_model_card`: a ``model-index`` from the stored results, and code that scores
  text from the folder or its Hub id; a combination's lists its members and their pinned checkpoints);
* ``spaces/m/``: the `evaluate` module, its card (with the YAML a Space needs), ``app.py``, ``examples.json`` (items
  of the benchmark data with their human ratings), the dialeval wheel and a ``requirements.txt`` that installs that
  wheel, so the Space builds from what its folder holds;

and once, ``datasets/<repo>/`` for each benchmark repo (a group such as ``fed``, or a benchmark): Parquet and a
dataset card with ``configs:`` (:func:`dialeval.benchmarks.export.export_all`).

Pushing (:func:`push`) is ``huggingface_hub``'s ``create_repo`` and ``upload_folder``, one repo per folder; it needs
a token and the network, and no test runs it.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DialevalError, OutputFolderError
from ..interfaces.space import EXAMPLES_FILE, Example, write_examples
from ..paths import resolve_data_dir
from .cards import (BASE_MODEL, MODEL_CARD_FILE, card_path, dataset_repos, exported_model_card, load_results,
                    project_root)


class ReleaseError(DialevalError):
    """A release folder that cannot be built (names the folder or file and what is wrong)."""


@dataclass
class Release:
    out_dir: Path
    namespace: str
    models: dict[str, Path] = field(default_factory=dict)
    spaces: dict[str, Path] = field(default_factory=dict)
    datasets: dict[str, Path] = field(default_factory=dict)

    def repos(self) -> list[tuple[str, str, Path]]:
        """(repo type, repo id, folder) for every folder, in the order :func:`push` uploads them."""
        return ([("dataset", f"{self.namespace}/{n}", p) for n, p in self.datasets.items()]
                + [("model", f"{self.namespace}/{n}", p) for n, p in self.models.items()]
                + [("space", f"{self.namespace}/{n}", p) for n, p in self.spaces.items()])


# -- the wheel and the Space's requirements -------------------------------------------------------------------------
def build_wheel(out_dir: str | os.PathLike, root: str | os.PathLike | None = None) -> Path:
    """Build the dialeval wheel from the checkout into ``out_dir`` (pip, isolated build) and return its path."""
    root = Path(root or project_root())
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    before = set(out_dir.glob("dialeval-*.whl"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(out_dir),
                           str(root)], capture_output=True, text=True)
    built = sorted(set(out_dir.glob("dialeval-*.whl")) - before) or sorted(out_dir.glob("dialeval-*.whl"))
    if proc.returncode != 0 or not built:
        raise ReleaseError(f"building the dialeval wheel from {root} failed (pip exit {proc.returncode}):\n"
                           f"{proc.stderr[-2000:]}")
    return built[-1]


def space_requirements(wheel_name: str, checkout_requirements: str) -> str:
    """The exported Space's ``requirements.txt``: the wheel beside ``app.py`` (with the spaCy model extra), torch
    at the version the release was built with, then the checkout file's requirement lines."""
    torch_version = importlib.metadata.version("torch").split("+")[0]
    kept = [line for line in checkout_requirements.splitlines() if line.strip() and not line.startswith("#")]
    return "\n".join([
        "# Written by `dialeval release`: the dialeval wheel beside app.py, then the Space's own requirements.",
        f"./{wheel_name}[spacy-model]",
        f"torch=={torch_version}",
        *kept,
    ]) + "\n"


# -- the Space's examples -------------------------------------------------------------------------------------------
def _one_line(text: str) -> str:
    return " ".join(text.split())


def space_examples(fields: Sequence[str], data_dir: str | os.PathLike | None = None) -> list[Example]:
    """Items of the benchmark data for a Space with ``fields``, each noted with its human rating.

    Turn-level Spaces: from the GRADE evaluation set ``dailydialog/transformer_ranker``, the two replies with the
    highest and the two with the lowest human coherence (ties broken by item id). The dialogue Space: the FED
    dialogues with the highest and lowest Overall rating and the two around the median.
    """
    from ..benchmarks import load_benchmark

    if tuple(fields) == ("dialogue",):
        ds = load_benchmark("fed_dialogue", split="test", data_dir=data_dir)
        rated = sorted(((row["human"][row["aspects"].index("Overall")], row["id"], row) for row in ds
                        if "Overall" in row["aspects"] and row["human"][row["aspects"].index("Overall")] is not None),
                       key=lambda t: (-t[0], t[1]))
        mid = len(rated) // 2
        picked = [rated[0], rated[mid - 1], rated[mid], rated[-1]]
        return [Example(("\n".join(_one_line(t["text"]) for t in row["context"]),),
                        f"FED dialogue {item_id} ({row['system']}): human Overall {score:.2f} on 0-4")
                for score, item_id, row in picked]
    ds = load_benchmark("grade_eval", split="test", data_dir=data_dir)
    subset = "dailydialog/transformer_ranker"
    rated = sorted(((row["human"][0], row["id"], row) for row in ds if row["subset"] == subset),
                   key=lambda t: (-t[0], t[1]))
    picked = rated[:2] + rated[-2:]
    texts = {"context": lambda r: "\n".join(_one_line(t["text"]) for t in r["context"]),
             "response": lambda r: _one_line(r["response"]), "reference": lambda r: _one_line(r["references"][0])}
    return [Example(tuple(texts[name](row) for name in fields),
                    f"GRADE evaluation set {subset}, {item_id}: human coherence {score:.2f} on 1-5")
            for score, item_id, row in picked]


# -- building the folders -------------------------------------------------------------------------------------------
def export_model(metric: str, checkpoint: str | os.PathLike | None, output_dir: str | os.PathLike, *,
                 namespace: str = "dialeval", overwrite: bool = False,
                 results: Sequence[dict] | None = None) -> Path:
    """The model repo folder of ``metric`` for ``<namespace>/<metric>``, what ``dialeval export`` and ``dialeval
    release`` write: ``checkpoint`` (a shipped name, ``None``: ``"default"``; a folder; a training run folder)
    exported complete (:func:`~dialeval.scoring.export.export_checkpoint`) with its model card as
    :data:`~dialeval.hub.cards.MODEL_CARD_FILE` (:func:`~dialeval.hub.cards.exported_model_card`; ``results``: the
    stored results, else read). The card is built before the export, so missing results fail before any work, and
    written into the folder before it gets its name. Returns the folder."""
    from ..scoring.export import export_checkpoint, export_source

    source = export_source(metric, checkpoint)
    card = exported_model_card(metric, source, namespace=namespace, results=results)
    return export_checkpoint(metric, source, output_dir, overwrite=overwrite,
                             extra_files={MODEL_CARD_FILE: str(card)})


def _fresh(path: Path, overwrite: bool) -> Path:
    if path.exists() and any(path.iterdir()):
        if not overwrite:
            raise OutputFolderError(f"{path} is not empty; pass --overwrite to replace it")
        shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)
    return path


def build_space(metric: str, out: Path, wheel: Path, examples: list[Example]) -> Path:
    """``out`` as the Space of ``metric`` (see the module docstring)."""
    source = card_path(metric).parent
    for name in (f"{metric}.py", "README.md", "app.py"):
        if not (source / name).is_file():
            raise ReleaseError(f"{source / name} is missing: a metric folder holds its module, card and app.py")
        shutil.copy2(source / name, out / name)
    shutil.copy2(wheel, out / wheel.name)
    (out / "requirements.txt").write_text(
        space_requirements(wheel.name, (source / "requirements.txt").read_text(encoding="utf-8")), encoding="utf-8")
    write_examples(out / EXAMPLES_FILE, examples)
    return out


def release(out_dir: str | os.PathLike, metrics: Sequence[str] | None = None, *, namespace: str = "dialeval",
            data_dir: str | os.PathLike | None = None, wheel: str | os.PathLike | None = None,
            bundled_examples: bool = False, datasets: bool = True, overwrite: bool = False) -> Release:
    """Build the release folders under ``out_dir`` (see the module docstring).

    ``wheel``: a dialeval wheel to put in the Spaces (default: built from the checkout). ``bundled_examples``: the
    Spaces show the package's demo items instead of benchmark items (for a machine without the data).
    ``datasets=False`` leaves the dataset repos out.
    """
    from ..benchmarks.export import export_all
    from ..interfaces.space import SPACES
    from ..interfaces.space import bundled_examples as demo_examples
    from ..scoring.export import exportable_metrics
    from ..scoring.registry import available_metrics

    chosen = list(metrics or SPACES)
    unknown = [m for m in chosen if m not in SPACES]
    if unknown:
        raise ReleaseError(f"no release for {', '.join(unknown)}; released metrics (those with a Space): "
                           f"{', '.join(SPACES)}")
    unexported = [m for m in chosen if m not in exportable_metrics()]
    if unexported:
        raise ReleaseError(f"{', '.join(unexported)} has a Space but no export in its spec (an ExportSpec, or a "
                           "CombinationExportSpec for a combination), so no model repo: a release needs both")
    known = available_metrics()
    stored = {m: load_results(m, known) for m in chosen}  # every card's results exist before any work
    if datasets or not bundled_examples:
        resolve_data_dir(data_dir)  # the data is there before any work (else: an error saying how to point at it)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    result = Release(out_dir=out, namespace=namespace)
    with tempfile.TemporaryDirectory(prefix="dialeval-wheel-") as tmp:
        wheel_path = Path(wheel) if wheel else build_wheel(tmp)
        if not wheel_path.is_file():
            raise ReleaseError(f"{wheel_path} is not a file")
        for m in chosen:
            result.models[m] = export_model(m, "default", out / "models" / m, namespace=namespace,
                                            overwrite=overwrite, results=stored[m])
            space = _fresh(out / "spaces" / m, overwrite)
            fields = SPACES[m].fields
            examples = demo_examples(fields) if bundled_examples else space_examples(fields, data_dir)
            result.spaces[m] = build_space(m, space, wheel_path, examples)
    if datasets:
        for repo, names in dataset_repos().items():
            target = _fresh(out / "datasets" / repo, overwrite)
            export_all(target, data_dir, names=names,
                       command=f"dialeval release --output-dir DIR (the {repo} dataset repo)")
            result.datasets[repo] = target
    return result


def push(result: Release, *, token: str | None = None, private: bool = False) -> list[str]:
    """Create each repo (if needed) and upload its folder; returns the repo URLs. Needs the network and a token."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    urls = []
    for repo_type, repo_id, folder in result.repos():
        api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True,
                        space_sdk="gradio" if repo_type == "space" else None)
        api.upload_folder(repo_id=repo_id, repo_type=repo_type, folder_path=str(folder),
                          commit_message="dialeval release")
        urls.append(f"https://huggingface.co/{'' if repo_type == 'model' else repo_type + 's/'}{repo_id}")
    return urls


__all__ = ["BASE_MODEL", "Release", "ReleaseError", "build_space", "build_wheel", "export_model",
           "push", "release", "space_examples", "space_requirements"]
