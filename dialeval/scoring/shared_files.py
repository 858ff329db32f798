"""A checkpoint folder that takes some of its files from the checkpoint beside it instead of holding copies:
``shared_files.json``.

Shipped checkpoints of a metric sit side by side (``dialeval/checkpoints/<metric>/<name>``), and two of them may need
the same files beside their models: GRADE's base checkpoint reads the graph tables (``graph/``) and keyword IDF
(``keywords.json``) of the default, byte for byte (the node vectors are MiniLM's whatever the encoder). Such a folder
holds no copy of them, but ``shared_files.json``::

    {"format": "dialeval-shared-files", "version": 1, "checkpoint": "default",
     "files": {"graph/embeddings.safetensors": {"bytes": 4215442, "sha256": "..."}, ..., "keywords.json": {...}}}

``checkpoint`` names the source: the checkpoint folder of that name beside this one (``grade/default`` for
``grade/base``), which holds its own copies. ``files`` holds every shared file by its path in the folder (the same
path in the source) with its size and sha256. A top-level entry (a file, or a folder with every file under it) is
shared whole.

Reading a shared entry checks it first (:func:`checkpoint_path`, :func:`checkpoint_files`): the source is a checkpoint
folder; it holds each recorded file with the recorded sha256 and, under a shared folder, no file the record lacks;
and the sharing folder holds no copy of its own. Anything else is a :class:`SharedFilesError` that names the folder,
the field and the source, never a silent mix of two versions. A folder without ``shared_files.json`` reads its own
files, as always.

:func:`checkpoint_files` lists a checkpoint's files by their paths in the folder, each where it is: the fingerprint of
a score's signature hashes them (a sharing folder has the fingerprint of the same folder holding copies), ``dialeval
export`` copies them (an exported folder is self-contained and holds no ``shared_files.json``). :func:`share_files`
turns a folder's own copies into the record, after checking they are the source's byte for byte (``dialeval
checkpoint share``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..digest import sha256_file
from ..errors import DialevalError

__all__ = ["SHARED_FILES", "SharedFiles", "SharedFilesError", "checkpoint_files", "checkpoint_path",
           "read_shared_files", "share_files"]

#: The record of a folder that shares files, in the folder.
SHARED_FILES = "shared_files.json"
FORMAT = "dialeval-shared-files"
VERSION = 1
_SHA256 = re.compile(r"[0-9a-f]{64}")


class SharedFilesError(DialevalError, ValueError):
    """A ``shared_files.json`` that cannot be read or honoured (its source missing or changed), or a share that is
    refused (the copies are not the source's); the message names the folder, the field and the source."""


@dataclass(frozen=True)
class SharedFiles:
    """The record of ``folder``: the files it takes from checkpoint ``checkpoint`` beside it (``files``: path in the
    folder -> ``{"bytes", "sha256"}``)."""

    folder: Path
    checkpoint: str
    files: Mapping[str, Mapping[str, Any]]

    @property
    def source(self) -> Path:
        """The source checkpoint's folder: the one named ``checkpoint`` beside ``folder``."""
        return self.folder.parent / self.checkpoint

    @property
    def entries(self) -> list[str]:
        """The shared top-level entries (files and folders of the checkpoint), sorted."""
        return sorted({PurePosixPath(path).parts[0] for path in self.files})

    @property
    def bytes(self) -> int:
        return sum(int(info["bytes"]) for info in self.files.values())

    def under(self, entry: str) -> list[str]:
        """The recorded files of top-level entry ``entry``, sorted."""
        return sorted(path for path in self.files if PurePosixPath(path).parts[0] == entry)


def _is_name(name: Any) -> bool:
    """Whether ``name`` is one folder's name (a checkpoint beside another), not a path."""
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and os.sep not in name


def _is_inner_path(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return (bool(parts) and not path.startswith("/") and "\\" not in path and ".." not in parts and "." not in parts
            and path != SHARED_FILES)


def read_shared_files(folder: str | os.PathLike) -> SharedFiles | None:
    """The record of checkpoint ``folder`` (None: it shares nothing), checked field by field."""
    folder = Path(folder)
    path = folder / SHARED_FILES
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise SharedFilesError(f"{path}: cannot read the record of the files this checkpoint shares ({err})") from None

    def bad(field: str, expected: str) -> SharedFilesError:
        return SharedFilesError(f"{path}: field {field!r} must be {expected}")

    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise bad("format", repr(FORMAT))
    if data.get("version") != VERSION:
        raise bad("version", str(VERSION))
    if not _is_name(data.get("checkpoint")):
        raise bad("checkpoint", "the name of the checkpoint folder beside this one that holds the files (e.g. "
                                "'default')")
    files = data.get("files")
    if not isinstance(files, dict) or not files:
        raise bad("files", "an object of the shared files: {path in the folder: {bytes, sha256}}")
    for name, info in files.items():
        if not _is_inner_path(name):
            raise bad("files", f"keyed by paths inside the folder, not {name!r}")
        if (not isinstance(info, dict) or not isinstance(info.get("bytes"), int) or info["bytes"] < 0
                or not isinstance(info.get("sha256"), str) or not _SHA256.fullmatch(info["sha256"])):
            raise bad(f"files[{name!r}]", "{\"bytes\": a size, \"sha256\": 64 hex digits}")
    return SharedFiles(folder, data["checkpoint"], files)


def _files_under(path: Path, root: Path) -> set[str]:
    """The files of ``path`` (itself if a file, every file under it if a folder), as paths relative to ``root``."""
    if path.is_file():
        return {path.relative_to(root).as_posix()}
    return {p.relative_to(root).as_posix() for p in path.rglob("*") if p.is_file()}


def _check_entry(shared: SharedFiles, entry: str) -> None:
    """Refuse to read shared entry ``entry`` unless the source holds exactly the recorded files (the module
    docstring)."""
    source, record = shared.source, shared.folder / SHARED_FILES
    if not (source / "config.json").is_file():
        raise SharedFilesError(
            f"{shared.folder}: {SHARED_FILES} field 'checkpoint' names {shared.checkpoint!r}, but the source "
            f"checkpoint {source} is missing (no config.json), so its shared {', '.join(shared.entries)} cannot be "
            "read")
    if (shared.folder / entry).exists():
        raise SharedFilesError(
            f"{shared.folder}: holds its own {entry} and {record} field 'files' shares it from checkpoint "
            f"{shared.checkpoint!r} ({source}); keep one: remove the copy, or remove the record to read the copy")
    recorded = shared.under(entry)
    for name in recorded:
        path, want = source / name, shared.files[name]["sha256"]
        if not path.is_file():
            raise SharedFilesError(
                f"{shared.folder}: {SHARED_FILES} field 'files' shares {name} from checkpoint {shared.checkpoint!r}, "
                f"but the source has no {path}")
        got = sha256_file(path)
        if got != want:
            raise SharedFilesError(
                f"{shared.folder}: {SHARED_FILES} field 'files' records {name} of checkpoint {shared.checkpoint!r} "
                f"with sha256 {want[:12]}, but {path} has {got[:12]}: the source changed since this folder shared it")
    extra = sorted(_files_under(source / entry, source) - set(recorded))
    if extra:
        raise SharedFilesError(
            f"{shared.folder}: {SHARED_FILES} field 'files' shares {entry} from checkpoint {shared.checkpoint!r}, but "
            f"the source holds {source / extra[0]}, which the record lacks: the source changed since this folder "
            "shared it")


def checkpoint_path(folder: str | os.PathLike, name: str) -> Path:
    """Where the file or folder ``name`` (a top-level entry) of checkpoint ``folder`` is: in the folder, or in its
    source when the folder shares it (checked first: :class:`SharedFilesError` otherwise)."""
    folder = Path(folder)
    shared = read_shared_files(folder)
    if shared is None or name not in shared.entries:
        return folder / name
    _check_entry(shared, name)
    return shared.source / name


def checkpoint_files(folder: str | os.PathLike) -> dict[Path, Path]:
    """Every file of checkpoint ``folder`` by its path relative to the folder -> where it is: the folder's own files
    (but ``shared_files.json``) and each shared one in its source, checked (:class:`SharedFilesError`)."""
    folder = Path(folder)
    files = {p.relative_to(folder): p for p in folder.rglob("*") if p.is_file()}
    shared = read_shared_files(folder)
    if shared is None:
        return files
    del files[Path(SHARED_FILES)]
    for entry in shared.entries:
        _check_entry(shared, entry)
        files.update({Path(name): shared.source / name for name in shared.under(entry)})
    return files


def share_files(folder: str | os.PathLike, checkpoint: str, names: Iterable[str]) -> SharedFiles:
    """Make checkpoint ``folder`` take its top-level entries ``names`` (files or folders) from the checkpoint named
    ``checkpoint`` beside it: after checking that the folder's copies and the source's are the same files, byte for
    byte (else a :class:`SharedFilesError` naming the first file that differs, in sorted order, and nothing is
    changed), write ``shared_files.json`` and remove the copies. Returns the record."""
    folder = Path(folder)
    names = sorted(set(names))
    if not (folder / "config.json").is_file():
        raise SharedFilesError(f"{folder} is not a checkpoint folder (no config.json)")
    if not names:
        raise SharedFilesError(f"{folder}: no files to share were named")
    if (folder / SHARED_FILES).exists():
        raise SharedFilesError(f"{folder} shares files already ({folder / SHARED_FILES}); a folder shares once")
    if not _is_name(checkpoint):
        raise SharedFilesError(f"the source {checkpoint!r} must be the name of a checkpoint folder beside {folder} "
                               "(e.g. 'default'), not a path")
    source = folder.parent / checkpoint
    if not (source / "config.json").is_file():
        raise SharedFilesError(f"{folder}: no checkpoint {checkpoint!r} beside it to share with ({source} holds no "
                               "config.json)")
    if source.resolve() == folder.resolve():
        raise SharedFilesError(f"{folder}: a checkpoint cannot share files with itself")
    if (source / SHARED_FILES).exists():
        raise SharedFilesError(f"{folder}: checkpoint {checkpoint!r} ({source}) shares its own files; share with the "
                               "checkpoint that holds them")
    kinds = [json.loads((f / "config.json").read_text(encoding="utf-8")).get("model_type") for f in (folder, source)]
    if kinds[0] != kinds[1]:
        raise SharedFilesError(f"{folder} holds a {kinds[0]!r} model and checkpoint {checkpoint!r} ({source}) a "
                               f"{kinds[1]!r} one: only checkpoints of one metric share files")
    files = {}
    for name in names:
        if not (folder / name).exists():
            raise SharedFilesError(f"{folder} holds no {name} to share")
        mine, theirs = _files_under(folder / name, folder), _files_under(source / name, source)
        for path in sorted(mine | theirs):
            if path not in theirs or path not in mine:
                missing = source / path if path not in theirs else folder / path
                raise SharedFilesError(f"{folder / path} differs from checkpoint {checkpoint!r}'s: {missing} does not "
                                       "exist; nothing was changed")
            digest = sha256_file(folder / path)
            if digest != sha256_file(source / path):
                raise SharedFilesError(f"{folder / path} differs from {source / path} (checkpoint {checkpoint!r}); "
                                       "nothing was changed")
            files[path] = {"bytes": (folder / path).stat().st_size, "sha256": digest}
    record = {"format": FORMAT, "version": VERSION, "checkpoint": checkpoint, "files": files}
    tmp = folder / f".{SHARED_FILES}.tmp"
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(folder / SHARED_FILES)
    for name in names:
        if (folder / name).is_dir():
            shutil.rmtree(folder / name)
        else:
            (folder / name).unlink()
    return SharedFiles(folder, checkpoint, files)
