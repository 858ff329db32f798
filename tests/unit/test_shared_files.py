"""A GRADE checkpoint that takes its graph tables and keywords from the checkpoint beside it (``shared_files.json``,
``dialeval checkpoint share``; issue 48, tree size): it scores and signs as the same folder holding copies, exports
as a self-contained folder that scores the same, is listed with its shared bytes counted once, and every way the
record can fail to hold is an error naming the folder, the field and the source. The checkpoints are tiny: a GRADE
model on a tiny BERT encoder, a graph of a few concepts and a keyword IDF of a few words."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import TINY_DIALOGUES as DIALOGUES
from typer.testing import CliRunner

from dialeval.cli import app
from dialeval.scoring.shared_files import SHARED_FILES, SharedFilesError, checkpoint_files, share_files

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TRIPLES = [("AtLocation", "towel", "beach"), ("RelatedTo", "beach", "sea"), ("RelatedTo", "swim", "sea"),
           ("UsedFor", "phone", "call"), ("RelatedTo", "water", "sea"), ("RelatedTo", "soup", "chicken"),
           ("RelatedTo", "doctor", "medicine"), ("IsA", "dog", "animal"), ("RelatedTo", "popcorn", "movie"),
           ("AtLocation", "train", "station"), ("RelatedTo", "coffee", "cafe"), ("AtLocation", "cafe", "station")]
WORDS = ["beach", "sea", "swim", "phone", "water", "soup", "chicken", "doctor", "dog", "movie", "train", "coffee"]
CONTEXTS = [d[:2] for d in DIALOGUES]
RESPONSES = [d[2] for d in DIALOGUES]
TABLES = ("graph", "keywords.json")


def _write_checkpoint(folder: Path, encoder: Path, resources: Path, seed: int) -> Path:
    """A tiny small GRADE checkpoint as the recipe saves its best (its top encoder layer and heads in float16, the
    keyword IDF and graph tables of ``resources``); ``seed`` sets the model's weights."""
    from dialeval.metrics.grade import train as grade_train
    from dialeval.metrics.grade.options import GradeTrainingOptions

    opts = GradeTrainingOptions(output_dir=str(folder), encoder=str(encoder), max_seq_length=32,
                                trainable_encoder_layers=1, seed=seed)
    grade_train.save_small_checkpoint(grade_train.build_model(opts, node_feature_dim=8), folder, resources)
    shutil.copytree(resources / "graph", folder / "graph")
    return folder


@pytest.fixture(scope="module")
def made(tmp_path_factory, tiny_encoder) -> Path:
    """``grade/default`` and ``grade/base`` (other weights, the same tables), made once; tests work on copies."""
    from dialeval.metrics.grade.graph import ConceptGraph
    from dialeval.metrics.grade.keywords import KeywordExtractor
    from dialeval.metrics.grade.tables import GraphTables

    resources = tmp_path_factory.mktemp("resources")
    KeywordExtractor({w: 1 + i % 3 for i, w in enumerate(WORDS)}, 40).save(resources / "keywords.json")
    graph = ConceptGraph.from_triples(TRIPLES, reverse_edges=True)
    vectors = np.random.default_rng(0).normal(size=(graph.n_nodes, 8)).astype(np.float32)
    GraphTables(graph, vectors).save(resources / "graph")
    root = tmp_path_factory.mktemp("made") / "checkpoints"
    for name, seed in (("default", 0), ("base", 1)):
        _write_checkpoint(root / "grade" / name, tiny_encoder, resources, seed)
    return root


@pytest.fixture
def root(made, tmp_path) -> Path:
    """A fresh copy of the made checkpoints: ``<root>/grade/default`` and ``<root>/grade/base``."""
    return Path(shutil.copytree(made, tmp_path / "checkpoints"))


def _score(folder: Path):
    import dialeval

    result = dialeval.load_scorer("grade", checkpoint=folder, device="cpu").score(contexts=CONTEXTS,
                                                                                   responses=RESPONSES)
    return result.scores, result.signature


def _share(folder: Path, *args: str):
    return CliRunner().invoke(app, ["checkpoint", "share", "--checkpoint", str(folder), *args])


def test_a_sharing_folder_scores_and_signs_as_the_same_folder_holding_copies(root):
    base = root / "grade" / "base"
    copies, signature = _score(base)
    res = _share(base)
    assert res.exit_code == 0, res.output
    assert f"{base}: takes graph, keywords.json (5 files, " in res.output and str(root / "grade" / "default") in \
        res.output
    assert not (base / "graph").exists() and not (base / "keywords.json").exists()
    record = json.loads((base / SHARED_FILES).read_text())
    assert record["checkpoint"] == "default" and sorted(record["files"]) == [
        "graph/embeddings.safetensors", "graph/graph.safetensors", "graph/meta.json", "graph/nodes.txt.gz",
        "keywords.json"]
    shared, shared_signature = _score(base)
    assert shared == copies and shared_signature == signature  # the fingerprint reads the shared files in place
    assert _score(root / "grade" / "default")[0] != shared  # the base's own model scored, not the default's
    files = checkpoint_files(base)
    assert files[Path("keywords.json")] == root / "grade" / "default" / "keywords.json"
    assert Path(SHARED_FILES) not in files


def test_a_folder_holding_its_own_tables_reads_them_and_has_no_record(root):
    base = root / "grade" / "base"
    assert checkpoint_files(base) == {p.relative_to(base): p for p in base.rglob("*") if p.is_file()}
    assert not (base / SHARED_FILES).exists()


def test_the_export_of_a_sharing_folder_holds_real_files_and_scores_the_same(root, tmp_path):
    from dialeval.scoring.export import export_checkpoint

    base, default = root / "grade" / "base", root / "grade" / "default"
    expected, _ = _score(base)
    assert _share(base).exit_code == 0
    out = export_checkpoint("grade", base, tmp_path / "exported")
    assert not (out / SHARED_FILES).exists()
    for name in ("keywords.json", "graph/meta.json", "graph/nodes.txt.gz", "graph/graph.safetensors",
                 "graph/embeddings.safetensors"):
        assert (out / name).read_bytes() == (default / name).read_bytes(), name
    shutil.rmtree(default)  # the export needs nothing of the source
    assert _score(out)[0] == expected


def test_share_refuses_copies_that_differ_and_names_the_first_file_changing_nothing(root):
    base, default = root / "grade" / "base", root / "grade" / "default"
    (base / "keywords.json").write_text((base / "keywords.json").read_text().replace('"n_utterances":40',
                                                                                     '"n_utterances":41'))
    meta = base / "graph" / "meta.json"
    meta.write_text(meta.read_text() + " ")
    res = _share(base)
    assert res.exit_code == 2
    assert f"{meta} differs from {default / 'graph' / 'meta.json'} (checkpoint 'default'); nothing was changed" in \
        " ".join(res.output.split())
    assert (base / "graph" / "meta.json").is_file() and not (base / SHARED_FILES).exists()
    shutil.copy(default / "graph" / "meta.json", meta)
    with pytest.raises(SharedFilesError, match="keywords.json differs from .*nothing was changed"):
        share_files(base, "default", TABLES)
    (default / "graph" / "extra.bin").write_bytes(b"x")
    with pytest.raises(SharedFilesError, match=r"graph/extra.bin differs from checkpoint 'default''s: .*base/graph/"
                                               r"extra.bin does not exist"):
        share_files(base, "default", TABLES)


def test_share_refuses_a_missing_source_itself_and_a_folder_sharing_already(root):
    base = root / "grade" / "base"
    with pytest.raises(SharedFilesError, match=r"no checkpoint 'large' beside it to share with \(.*grade/large "
                                               "holds no config.json"):
        share_files(base, "large", TABLES)
    with pytest.raises(SharedFilesError, match="must be the name of a checkpoint folder beside"):
        share_files(base, "../default", TABLES)
    with pytest.raises(SharedFilesError, match="cannot share files with itself"):
        share_files(base, "base", TABLES)
    share_files(base, "default", TABLES)
    with pytest.raises(SharedFilesError, match="shares files already"):
        share_files(base, "default", TABLES)
    with pytest.raises(SharedFilesError, match=r"checkpoint 'base' \(.*\) shares its own files"):
        share_files(root / "grade" / "default", "base", TABLES)


def test_a_shared_source_that_is_gone_or_changed_is_an_error_naming_the_folder_field_and_source(root):
    import dialeval

    base, default = root / "grade" / "base", root / "grade" / "default"
    share_files(base, "default", TABLES)

    def refused(match):
        with pytest.raises(SharedFilesError, match=match):
            dialeval.load_scorer("grade", checkpoint=base, device="cpu")

    keywords = default / "keywords.json"
    original = keywords.read_bytes()
    keywords.write_bytes(original.replace(b'"n_utterances":40', b'"n_utterances":41'))
    refused(rf"{base}: {SHARED_FILES} field 'files' records keywords.json of checkpoint 'default' with sha256 "
            rf"[0-9a-f]{{12}}, but {keywords} has [0-9a-f]{{12}}: the source changed")
    keywords.write_bytes(original)
    (default / "graph" / "extra.bin").write_bytes(b"x")
    refused(rf"field 'files' shares graph from checkpoint 'default', but the source holds {default}/graph/extra.bin, "
            "which the record lacks")
    (default / "graph" / "extra.bin").unlink()
    (default / "graph" / "nodes.txt.gz").unlink()
    refused(rf"field 'files' shares graph/nodes.txt.gz from checkpoint 'default', but the source has no {default}/")
    shutil.rmtree(default)
    refused(rf"{base}: {SHARED_FILES} field 'checkpoint' names 'default', but the source checkpoint {default} is "
            r"missing \(no config.json\)")


def test_a_record_beside_its_own_copy_or_with_a_bad_field_is_refused(root):
    base = root / "grade" / "base"
    share_files(base, "default", TABLES)
    shutil.copy(root / "grade" / "default" / "keywords.json", base / "keywords.json")
    with pytest.raises(SharedFilesError, match=f"{base}: holds its own keywords.json and .* field 'files' shares it"):
        checkpoint_files(base)
    (base / "keywords.json").unlink()
    record = json.loads((base / SHARED_FILES).read_text())
    for field, value, match in (("checkpoint", "../default", "field 'checkpoint' must be the name"),
                                ("version", 2, "field 'version' must be 1"),
                                ("files", {"../x": {"bytes": 1, "sha256": "0" * 64}}, "field 'files' must be keyed"),
                                ("files", {"keywords.json": {"bytes": 1}}, r"field \"files\['keywords.json'\]\"")):
        (base / SHARED_FILES).write_text(json.dumps({**record, field: value}))
        with pytest.raises(SharedFilesError, match=match):
            checkpoint_files(base)


def test_share_refuses_a_metric_without_tables(root, tmp_path):
    from importlib import resources

    folder = tmp_path / "bert_ruber" / "base"
    shutil.copytree(Path(str(resources.files("dialeval"))) / "checkpoints" / "bert_ruber" / "default", folder)
    res = _share(folder)
    assert res.exit_code == 2 and "holds no tables beside its model to share" in res.output


def test_checkpoint_list_counts_the_shared_files_once_and_names_them(root, monkeypatch):
    from dialeval.scoring import checkpoints

    monkeypatch.setattr(checkpoints, "shipped_root", lambda: root)
    base, default = root / "grade" / "base", root / "grade" / "default"
    share_files(base, "default", TABLES)
    shared = sum(f.stat().st_size for f in [default / "keywords.json", *(default / "graph").iterdir()])
    res = CliRunner().invoke(app, ["checkpoint", "list"])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    megabytes = {name: sum(f.stat().st_size for f in (root / "grade" / name).rglob("*")) / 1e6
                 for name in ("default", "base")}
    assert lines[0].startswith(f"grade default: {megabytes['default']:.1f} MB, encoder ")
    assert lines[2].startswith(f"grade base: {megabytes['base']:.1f} MB (and graph, keywords.json of default, "
                               f"{shared / 1e6:.1f} MB, shared: counted there), encoder ")
