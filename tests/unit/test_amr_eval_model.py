"""The AMR evaluator's small model (dialeval.modeling.amr_eval): two logits from text and graphs, a graph read the
same whatever the order of its concepts, relations and their direction read, the ablations' shapes, adapters as the
only trained encoder weights, and the small-checkpoint / trust_remote_code round trip."""

import pytest
import torch
from conftest import run_without_dialeval

from dialeval.modeling.amr_eval import AmrEvalConfig, AmrEvalModel

TINY = {"vocab_size": 100, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
        "intermediate_size": 64, "max_position_embeddings": 64, "type_vocab_size": 2, "pad_token_id": 0}
RELATIONS = ["ARG0", "ARG1", "mod"]


def tiny_model(**overrides) -> AmrEvalModel:
    torch.manual_seed(0)
    config = AmrEvalConfig(encoder_config=dict(TINY), relations=RELATIONS, hidden_size=16, graph_heads=2,
                           relation_dim=8, lora_rank=0, **overrides)
    return AmrEvalModel(config).eval()


def batch() -> dict[str, torch.Tensor]:
    """Two items; item 0: context graph of 3 concepts, response graph of 2; item 1: an empty context graph and a
    response graph of 2."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 100, (2, 10), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    concepts = torch.randint(5, 100, (7, 3), generator=g)
    concept_mask = torch.ones_like(concepts)
    concept_mask[2, 1:] = 0
    return {"input_ids": ids, "attention_mask": mask, "concept_input_ids": concepts,
            "concept_attention_mask": concept_mask, "concept_graph": torch.tensor([0, 0, 0, 1, 1, 3, 3]),
            "edge_index": torch.tensor([[0, 0, 3, 5], [1, 2, 4, 6]]), "edge_type": torch.tensor([1, 2, 3, 0])}


def test_logits_and_vectors_have_their_shapes_and_ablations_change_what_is_read():
    b = batch()
    with torch.no_grad():
        out = tiny_model()(**b)
        assert out.logits.shape == (2, 2) and out.text_vector.shape == out.graph_vector.shape == (2, 16)
        no_gate = tiny_model(use_gate=False)
        assert not hasattr(no_gate, "gate") and no_gate(**b).logits.shape == (2, 2)
        text_only = tiny_model(use_graph=False, use_gate=False)
        assert text_only.classifier.in_features == 16 and not hasattr(text_only, "graph_layers")
        plain = text_only(input_ids=b["input_ids"], attention_mask=b["attention_mask"])
        assert plain.graph_vector is None and plain.logits.shape == (2, 2)
    with pytest.raises(ValueError, match="graph branch needs"):
        tiny_model()(input_ids=b["input_ids"])
    with pytest.raises(ValueError, match="use_gate needs use_graph"):
        AmrEvalConfig(use_graph=False)
    with pytest.raises(ValueError, match="must lie in"):
        tiny_model()(**dict(b, concept_graph=torch.tensor([0, 0, 0, 1, 1, 3, 4])))


def test_pair_pooling_compares_the_context_with_the_response_in_both_branches():
    from dialeval.modeling.amr_eval.modeling_amr_eval import masked_mean

    model, b = tiny_model(pooling="pair"), batch()
    types = torch.zeros_like(b["input_ids"])
    types[0, 4:], types[1, 5:7] = 1, 1  # item 1: tokens 7-9 are padding
    b["token_type_ids"] = types
    assert model.text_proj.in_features == 4 * 32 and model.graph_proj.in_features == 4 * 16
    with torch.no_grad():
        out = model(**b)
        hidden = model.encoder(input_ids=b["input_ids"], attention_mask=b["attention_mask"],
                               token_type_ids=types).last_hidden_state
        mask = b["attention_mask"].bool()
        c, r = masked_mean(hidden, mask & (types == 0)), masked_mean(hidden, mask & (types == 1))
        torch.testing.assert_close(out.text_vector, model.text_proj(torch.cat([c, r, c * r, (c - r).abs()], -1)))
        # the graph vector reads the two graphs in order: the same graphs with their roles swapped read differently
        swapped = dict(b, concept_graph=b["concept_graph"] ^ 1)  # graph 2i <-> 2i + 1
        assert not torch.allclose(model(**swapped).graph_vector, out.graph_vector)
    with pytest.raises(ValueError, match="pair pooling needs token_type_ids"):
        model(**{k: v for k, v in b.items() if k != "token_type_ids"})
    with pytest.raises(ValueError, match="pooling must be one of joint, pair"):
        AmrEvalConfig(pooling="max")


def test_a_graph_reads_the_same_whatever_the_order_of_its_concepts():
    model, b = tiny_model(), batch()
    order = torch.tensor([6, 2, 0, 5, 1, 4, 3])  # new row k holds old concept order[k]
    new_row = torch.empty_like(order)
    new_row[order] = torch.arange(len(order))
    moved = dict(b, concept_input_ids=b["concept_input_ids"][order],
                 concept_attention_mask=b["concept_attention_mask"][order], concept_graph=b["concept_graph"][order],
                 edge_index=new_row[b["edge_index"]])
    with torch.no_grad():
        torch.testing.assert_close(model(**moved).logits, model(**b).logits, atol=1e-5, rtol=1e-5)


def test_relations_and_their_direction_are_read():
    model, b = tiny_model(), batch()
    with torch.no_grad():
        base = model(**b).graph_vector
        relabelled = model(**dict(b, edge_type=torch.tensor([2, 2, 3, 0]))).graph_vector
        reversed_edges = model(**dict(b, edge_index=b["edge_index"].flip(0))).graph_vector
    assert not torch.allclose(base[0], relabelled[0])
    assert not torch.allclose(base[0], reversed_edges[0])
    torch.testing.assert_close(base[1], relabelled[1])  # item 1's edge kept its label
    assert AmrEvalConfig(relations=RELATIONS).relation_id("mod") == 3
    assert AmrEvalConfig(relations=RELATIONS).relation_id("time") == 0
    with pytest.raises(ValueError, match="distinct"):
        AmrEvalConfig(relations=["ARG0", "ARG0"])


def test_adapters_are_the_only_trained_encoder_weights_and_a_small_checkpoint_loads_complete(tmp_path):
    from safetensors import safe_open

    torch.manual_seed(0)
    model = AmrEvalModel.from_base_encoder(AmrEvalConfig(relations=RELATIONS, hidden_size=32, graph_heads=2,
                                                         relation_dim=8, lora_rank=4)).eval()
    model.freeze_for_training()
    trained = {n for n, p in model.named_parameters() if p.requires_grad}
    encoder_trained = {n for n in trained if n.startswith("encoder.")}
    assert encoder_trained and all(n.rpartition(".")[2] in ("lora_A", "lora_B") for n in encoder_trained)
    assert {n.split(".")[3] for n in encoder_trained} == {"4", "5"}
    assert {"classifier.weight", "gate.weight", "concept_proj.weight"} <= trained
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name in trained:
                param.add_(0.01 * torch.randn_like(param))
    b = batch()
    b = dict(b, input_ids=b["input_ids"] + 1000, concept_input_ids=b["concept_input_ids"] + 1000)
    model.save_pretrained(tmp_path / "ckpt", trainable_only=True, half=True)
    with safe_open(str(tmp_path / "ckpt" / "model.safetensors"), "pt") as fh:
        stored = {k: fh.get_tensor(k) for k in fh.keys()}
    assert set(stored) == trained and {t.dtype for t in stored.values()} == {torch.float16}
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name in trained:
                param.copy_(param.half().float())
        expected = model(**b).logits
    again, info = AmrEvalModel.from_pretrained(tmp_path / "ckpt", output_loading_info=True)
    assert info["filled_from_base_encoder"] and next(again.parameters()).dtype == torch.float32
    with torch.no_grad():
        torch.testing.assert_close(again.eval()(**b).logits, expected)
    torch.save(b, tmp_path / "inputs.pt")
    result = run_without_dialeval("""
        model = AutoModel.from_pretrained(args[0], trust_remote_code=True).eval()
        with torch.no_grad():
            result["logits"] = model(**torch.load(args[1])).logits.tolist()
        result["module"] = type(model).__module__
    """, tmp_path / "ckpt", tmp_path / "inputs.pt", cwd=tmp_path)
    assert result["dialeval_loaded"] == [] and result["module"].startswith("transformers_modules")
    torch.testing.assert_close(torch.tensor(result["logits"]), expected)
