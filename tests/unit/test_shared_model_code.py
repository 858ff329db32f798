"""One source for the model code that several custom-code folders share (modeling/shared/modeling_shared.py): every
folder that imports it carries a byte-identical copy, the refresh writes the copies and an export refuses a drifted
one; what the shared code does (adapters, base-encoder weights, small checkpoints, the held load report); the one
"positive above negative, ties one half" share of the statistics and the recipes; the shared shuffled batches."""

from __future__ import annotations

import json
import logging
import shutil

import numpy as np
import pytest
import torch
from torch import nn

from dialeval.modeling.shared import modeling_shared as shared
from dialeval.ranking import auc, win_share
from dialeval.scoring.export import (
    _check_shared_model_code,
    refresh_shared_model_code,
    shared_model_code_copies,
    shared_model_code_source,
    stale_shared_model_code,
)
from dialeval.training import shuffled_batches

from conftest import ROOT

MODEL_CODE = ROOT / "modeling"
#: The folders whose model code imports the shared code: all of them (adapters and small checkpoints for GRADE, RADE
#: and the AMR evaluator; int8 rows for every one).
EXPECTED_FOLDERS = {"amr_eval", "bert_ruber", "dynaeval", "grade", "rade"}
TINY_ENCODER = {"vocab_size": 50, "hidden_size": 8, "num_hidden_layers": 3, "num_attention_heads": 2,
                "intermediate_size": 16, "max_position_embeddings": 32, "type_vocab_size": 2}


# -- one source, identical copies ---------------------------------------------------------------------------------


def test_every_folder_that_imports_the_shared_code_holds_a_byte_identical_copy():
    source = shared_model_code_source(MODEL_CODE)
    assert source == MODEL_CODE / "shared" / "modeling_shared.py" and source.is_file()
    copies = shared_model_code_copies(MODEL_CODE)
    assert {copy.parent.name for copy in copies} == EXPECTED_FOLDERS
    assert stale_shared_model_code(MODEL_CODE) == [], "run dialeval.scoring.export.refresh_shared_model_code()"
    for copy in copies:
        assert copy.read_bytes() == source.read_bytes(), copy
    # no folder carries a copy that nothing of it imports (it would drift unchecked)
    carried = {p for p in MODEL_CODE.glob("*/modeling_shared.py") if p.parent.name != "shared"}
    assert carried == set(copies)


def test_the_library_imports_the_copies():
    """The installed folders' modules are the copies: their classes come from each folder's own modeling_shared."""
    import dialeval.modeling.amr_eval.modeling_amr_eval as amr_eval
    import dialeval.modeling.bert_ruber.modeling_bert_ruber as bert_ruber
    import dialeval.modeling.dynaeval.modeling_dynaeval as dynaeval
    import dialeval.modeling.grade.modeling_grade as grade
    import dialeval.modeling.rade.modeling_rade as rade

    for module, folder in ((grade, "grade"), (rade, "rade"), (amr_eval, "amr_eval")):
        assert module.LoRALinear.__module__ == f"dialeval.modeling.{folder}.modeling_shared"
        assert issubclass(getattr(module, {"grade": "GradeModel", "rade": "RadeModel",
                                           "amr_eval": "AmrEvalModel"}[folder]),
                          module.SmallCheckpointMixin)
    for module, folder in ((bert_ruber, "bert_ruber"), (dynaeval, "dynaeval")):  # the int8 rows only
        assert module.store_int8_rows.__module__ == f"dialeval.modeling.{folder}.modeling_shared"


def test_refresh_writes_the_copies_that_differ_or_are_missing(tmp_path):
    tree = tmp_path / "modeling"
    shutil.copytree(MODEL_CODE, tree, ignore=shutil.ignore_patterns("__pycache__"))
    source = shared_model_code_source(tree).read_bytes()
    (tree / "grade" / "modeling_shared.py").write_bytes(source + b"# edited by hand\n")
    (tree / "rade" / "modeling_shared.py").unlink()
    (tree / "newmodel").mkdir()
    (tree / "newmodel" / "modeling_newmodel.py").write_text("from .modeling_shared import LoRALinear\n")
    (tree / "newmodel" / "configuration_newmodel.py").write_text("import json\n")
    (tree / "plainmodel").mkdir()
    (tree / "plainmodel" / "modeling_plainmodel.py").write_text("import torch\n")
    expected = [tree / name / "modeling_shared.py" for name in ("grade", "newmodel", "rade")]

    assert stale_shared_model_code(tree) == expected
    assert refresh_shared_model_code(tree) == expected
    assert stale_shared_model_code(tree) == [] and refresh_shared_model_code(tree) == []
    for copy in shared_model_code_copies(tree):
        assert copy.read_bytes() == source
    assert not (tree / "plainmodel" / "modeling_shared.py").exists()  # a folder that does not import it gets none
    assert not (tree / "newmodel" / "configuration_shared.py").exists()  # nor one whose files import another


def test_the_encoder_configuration_is_one_source_held_equal_in_every_folder_that_uses_it(tmp_path):
    """``configuration_shared.py`` (the MiniLM literal and the cleaning of an encoder config) is held like
    ``modeling_shared.py``: a byte-identical copy in each folder whose configuration imports it, refreshed together."""
    from transformers import BertConfig

    from dialeval.modeling.grade import configuration_shared
    from dialeval.scoring.export import SHARED_CONFIGURATION_CODE

    source = shared_model_code_source(MODEL_CODE, SHARED_CONFIGURATION_CODE)
    copies = shared_model_code_copies(MODEL_CODE, SHARED_CONFIGURATION_CODE)
    assert {copy.parent.name for copy in copies} == EXPECTED_FOLDERS
    for copy in copies:
        assert copy.read_bytes() == source.read_bytes(), copy
    carried = {p for p in MODEL_CODE.glob("*/configuration_shared.py") if p.parent.name != "shared"}
    assert carried == set(copies)
    # one literal, one cleaning: every configuration reads the same
    from dialeval.modeling.amr_eval import AmrEvalConfig, AmrParserConfig
    from dialeval.modeling.grade import GradeConfig
    from dialeval.modeling.rade import RadeConfig

    cleaned = configuration_shared.clean_encoder_config(BertConfig(**TINY_ENCODER))
    assert not set(cleaned) & set(configuration_shared.ENCODER_META_KEYS) and cleaned["hidden_size"] == 8
    for config_class in (GradeConfig, RadeConfig, AmrEvalConfig, AmrParserConfig):
        assert config_class().encoder_config == configuration_shared.MINILM_L6_ENCODER_CONFIG, config_class
        assert config_class(encoder_config=BertConfig(**TINY_ENCODER)).encoder_config == cleaned, config_class

    tree = tmp_path / "modeling"
    shutil.copytree(MODEL_CODE, tree, ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "rade" / "configuration_shared.py").write_text("# edited by hand\n")
    assert stale_shared_model_code(tree) == [tree / "rade" / "configuration_shared.py"]
    assert refresh_shared_model_code(tree) == [tree / "rade" / "configuration_shared.py"]
    assert (tree / "rade" / "configuration_shared.py").read_bytes() == source.read_bytes()
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "configuration_shared.py").write_text("# drifted\n")
    with pytest.raises(RuntimeError, match="configuration_shared.py differs from its source"):
        _check_shared_model_code(folder)


def test_export_refuses_a_copy_that_differs_from_the_source(tmp_path):
    folder = tmp_path / "export"
    folder.mkdir()
    _check_shared_model_code(folder)  # a folder without shared code (one written before the models imported it)
    (folder / "modeling_shared.py").write_bytes(shared_model_code_source(MODEL_CODE).read_bytes())
    _check_shared_model_code(folder)
    (folder / "modeling_shared.py").write_text("# drifted\n")
    with pytest.raises(RuntimeError, match="differs from its source"):
        _check_shared_model_code(folder)


# -- what the shared code does --------------------------------------------------------------------------------------


def test_lora_linear_starts_as_its_linear_layer_and_adds_the_scaled_low_rank_update():
    torch.manual_seed(0)
    adapted = shared.LoRALinear(6, 4, rank=2, alpha=8.0)
    plain = nn.Linear(6, 4)
    plain.load_state_dict({"weight": adapted.weight, "bias": adapted.bias})
    x = torch.randn(3, 6)
    torch.testing.assert_close(adapted(x), plain(x), atol=0, rtol=0)
    assert torch.count_nonzero(adapted.lora_A) > 0 and torch.count_nonzero(adapted.lora_B) == 0
    with torch.no_grad():
        adapted.lora_B.normal_()
    torch.testing.assert_close(adapted(x), plain(x) + 4.0 * (x @ adapted.lora_A.T @ adapted.lora_B.T))
    assert "rank=2, scale=4" in repr(adapted)
    adapted.reset_adapter()
    torch.testing.assert_close(adapted(x), plain(x), atol=0, rtol=0)


def test_is_adapter_weight_reads_the_last_name_component_only():
    assert shared.is_adapter_weight("encoder.encoder.layer.0.attention.self.query.lora_A")
    assert shared.is_adapter_weight("lora_B")
    assert not shared.is_adapter_weight("encoder.encoder.layer.0.attention.self.query.weight")
    assert not shared.is_adapter_weight("lora_head.weight")  # a module named lora_*, not an adapter weight


@pytest.mark.parametrize("layers, adapted_layers", [(-1, {"0", "1", "2"}), (1, {"2"}), (2, {"1", "2"}), (0, set())])
def test_add_adapters_replaces_the_projections_of_the_top_layers(layers, adapted_layers):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    encoder = BertModel(BertConfig(**TINY_ENCODER), add_pooling_layer=False)
    count = shared.add_adapters(encoder, layers, rank=2, alpha=4.0)
    names = [n for n, m in encoder.named_modules() if isinstance(m, shared.LoRALinear)]
    assert count == len(names) == len(shared.ADAPTED_PROJECTIONS) * len(adapted_layers)
    assert {n.split(".")[2] for n in names} == adapted_layers
    assert all(n.endswith(shared.ADAPTED_PROJECTIONS) for n in names)


def test_bert_weights_renames_bare_and_prefixed_checkpoints():
    t = torch.zeros(1)
    bare = {"embeddings.word_embeddings.weight": t, "encoder.layer.0.output.dense.weight": t,
            "pooler.dense.weight": t, "embeddings.position_ids": t, "embeddings.token_type_ids": t}
    assert set(shared.bert_weights(bare, "encoder.")) == {"encoder.embeddings.word_embeddings.weight",
                                                          "encoder.encoder.layer.0.output.dense.weight"}
    prefixed = {"bert.embeddings.LayerNorm.gamma": t, "model.encoder.layer.0.output.LayerNorm.beta": t,
                "cls.predictions.bias": t}
    assert set(shared.bert_weights(prefixed, "decoder.bert.")) == {
        "decoder.bert.embeddings.LayerNorm.weight", "decoder.bert.encoder.layer.0.output.LayerNorm.bias"}


def test_masked_mean_ignores_masked_positions_and_gives_zeros_without_any():
    hidden = torch.arange(12, dtype=torch.float).view(2, 3, 2)
    mask = torch.tensor([[1, 0, 1], [0, 0, 0]])
    torch.testing.assert_close(shared.masked_mean(hidden, mask), torch.tensor([[2.0, 3.0], [0.0, 0.0]]))


def test_held_load_report_holds_the_report_only_and_releases_it(caplog):
    held = shared.HeldLoadReport()
    with caplog.at_level(logging.INFO, logger=shared.TRANSFORMERS_LOAD_LOGGER):
        with held:
            held.logger.warning("some other warning")
            held.logger.warning("GradeModel LOAD REPORT from: x")
        assert [r.getMessage() for r in caplog.records] == ["some other warning"]
        assert len(held.records) == 1
        held.logger.warning("after LOAD REPORT")  # the filter is gone after the block
        held.release()
    assert [r.getMessage() for r in caplog.records] == ["some other warning", "after LOAD REPORT",
                                                        "GradeModel LOAD REPORT from: x"]


def test_a_missing_trained_weight_is_an_error_not_a_fill_from_the_base(tmp_path):
    """A small checkpoint may lack only the weights training leaves frozen; a missing trained encoder weight (GRADE's
    top layer) is an error instead of a silent copy of the untrained base weight."""
    from dialeval.modeling.grade import GradeConfig, GradeModel

    torch.manual_seed(0)
    model = GradeModel(GradeConfig(encoder_config=TINY_ENCODER, base_encoder="no-such-encoder",
                                   trainable_encoder_layers=1, use_graph=False, text_dim=6, fusion_dims=[4]))
    dropped = "encoder.encoder.layer.2.output.dense.weight"  # the top layer, trained
    assert dropped not in model.weights_from_base_encoder()
    model.save_pretrained(tmp_path / "ckpt", state_dict={k: v for k, v in model.state_dict().items() if k != dropped})
    with pytest.raises(ValueError, match=f"lacks 1 weight.*training changes.*{dropped}"):
        GradeModel.from_pretrained(tmp_path / "ckpt")


@pytest.mark.parametrize("trainable_only", [False, True])
def test_encoder_weights_in_checkpoint_follows_what_is_saved(tmp_path, trainable_only):
    from dialeval.modeling.rade import RadeConfig, RadeModel

    torch.manual_seed(0)
    model = RadeModel(RadeConfig(encoder_config=TINY_ENCODER, base_encoder="", regressor_dims=[4],
                                 trainable_encoder_layers=1))
    model.save_pretrained(tmp_path / "ckpt", trainable_only=trainable_only, drop_decoder=True)
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert config["encoder_weights_in_checkpoint"] is (not trainable_only) and config["use_decoder"] is False
    assert model.config.encoder_weights_in_checkpoint is True and model.config.use_decoder is True  # restored


# -- weights stored as int8 rows ---------------------------------------------------------------------------------------


def test_quantised_rows_stay_within_half_a_step_and_zero_rows_stay_zero():
    """One scale per row, its largest magnitude / 127; every value within half a step; GRADE's node table uses the
    same functions."""
    from dialeval.metrics.grade import tables
    from dialeval.training import quantise

    # the library's one import place of the int8 helpers is the source (dialeval.modeling.shared), no metric's copy
    assert tables.quantise_rows is shared.quantise_rows and tables.dequantise_rows is shared.dequantise_rows
    assert quantise.quantise_rows is shared.quantise_rows
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 50)).astype(np.float32) * rng.uniform(1e-3, 10, size=(200, 1)).astype(np.float32)
    x[7] = 0
    q, scale = shared.quantise_rows(torch.from_numpy(x).to(torch.float16))
    q, scale = q.numpy(), scale.numpy()
    assert q.dtype == np.int8 and scale.dtype == np.float32
    assert np.abs(q).max(axis=1)[np.arange(200) != 7].min() == 127
    assert scale[7] == 0 and not q[7].any()
    x16 = x.astype(np.float16).astype(np.float32)  # what was quantised
    err = np.abs(shared.dequantise_rows(torch.from_numpy(q), torch.from_numpy(scale)).numpy() - x16)
    assert (err <= scale[:, None] / 2 * (1 + 1e-5)).all()
    assert (shared.quantise_rows(torch.zeros(0, 3))[0].shape, shared.quantise_rows(torch.zeros(2, 0))[1].tolist()
            ) == ((0, 3), [0.0, 0.0])
    with pytest.raises(ValueError, match="2-D"):
        shared.quantise_rows(torch.zeros(3))


def test_an_int8_row_linear_computes_with_its_dequantised_weight_and_refuses_to_train():
    torch.manual_seed(0)
    linear = nn.Linear(6, 4)
    int8 = shared.Int8RowLinear.from_linear(linear).eval()
    assert int8.weight.dtype == torch.int8 and int8.weight_scale.dtype == torch.float32
    assert set(int8.state_dict()) == {"weight", "weight_scale", "bias"}
    assert [n for n, _ in int8.named_parameters()] == ["bias"]
    x = torch.randn(3, 6)
    weight = shared.dequantise_rows(*shared.quantise_rows(linear.weight))
    torch.testing.assert_close(int8(x), nn.functional.linear(x, weight, linear.bias), atol=0, rtol=0)
    torch.testing.assert_close(int8(x), linear(x), atol=0.02, rtol=0)
    assert int8(x.double()).dtype == torch.float64
    int8.train()
    with pytest.raises(RuntimeError, match="int8 rows.*cannot train"):
        int8(x)
    with torch.no_grad():
        int8(x)  # a forward in training mode without gradients (e.g. a validation pass) is allowed


def test_store_int8_rows_replaces_the_named_linear_layers_and_refuses_anything_else():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4), shared.LoRALinear(4, 4, rank=1, alpha=1.0))
    shared.store_int8_rows(model, ["0"])
    assert type(model[0]) is shared.Int8RowLinear and type(model[2]) is shared.LoRALinear
    with pytest.raises(ValueError, match="'1', a LayerNorm: only a plain nn.Linear"):
        shared.store_int8_rows(model, ["1"])
    with pytest.raises(ValueError, match="'2', a LoRALinear"):
        shared.store_int8_rows(model, ["2"])
    with pytest.raises(ValueError, match="'head', which is not a module or parameter of Sequential"):
        shared.store_int8_rows(model, ["head"])
    with pytest.raises(ValueError, match=r"'2.weight', a parameter that Sequential does not read as int8 rows \(it "
                                         r"can store: \[\]\)"):  # a class lists the others it reads so
        shared.store_int8_rows(model, ["2.weight"])


def test_models_build_the_weights_their_config_names_as_int8_rows():
    """Built from a config (not only loaded), whatever weight it names: GRADE's graph attention projection too, which
    its own weight init would otherwise draw into; BERT-RUBER's and PONE's MLP and bilinear matrix, DynaEval's
    projections, LSTM, edge attention and relational layer (buffers in place of the parameters, which their own
    weight init leaves alone). A weight the model cannot read as int8 rows (DynaEval's LSTM as a module, PyG's linear
    layer, a parameter its class does not list, a linear layer's weight named as a parameter) is refused."""
    from dialeval.modeling.bert_ruber import BertRuberConfig, BertRuberModel, PoneConfig, PoneModel
    from dialeval.modeling.dynaeval import DynaEvalConfig, DynaEvalModel
    from dialeval.modeling.grade import GradeConfig, GradeModel
    from dialeval.modeling.rade import RadeConfig, RadeModel

    int8 = ["gat_layers.0.lin", "fusion.0", "encoder.encoder.layer.2.output.dense"]
    grade = GradeModel(GradeConfig(encoder_config=TINY_ENCODER, base_encoder="", node_feature_dim=4, graph_hidden=8,
                                   gat_layers=1, gat_heads=2, readout_dim=6, text_dim=6, fusion_dims=[4],
                                   int8_weights=int8))
    rade = RadeModel(RadeConfig(encoder_config=TINY_ENCODER, base_encoder="", regressor_dims=[4], use_decoder=False,
                                int8_weights=["regressor.1"]))
    ruber = BertRuberModel(BertRuberConfig(embedding_dim=6, hidden_dims=[5, 4],
                                           int8_weights=["bilinear", "hidden.1", "output"]))
    pone = PoneModel(PoneConfig(embedding_dim=6, hidden_dims=[5], int8_weights=["hidden.0"]))
    dynaeval_config = {"utterance_dim": 6, "node_dim": 8, "graph_dim": 6, "lstm_layers": 2, "num_bases": 2}
    graph = ["edge_attention.weight", "lstm.weight_hh_l1_reverse", "lstm.weight_ih_l0", "rgcn.basis", "rgcn.root"]
    dynaeval = DynaEvalModel(DynaEvalConfig(**dynaeval_config, int8_weights=["input_proj", "hidden", *graph]))
    for model, names, params in ((grade, set(int8), set()), (rade, {"regressor.1"}, set()),
                                 (ruber, {"hidden.1", "output"}, {"bilinear"}), (pone, {"hidden.0"}, set()),
                                 (dynaeval, {"input_proj", "hidden"}, set(graph))):  # each folder's own class
        assert {n for n, m in model.named_modules() if type(m).__name__ == "Int8RowLinear"} == names
        state = model.state_dict()
        assert {k for k, v in state.items() if v.dtype == torch.int8} == {f"{n}.weight" for n in names} | params
        assert all(state[f"{k}_scale"].dtype == torch.float32 for k in params)
        assert not params & {n for n, _ in model.named_parameters()}
    assert ruber.bilinear_scale.shape == (6,) and dynaeval.rgcn.basis_scale.shape == (2, 8)  # a scale per row
    assert dynaeval.dtype == torch.float32  # the float weights' dtype, which the inputs are cast to
    with pytest.raises(ValueError, match="'regressor.0', a Dropout"):
        RadeModel(RadeConfig(encoder_config=TINY_ENCODER, base_encoder="", regressor_dims=[4], use_decoder=False,
                             int8_weights=["regressor.0"]))
    with pytest.raises(ValueError, match="'bilinear', which is not a module or parameter of RadeModel"):
        RadeModel(RadeConfig(encoder_config=TINY_ENCODER, base_encoder="", regressor_dims=[4], use_decoder=False,
                             int8_weights=["bilinear"]))
    for name, kind in (("lstm", "LSTM"), ("graph_conv.lin_rel", "Linear")):  # PyG's Linear is no plain nn.Linear
        with pytest.raises(ValueError, match=f"'{name}', a {kind}: only a plain nn.Linear"):
            DynaEvalModel(DynaEvalConfig(**dynaeval_config, int8_weights=[name]))
    for name in ("graph_conv.lin_rel.weight", "lstm.bias_ih_l0", "rgcn.comp", "hidden.weight"):
        with pytest.raises(ValueError, match=f"'{name}', a parameter that DynaEvalModel does not read as int8 rows"):
            DynaEvalModel(DynaEvalConfig(**dynaeval_config, int8_weights=[name]))


def test_int8_rows_compute_as_the_float_weights_they_hold_and_refuse_to_train():
    """A model whose weights are int8 rows scores as the float model holding their dequantised values, to the bit
    (BERT-RUBER's bilinear matrix; DynaEval's LSTM, run by its own loop, which matches torch's, and graph weights);
    in training mode with gradients on, reading them is an error."""
    from dialeval.modeling.bert_ruber import BertRuberConfig, BertRuberModel
    from dialeval.modeling.dynaeval import DynaEvalConfig, DynaEvalModel

    torch.manual_seed(0)
    dynaeval_config = {"utterance_dim": 6, "node_dim": 8, "graph_dim": 6, "lstm_layers": 2, "num_bases": 2}
    cases = [(BertRuberModel, BertRuberConfig, {"embedding_dim": 6, "hidden_dims": [5]},
              lambda: {"context_embeds": torch.randn(3, 6), "response_embeds": torch.randn(3, 6)}),
             (DynaEvalModel, DynaEvalConfig, dynaeval_config,
              lambda: {"utterance_embeddings": torch.randn(7, 6), "dialogue_lengths": torch.tensor([4, 3])})]
    for model_class, config_class, config, inputs in cases:
        float_model = model_class(config_class(**config)).eval()
        params = sorted(n for n, k in shared.int8_row_weights(float_model).items() if n == k)
        assert params, model_class
        int8_model = model_class(config_class(**config, int8_weights=params)).eval()
        state = float_model.state_dict()
        for name in params:
            state[name], state[f"{name}_scale"] = shared.quantise_rows(state[name])
        int8_model.load_state_dict(state)
        with torch.no_grad():
            for name in params:  # the float model holding the values the int8 rows stand for
                float_model.get_parameter(name).copy_(shared.dequantise_rows(state[name], state[f"{name}_scale"]))
        x = inputs()
        with torch.inference_mode():
            assert torch.equal(int8_model(**x)[0], float_model(**x)[0]), model_class
        int8_model.train()
        with pytest.raises(RuntimeError, match="is stored as int8 rows.*cannot train"):
            int8_model(**x)


def test_int8_weights_in_a_config_is_a_sorted_list_of_module_names():
    from dialeval.modeling.bert_ruber import BertRuberConfig, PoneConfig
    from dialeval.modeling.dynaeval import DynaEvalConfig
    from dialeval.modeling.grade import GradeConfig
    from dialeval.modeling.rade import RadeConfig

    for config_class in (GradeConfig, RadeConfig, BertRuberConfig, PoneConfig, DynaEvalConfig):
        assert config_class().int8_weights == []
        assert config_class(int8_weights=["b", "a", "b"]).int8_weights == ["a", "b"]
        for bad in ("text_proj", [3], [""]):
            with pytest.raises(ValueError, match="int8_weights must be a list of module or parameter names"):
                config_class(int8_weights=bad)


def test_a_missing_int8_weight_is_an_error_not_a_fill_from_the_base(tmp_path):
    """An int8 weight comes from the checkpoint only: the base encoder's float weight of that name never fills it."""
    from dialeval.modeling.grade import GradeConfig, GradeModel

    torch.manual_seed(0)
    name = "encoder.encoder.layer.0.output.dense"  # frozen (filled from the base) but for int8_weights
    model = GradeModel(GradeConfig(encoder_config=TINY_ENCODER, base_encoder="no-such-encoder",
                                   trainable_encoder_layers=1, use_graph=False, text_dim=6, fusion_dims=[4],
                                   int8_weights=[name]))
    model.save_pretrained(tmp_path / "ckpt", state_dict={k: v for k, v in model.state_dict().items()
                                                         if k != f"{name}.weight"})
    with pytest.raises(ValueError, match=f"lacks 1 weight.*stored as int8 rows.*{name}.weight"):
        GradeModel.from_pretrained(tmp_path / "ckpt")


# -- the "positive above negative, ties one half" share -------------------------------------------------------------


def test_win_share_counts_ties_one_half_and_its_pooled_mean_is_the_auc():
    pos = np.array([0.2, 0.5, 0.5, 0.9, 0.1])
    assert win_share(pos, np.array([0.5, 0.1, 0.5, 0.5, 0.1])).tolist() == [0.0, 1.0, 0.5, 1.0, 0.5]
    neg = np.array([0.5, 0.1, 0.3, 0.5])
    pooled = win_share(pos[:, None], neg[None, :]).mean()
    assert pooled == auc(pos, neg)  # the rank formula gives the same rational number, correctly rounded
    assert auc(np.array([1.0, 2.0]), np.array([0.0, 0.5])) == 1.0
    assert auc(np.array([0.5]), np.array([0.5])) == 0.5


def test_the_recipes_validation_figures_use_the_shared_share():
    """GRADE's pooled AUC, the AMR evaluator's per-kind AUC and DynaEval's cosine baseline count a tie one half."""
    from dialeval.metrics.amr_eval.data import Example
    from dialeval.metrics.amr_eval.train import discrimination
    from dialeval.metrics.grade.train import validation_metrics

    s_pos, s_neg = torch.tensor([0.3, 0.9, 0.5]), torch.tensor([0.1, 0.5, 0.5])
    assert validation_metrics(s_pos, s_neg)["val_pooled_auc"] == (1 + 3 + 2) / 9  # 0.5 ties 0.5 twice: 1/2 each
    examples = [Example(context=("c",), response="r", label=label, kind=kind, context_id=0)
                for label, kind in ((1, "positive"), (1, "positive"), (0, "random"), (0, "random"))]
    report = discrimination(examples, np.array([0.7, 0.4, 0.4, 0.2]))
    assert report["random"]["auc"] == (1 + 1 + 0.5 + 1) / 4


# -- the shared shuffled batches ------------------------------------------------------------------------------------


def test_shuffled_batches_are_seeded_full_disjoint_batches_per_epoch():
    per_epoch, epoch_batches = shuffled_batches(23, batch_size=5, gradient_accumulation=2, seed=345678)
    assert per_epoch == 4
    first = [b.tolist() for b in epoch_batches(0)]
    assert len(first) == 4 and all(len(b) == 5 for b in first)
    seen = [i for b in first for i in b]
    assert len(set(seen)) == 20 and set(seen) <= set(range(23))
    assert first == [b.tolist() for b in epoch_batches(0)]  # the same for the same (seed, epoch): resumable
    assert first != [b.tolist() for b in epoch_batches(1)]
    _, other_seed = shuffled_batches(23, batch_size=5, gradient_accumulation=2, seed=1)
    assert first != [b.tolist() for b in other_seed(0)]
    with pytest.raises(ValueError, match="less than one step of 5 x 5"):
        shuffled_batches(23, batch_size=5, gradient_accumulation=5, seed=0)
