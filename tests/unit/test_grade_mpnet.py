"""GRADE on an MPNet encoder (issue 48: all-mpnet-base-v2's architecture, here a tiny one): the recipe builds its
text encoder from the encoder's config, takes its weights, reads pairs in the tokenizer's own template, runs the
trained top layers from the frozen-layer cache as the whole encoder runs, and adapts it with LoRA."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

from dialeval.metrics.grade import train as grade_train
from dialeval.metrics.grade.inputs import GradeInputBuilder, base_tokenizer, pair_template
from dialeval.metrics.grade.options import GradeTrainingOptions
from dialeval.training.frozen_cache import FrozenCacheError, FrozenStateCache, frozen_state_cache

PAIRS = [(["Do you like the sea?", "I swim every summer there."], "Yes, the water is warm in July."),
         (["Hi.", "Hi there."], "Hello!"),
         (["Can you help me cook dinner tonight?", "Of course."], "A soup with carrots, onions and some chicken."),
         (["The train is late.", "Again?"], "Let us drink a coffee while we wait for it.")]


def _model(encoder, tmp_path, **options):
    opts = GradeTrainingOptions(output_dir=str(tmp_path), encoder=str(encoder), max_seq_length=32, use_graph=False,
                                **options)
    return grade_train.build_model(opts, node_feature_dim=8)


def _builder(encoder, max_seq_length: int = 32) -> GradeInputBuilder:
    return GradeInputBuilder(base_tokenizer(str(encoder)), None, max_seq_length=max_seq_length, use_graph=False)


def test_the_recipe_builds_an_mpnet_encoder_with_the_encoders_weights(tiny_mpnet_encoder, tmp_path):
    from transformers import AutoModel, MPNetModel

    model = _model(tiny_mpnet_encoder, tmp_path).eval()
    assert model.config.encoder_type == "mpnet" and isinstance(model.encoder, MPNetModel)
    assert not model.encoder_token_types
    tiny = load_file(tiny_mpnet_encoder / "model.safetensors")
    encoder_state = model.encoder.state_dict()
    for name in ("embeddings.word_embeddings.weight", "encoder.relative_attention_bias.weight",
                 "encoder.layer.1.attention.attn.q.weight"):
        assert torch.equal(encoder_state[name], tiny[name]), name
    batch = _builder(tiny_mpnet_encoder).batch(PAIRS)
    reference = AutoModel.from_pretrained(tiny_mpnet_encoder).eval()
    with torch.no_grad():
        ours = model.encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
        theirs = reference(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    real = batch["attention_mask"].bool()
    torch.testing.assert_close(ours[real], theirs[real])


def test_pairs_take_the_tokenizers_own_template_and_padding(tiny_mpnet_encoder, tiny_encoder):
    mpnet, bert = (base_tokenizer(str(folder)) for folder in (tiny_mpnet_encoder, tiny_encoder))
    assert pair_template(mpnet) == ([0], [2, 2], [2])  # <s> context </s></s> response </s>
    assert pair_template(bert) == ([bert.cls_token_id], [bert.sep_token_id], [bert.sep_token_id])
    builder = _builder(tiny_mpnet_encoder, max_seq_length=64)
    context, response = PAIRS[0]
    ids, first_len = builder.token_ids(context, response)
    assert ids == mpnet(" ".join(context), response)["input_ids"]  # uncut: exactly the tokenizer's pair encoding
    assert ids[first_len - 2:first_len] == [2, 2] and builder.special_tokens == 4
    batch = builder.batch(PAIRS[:2])
    short = int(batch["attention_mask"][1].sum())
    assert (batch["input_ids"][1, short:] == mpnet.pad_token_id).all() and mpnet.pad_token_id == 1
    cut = _builder(tiny_mpnet_encoder, max_seq_length=12)
    ids, _ = cut.token_ids(context, response)
    assert len(ids) == 12 and ids[0] == 0 and ids[-1] == 2 and cut.truncated == 1


def _loss_and_grads(model, cache, pos, neg, cached: bool):
    """The pair loss of a positive and a negative batch and the gradients it leaves, through the frozen-layer cache
    (``cached``) or the whole encoder."""
    model.zero_grad()
    inputs = [dict(x, frozen_states=cache.states(x["input_ids"], x["attention_mask"],
                                                 token_type_ids=x["token_type_ids"])) if cached else x
              for x in (pos, neg)]
    loss = grade_train.pair_loss(model(**inputs[0]), model(**inputs[1]), "both")
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def test_the_frozen_cache_gives_the_loss_and_gradients_of_the_whole_encoder(tiny_mpnet_encoder, tmp_path):
    model = _model(tiny_mpnet_encoder, tmp_path, trainable_encoder_layers=1).eval()  # dropout off: comparable
    assert model.frozen_layers() == 1
    builder = _builder(tiny_mpnet_encoder)
    pos = builder.batch(PAIRS)
    neg = builder.batch([(c, r) for (c, _), (_, r) in zip(PAIRS, PAIRS[1:] + PAIRS[:1])])
    cache = FrozenStateCache(model.frozen_states)

    whole, whole_grads = _loss_and_grads(model, cache, pos, neg, cached=False)
    cached, cached_grads = _loss_and_grads(model, cache, pos, neg, cached=True)
    torch.testing.assert_close(cached, whole, atol=1e-6, rtol=1e-5)
    assert set(cached_grads) == set(whole_grads) and any(n.startswith("encoder.encoder.layer.1.") for n in whole_grads)
    for name, grad in whole_grads.items():
        torch.testing.assert_close(cached_grads[name], grad, atol=1e-6, rtol=1e-4, msg=name)
    assert cache.misses == 8 and cache.hits == 0
    again, _ = _loss_and_grads(model, cache, pos, neg, cached=True)  # every row kept: nothing computed again
    assert cache.hits == 8 and torch.equal(again, cached)


def test_a_disk_cache_gives_the_memory_caches_loss_and_gradients_and_records_the_frozen_part(tiny_mpnet_encoder,
                                                                                              tmp_path):
    """--frozen-cache-dir: the recipe's cache (frozen_state_cache) on disk gives the in-memory cache's loss and
    gradients to the bit (float32), in the first pass and from the file; its manifest names the frozen part, and a
    model whose frozen layers hold other weights is refused, naming the field."""
    options = {"trainable_encoder_layers": 1, "precision": "bf16"}
    model = _model(tiny_mpnet_encoder, tmp_path, **options).eval()
    builder = _builder(tiny_mpnet_encoder)
    pos = builder.batch(PAIRS)
    neg = builder.batch([(c, r) for (c, _), (_, r) in zip(PAIRS, PAIRS[1:] + PAIRS[:1])])
    in_memory = _loss_and_grads(model, FrozenStateCache(model.frozen_states), pos, neg, cached=True)
    states = tmp_path / "states"
    opts = GradeTrainingOptions(output_dir=str(tmp_path), encoder=str(tiny_mpnet_encoder), frozen_cache_dir=str(states),
                                **options)
    cache = frozen_state_cache(model, opts)
    for _ in range(2):  # computed and written, then read back
        loss, grads = _loss_and_grads(model, cache, pos, neg, cached=True)
        assert torch.equal(loss, in_memory[0]) and grads.keys() == in_memory[1].keys()
        assert all(torch.equal(grads[n], g) for n, g in in_memory[1].items())
    assert (cache.misses, cache.hits) == (8, 8)
    cache.close()
    manifest = json.loads((states / "manifest.json").read_text())
    assert {k: manifest[k] for k in ("model_type", "frozen_layers", "precision", "dtype")} == {
        "model_type": "dialeval-grade", "frozen_layers": 1, "precision": "bf16", "dtype": "float32"}
    assert manifest["encoder"] == model.config.base_encoder and len(manifest["frozen_weights_sha256"]) == 64
    frozen_weight = model.encoder.encoder.layer[0].output.dense.weight
    kept = frozen_weight.detach().clone()
    with torch.no_grad():
        frozen_weight.add_(1e-3)
    with pytest.raises(FrozenCacheError, match="has frozen_weights_sha256 '[0-9a-f]{64}', this run's states have"):
        frozen_state_cache(model, opts)
    with torch.no_grad():
        frozen_weight.copy_(kept)
        model.encoder.encoder.layer[1].output.dense.weight.add_(1e-3)  # a trained layer: not part of the states
    frozen_state_cache(model, opts).close()


@pytest.mark.parametrize("kind", ["mpnet", "bert"])
def test_lora_adapts_every_projection_and_starts_as_the_base(kind, tiny_mpnet_encoder, tiny_encoder, tmp_path):
    """--lora-rank on both encoder types (the recipe's model once refused its own new adapters as missing weights)."""
    from dialeval.modeling.grade import LoRALinear

    encoder = tiny_mpnet_encoder if kind == "mpnet" else tiny_encoder
    plain = _model(encoder, tmp_path).eval()
    adapted = _model(encoder, tmp_path, lora_rank=2, trainable_encoder_layers=0).eval()
    names = sorted(n for n, m in adapted.encoder.named_modules() if isinstance(m, LoRALinear))
    first = "encoder.layer.0.attention.attn.q" if kind == "mpnet" else "encoder.layer.0.attention.self.query"
    assert len(names) == 6 * 2 and first in names and adapted.frozen_layers() == 0
    # the heads differ (the adapters drew from the seed first): take plain's, the adapters keep their start
    assert adapted.load_state_dict(plain.state_dict(), strict=False).unexpected_keys == []
    batch = _builder(encoder).batch(PAIRS)
    with torch.no_grad():
        torch.testing.assert_close(adapted(**batch).score, plain(**batch).score)
    trained = {n for n, p in adapted.named_parameters() if p.requires_grad and n.startswith("encoder.")}
    assert trained and all(n.rsplit(".", 1)[1] in ("lora_A", "lora_B") for n in trained)


@pytest.mark.parametrize("kind", ["mpnet", "bert"])
def test_lora_on_the_top_layers_only_freezes_the_layers_below_for_the_cache(kind, tiny_mpnet_encoder, tiny_encoder,
                                                                            tmp_path):
    """--lora-layers 1: adapters in the top layer only; the layer below is frozen whole, so the frozen-layer cache
    gives the loss and gradients of the whole encoder, and a small checkpoint holds those adapters and loads as it
    was saved."""
    from dialeval.modeling.grade import GradeModel, LoRALinear

    encoder = tiny_mpnet_encoder if kind == "mpnet" else tiny_encoder
    model = _model(encoder, tmp_path, lora_rank=2, lora_layers=1, trainable_encoder_layers=0).eval()
    names = sorted(n for n, m in model.encoder.named_modules() if isinstance(m, LoRALinear))
    assert len(names) == 6 and all(n.startswith("encoder.layer.1.") for n in names)
    assert model.config.lora_layers == 1 and model.frozen_layers() == 1
    trained = {n for n, p in model.named_parameters() if p.requires_grad and n.startswith("encoder.")}
    assert trained and all(n.startswith("encoder.encoder.layer.1.") and n.rsplit(".", 1)[1] in ("lora_A", "lora_B")
                           for n in trained)
    with torch.no_grad():
        for name in names:
            model.encoder.get_submodule(name).lora_B.normal_()  # trained adapters: they change the top layer
    builder = _builder(encoder)
    pos, neg = builder.batch(PAIRS), builder.batch([(c, r) for (c, _), (_, r) in zip(PAIRS, PAIRS[1:] + PAIRS[:1])])
    cache = FrozenStateCache(model.frozen_states)

    whole, whole_grads = _loss_and_grads(model, cache, pos, neg, cached=False)
    cached, cached_grads = _loss_and_grads(model, cache, pos, neg, cached=True)
    torch.testing.assert_close(cached, whole, atol=1e-6, rtol=1e-5)
    assert {n for n in whole_grads if n.startswith("encoder.")} == trained and set(cached_grads) == set(whole_grads)
    for name, grad in whole_grads.items():
        torch.testing.assert_close(cached_grads[name], grad, atol=1e-6, rtol=1e-4, msg=name)
    model.save_pretrained(tmp_path / "small", trainable_only=True)
    loaded = GradeModel.from_pretrained(tmp_path / "small", base_encoder_folder=str(encoder)).eval()
    assert loaded.config.lora_layers == 1 and loaded.frozen_layers() == 1
    with torch.no_grad():
        torch.testing.assert_close(loaded(**pos).score, model(**pos).score)


@pytest.mark.parametrize("layers", [0, -2])
def test_lora_layers_must_name_some_top_layers(layers):
    from dialeval.modeling.grade import GradeConfig

    with pytest.raises(ValueError, match=f"lora_layers must be -1 .every layer. or the number of top layers with "
                                         f"adapters, got {layers}"):
        GradeConfig(lora_rank=2, lora_layers=layers)


def test_a_small_mpnet_checkpoint_fills_its_frozen_layers_from_the_encoder_folder(tiny_mpnet_encoder, tmp_path):
    from dialeval.modeling.grade import GradeModel

    model = _model(tiny_mpnet_encoder, tmp_path).eval()
    model.save_pretrained(tmp_path / "small", trainable_only=True)
    loaded, info = GradeModel.from_pretrained(tmp_path / "small", output_loading_info=True,
                                              base_encoder_folder=str(tiny_mpnet_encoder))
    assert "encoder.encoder.relative_attention_bias.weight" in info["filled_from_base_encoder"]
    batch = _builder(tiny_mpnet_encoder).batch(PAIRS)
    with torch.no_grad():
        torch.testing.assert_close(loaded.eval()(**batch).score, model(**batch).score)


def test_grade_refuses_an_encoder_type_its_model_does_not_build(tmp_path):
    from transformers import DistilBertConfig, DistilBertModel

    from dialeval.errors import DialevalError

    DistilBertModel(DistilBertConfig(vocab_size=50, dim=8, n_layers=1, n_heads=2, hidden_dim=16)).save_pretrained(
        tmp_path / "distil")
    with pytest.raises(DialevalError, match="'distilbert' model: this recipe fine-tunes a BERT or MPNet encoder"):
        _model(tmp_path / "distil", tmp_path)
