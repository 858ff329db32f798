"""Prepared run folders: ``dialeval train <metric> --prepare-only`` writes, a later ``dialeval train <metric>`` reads.

Preparation is the part of a recipe that needs what a bare GPU machine lacks: the data files, spaCy, BM25, GloVe
(pairs, negatives, keywords, augmentations). It writes its results into the run folder and, last, the manifest
``prepared.json``:

- ``metric`` and ``options``: the recipe's :attr:`~dialeval.training.options.TrainingOptions.PREPARATION_FIELDS`;
- ``files``: sha256 of every prepared file (relative to the run folder), so a folder damaged on its way to another
  machine is refused;
- ``data``: sha256 of every data file preparation read (relative to the data directory), for provenance;
- ``versions``: Python and the installed versions of the packages involved.

Training from the folder checks the manifest first (:func:`ensure_prepared`, :func:`check_prepared`): a different metric, option value or
a missing or changed file is one :class:`PreparedRunMismatch` line naming it. A folder without a manifest is
prepared in place by the training command itself (the one-machine route).
"""

from __future__ import annotations

import dataclasses
import json
import platform
from collections.abc import Callable, Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from ..digest import sha256_file
from ..errors import DialevalError

MANIFEST_FILE = "prepared.json"
_PACKAGES = ("dialeval", "torch", "transformers", "torch-geometric", "safetensors", "numpy", "datasets", "spacy",
             "bm25s", "accelerate")


class PreparedRunMismatch(DialevalError, ValueError):
    """A prepared run folder that does not fit the training command (the message names what differs)."""


def save_records(records: Iterable[Any], path: str | Path) -> None:
    """Dataclass instances as gzip-compressed JSON lines (a prepared run's example files)."""
    import gzip

    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(dataclasses.asdict(record)) + "\n")


def load_records(path: str | Path, make: Callable[[dict[str, Any]], Any]) -> list[Any]:
    """The records :func:`save_records` wrote, each rebuilt by ``make(row)``, in file order."""
    import gzip

    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [make(row) for row in map(json.loads, fh)]


def package_versions() -> dict[str, str | None]:
    """Python and the installed version of each package preparation or training may use (None: not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _relative_hashes(root: Path, paths: Iterable[str | Path]) -> dict[str, str]:
    out = {}
    for path in sorted({Path(p) for p in paths}):
        full = path if path.is_absolute() else root / path
        out[full.relative_to(root).as_posix() if full.is_relative_to(root) else str(full)] = sha256_file(full)
    return out


def write_manifest(out: str | Path, *, metric: str, options: Any, files: Iterable[str | Path],
                   data_dir: str | Path | None = None, data_files: Iterable[str | Path] = ()) -> dict[str, Any]:
    """Write ``prepared.json`` into ``out`` (call it last, after every prepared file is written)."""
    out = Path(out)
    manifest = {
        "metric": metric,
        "options": options.preparation_options(),
        "files": _relative_hashes(out, files),
        "data": _relative_hashes(Path(data_dir), data_files) if data_dir is not None else {},
        "versions": package_versions(),
    }
    text = json.dumps(manifest, indent=1)
    (out / MANIFEST_FILE).write_text(text)
    return json.loads(text)  # as a reader sees it (tuples are lists)


def read_manifest(out: str | Path) -> dict[str, Any] | None:
    path = Path(out) / MANIFEST_FILE
    return json.loads(path.read_text()) if path.exists() else None


def _defaults(options: Any) -> dict[str, Any]:
    fields = {f.name: f for f in dataclasses.fields(options)}
    return json.loads(json.dumps({name: fields[name].default for name in options.PREPARATION_FIELDS
                                  if fields[name].default is not dataclasses.MISSING}))


def check_prepared(out: str | Path, *, metric: str, options: Any) -> dict[str, Any] | None:
    """The manifest of ``out`` when it was prepared for ``metric`` with ``options``' preparation values and its
    files are intact; None when ``out`` holds no manifest; :class:`PreparedRunMismatch` otherwise."""
    out = Path(out)
    manifest = read_manifest(out)
    if manifest is None:
        return None
    if manifest.get("metric") != metric:
        raise PreparedRunMismatch(f"{out} was prepared for {manifest.get('metric')!r}, not {metric!r}")
    # an option added after the folder was prepared is recorded at its default (what preparation did then)
    saved = {**_defaults(options), **manifest.get("options", {})}
    now = json.loads(json.dumps(options.preparation_options()))  # as JSON stores them (tuples become lists)
    differs = [f"{k}={saved.get(k)!r} (now {v!r})" for k, v in now.items() if saved.get(k) != v]
    if differs:
        raise PreparedRunMismatch(f"{out} was prepared with {', '.join(differs)}; train with the options it was "
                                  "prepared with, or prepare a new --output-dir")
    for rel, digest in manifest.get("files", {}).items():
        path = out / rel
        if not path.exists():
            raise PreparedRunMismatch(f"{out} lacks {rel}, which its manifest lists; copy the whole folder")
        if sha256_file(path) != digest:
            raise PreparedRunMismatch(f"{out / rel} differs from the file its manifest recorded (damaged in "
                                      "transfer?); copy it again or prepare a new --output-dir")
    return manifest


def ensure_prepared(opts: Any, *, metric: str, prepare: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    """The manifest of ``opts.output_dir``: checked (:func:`check_prepared`) when the folder has one, else written
    by ``prepare(opts)`` here, preparing in place (the one-machine route)."""
    manifest = check_prepared(opts.output_dir, metric=metric, options=opts)
    return prepare(opts) if manifest is None else manifest

