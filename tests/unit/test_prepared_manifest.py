"""The prepared-run manifest: what --prepare-only records and how a training run checks it."""

import json
import re
from dataclasses import dataclass
from typing import ClassVar

import pytest

from dialeval.errors import DialevalError
from dialeval.training.prepared import (
    MANIFEST_FILE,
    PreparedRunMismatch,
    check_prepared,
    read_manifest,
    sha256_file,
    write_manifest,
)


@dataclass
class Opts:
    seed: int = 1
    sizes: tuple = (3, 4)
    lr: float = 0.1  # not a preparation option
    PREPARATION_FIELDS: ClassVar[tuple[str, ...]] = ("seed", "sizes")

    def preparation_options(self):
        return {name: getattr(self, name) for name in self.PREPARATION_FIELDS}


@pytest.fixture
def prepared(tmp_path):
    run, data = tmp_path / "run", tmp_path / "data"
    (run / "pairs").mkdir(parents=True)
    data.mkdir()
    (run / "pairs" / "train.json").write_text("[1, 2]")
    (run / "texts.json").write_text('["a"]')
    (data / "corpus.jsonl").write_text("{}\n")
    manifest = write_manifest(run, metric="m", options=Opts(), files=[run / "pairs" / "train.json", "texts.json"],
                              data_dir=data, data_files=[data / "corpus.jsonl"])
    return run, manifest


def test_the_manifest_records_options_files_data_and_versions(prepared):
    run, manifest = prepared
    assert read_manifest(run) == manifest == json.loads((run / MANIFEST_FILE).read_text())
    assert manifest["metric"] == "m" and manifest["options"] == {"seed": 1, "sizes": [3, 4]}
    assert manifest["files"] == {"pairs/train.json": sha256_file(run / "pairs" / "train.json"),
                                 "texts.json": sha256_file(run / "texts.json")}
    assert list(manifest["data"]) == ["corpus.jsonl"]
    assert manifest["versions"]["torch"] and manifest["versions"]["python"]


def test_the_same_options_pass_and_other_training_options_do_not_matter(prepared):
    run, manifest = prepared
    assert check_prepared(run, metric="m", options=Opts(lr=5.0)) == manifest
    assert check_prepared(run.parent / "elsewhere", metric="m", options=Opts()) is None  # not prepared: None


@pytest.mark.parametrize("change, message", [
    ({"options": Opts(seed=2)}, "prepared with seed=1 (now 2)"),
    ({"options": Opts(sizes=(3, 5))}, "prepared with sizes=[3, 4] (now [3, 5])"),
    ({"metric": "other"}, "prepared for 'm', not 'other'"),
])
def test_a_mismatch_is_one_line_naming_it(prepared, change, message):
    run, _ = prepared
    kwargs = {"metric": "m", "options": Opts(), **change}
    with pytest.raises(PreparedRunMismatch, match=re.escape(message)) as err:
        check_prepared(run, **kwargs)
    assert isinstance(err.value, DialevalError) and "\n" not in str(err.value)


def test_a_missing_or_changed_file_is_refused(prepared):
    run, _ = prepared
    (run / "texts.json").write_text('["b"]')
    with pytest.raises(PreparedRunMismatch, match="texts.json differs"):
        check_prepared(run, metric="m", options=Opts())
    (run / "pairs" / "train.json").unlink()
    with pytest.raises(PreparedRunMismatch, match="lacks pairs/train.json"):
        check_prepared(run, metric="m", options=Opts())


@dataclass
class LaterOpts(Opts):
    """Opts after a new preparation option was added."""

    balanced: bool = False
    PREPARATION_FIELDS: ClassVar[tuple[str, ...]] = ("seed", "sizes", "balanced")


def test_an_option_added_after_preparation_counts_at_its_default(prepared):
    run, manifest = prepared
    assert "balanced" not in manifest["options"]
    assert check_prepared(run, metric="m", options=LaterOpts()) == manifest
    with pytest.raises(PreparedRunMismatch, match=re.escape("balanced=False (now True)")):
        check_prepared(run, metric="m", options=LaterOpts(balanced=True))
