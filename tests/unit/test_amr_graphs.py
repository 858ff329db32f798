"""The AMR metric's graph layer: PENMAN simplification (senses, constants, names, wiki, reentrancy, inverse roles,
multi-sentence, bad text named), the one-line linearisation and JSON round trip, the graph sources (user PENMAN,
amrlib through a stand-in module, spaCy dependencies), the per-utterance cache, and, with the data directory, the
gold corpora and Smatch."""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import random
import re
import sys
import types

import pytest

from dialeval.errors import InputError, InputFileError, UnknownNameError
from dialeval.metrics.amr_eval import (
    AmrlibParser,
    AmrParserUnavailable,
    CachedGraphs,
    DependencyGraphs,
    GraphSource,
    PenmanGraphs,
    SimpleGraph,
    load_graph_source,
    read_amr_corpus,
    simplify,
    smatch_f1,
)

WANT = "(w / want-01 :ARG0 (b / boy) :ARG1 (g / go-02 :ARG0 b))"
CONSTANTS = '(s / say-01 :polarity - :quant 6 :ARG1 (t / thing :value "x y"))'
NAMED = '(c / city :wiki "Paris" :name (n / name :op2 "Lumière" :op1 "Ville") :mod (b / big))'
INVERSE = "(p / person :ARG0-of (r / run-02 :ARG1 (m / marathon)) :consist-of (s / stuff))"
MULTI = ("# ::snt I slept. Then I ate.\n"
         "(m / multi-sentence\n   :snt1 (s / sleep-01 :ARG0 (i / i))\n   :snt2 (e / eat-01 :ARG0 i :time (t / then)))")
FIXTURES = [WANT, CONSTANTS, NAMED, INVERSE, MULTI]


def test_senses_and_reentrancy():
    g = simplify(WANT)
    assert g == SimpleGraph(("want", "boy", "go"), ((0, 1, "ARG0"), (0, 2, "ARG1"), (2, 1, "ARG0")), 0)
    assert g.n_nodes == 3


def test_constants_become_nodes():
    g = simplify(CONSTANTS)
    assert g.concepts == ("say", "-", "6", "thing", "x y")
    assert g.edges == ((0, 1, "polarity"), (0, 2, "quant"), (0, 3, "ARG1"), (3, 4, "value"))


def test_names_collapse_in_op_order_and_wiki_is_dropped():
    g = simplify(NAMED)
    assert g.concepts == ("city", "Ville Lumière", "big")
    assert g.edges == ((0, 1, "name"), (0, 2, "mod"))
    assert "Paris" not in g.to_json()


def test_inverse_roles_are_normalised_as_penman_gives_them():
    g = simplify(INVERSE)
    assert g.concepts == ("person", "run", "marathon", "stuff")
    # :ARG0-of turns into run -ARG0-> person; :consist-of is a role of its own in the AMR model
    assert g.edges == ((1, 0, "ARG0"), (1, 2, "ARG1"), (0, 3, "consist-of"))
    assert g.linearise() == "(person :ARG0-of (run :ARG1 (marathon)) :consist-of (stuff))"


def test_multi_sentence_graph():
    g = simplify(MULTI)
    assert g.concepts == ("multi-sentence", "sleep", "i", "eat", "then") and g.root == 0
    assert g.edges == ((0, 1, "snt1"), (1, 2, "ARG0"), (0, 3, "snt2"), (3, 2, "ARG0"), (3, 4, "time"))
    assert g.linearise() == "(multi-sentence :snt1 (sleep :ARG0 (i)) :snt2 (eat :ARG0 i :time (then)))"


@pytest.mark.parametrize("bad, reason", [
    ("(w / want-01 :ARG0 (b / boy)", "unbalanced"),
    ("(w / want-01) (b / boy)", "after the graph"),
    ("want-01 :ARG0 boy", "before the first"),
    ("(w :ARG0 (b / boy))", "no concept"),
    ("(w / want-01 :ARG0 ))", "cannot decode"),
])
def test_bad_penman_names_the_item_and_quotes_the_text(bad, reason):
    with pytest.raises(InputError, match=reason) as info:
        simplify(bad, item="utterance 7")
    assert isinstance(info.value, ValueError)
    assert "utterance 7" in str(info.value) and repr(bad[:20])[1:-1] in str(info.value)


def test_linearise_format_json_round_trip_and_determinism():
    assert simplify(WANT).linearise() == "(want :ARG0 (boy) :ARG1 (go :ARG0 boy))"
    assert simplify(CONSTANTS).linearise() == '(say :polarity (-) :quant (6) :ARG1 (thing :value ("x y")))'
    assert simplify(NAMED).linearise() == '(city :name ("Ville Lumière") :mod (big))'
    for text in FIXTURES:
        g = simplify(text)
        again = SimpleGraph.from_json(g.to_json())
        assert again == g and hash(again) == hash(g)
        assert again.linearise() == g.linearise() == simplify(text).linearise()
    empty = SimpleGraph((), (), None)
    assert empty.linearise() == "" and SimpleGraph.from_json(empty.to_json()) == empty and empty.n_nodes == 0
    # an edge with neither end laid out waits; a node off the root's component starts its own tree
    g = SimpleGraph(("bark", "dog", "big", "x", "y"), ((1, 2, "amod"), (0, 1, "nsubj"), (4, 3, "r")), 0)
    assert g.linearise() == "(bark :nsubj (dog :amod (big))) (x :r-of (y))"


def test_bad_simple_graphs_are_named():
    with pytest.raises(InputError, match=r"edges\[0\]"):
        SimpleGraph(("a",), ((0, 1, "ARG0"),), 0)
    with pytest.raises(InputError, match="root"):
        SimpleGraph(("a",), (), None)
    with pytest.raises(InputError, match="'edges'"):
        SimpleGraph.from_json('{"concepts": [], "root": null}')


def _write(path, *blocks):
    path.write_text("# a header comment\n\n" + "\n\n".join(blocks) + "\n", encoding="utf-8")
    return path


def test_penman_graphs_look_up_by_sentence(tmp_path):
    f = _write(tmp_path / "g.txt", "# ::id a ::date x\n# ::snt The boy wants to go .\n" + WANT,
               "# ::snt I slept. Then I ate.\n" + MULTI.split("\n", 1)[1])
    src = PenmanGraphs(f, graphs={"Paris is big": NAMED})
    out = src.graphs(["Paris is big", "  The boy  wants to go .\n", "I slept. Then I ate."])
    assert out == [simplify(NAMED), simplify(WANT), simplify(MULTI)]
    assert len(src) == 3 and src.signature().startswith("penman(graphs=3,")
    assert PenmanGraphs(f).signature() != src.signature()
    long = "This utterance was never parsed and it is longer than sixty characters, by far."
    with pytest.raises(InputError, match=r"texts\[1\]") as info:
        src.graphs(["Paris is big", long])
    assert repr(long[:60]) in str(info.value) and long[:61] not in str(info.value)


def test_penman_graphs_name_the_bad_file_graph(tmp_path):
    f = _write(tmp_path / "bad.txt", "# ::snt ok\n" + WANT, "# ::snt broken\n(w / want-01 :ARG0 (b / boy)")
    with pytest.raises(InputFileError, match=re.escape(f"{f}:2")):
        PenmanGraphs(f)
    nosnt = _write(tmp_path / "nosnt.txt", "# ::id x\n" + WANT)
    with pytest.raises(InputFileError, match=re.escape(f"{nosnt}:1") + ".*::snt"):
        PenmanGraphs([nosnt])
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("# ::snt caf\u00e9\n(c / caf\u00e9)\n".encode("latin-1"))
    with pytest.raises(InputFileError, match="not UTF-8"):
        PenmanGraphs(latin)
    dup = _write(tmp_path / "dup.txt", "# ::snt same\n" + WANT, "# ::snt same\n" + INVERSE)
    with pytest.raises(InputFileError, match=re.escape(f"{dup}:1") + ".*" + re.escape(f"{dup}:2")):
        PenmanGraphs(dup)
    assert PenmanGraphs(dup, duplicates="first").graphs(["same"]) == [simplify(WANT)]


def test_amrlib_missing_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "amrlib", None)
    with pytest.raises(AmrParserUnavailable, match="pip install amrlib"):
        AmrlibParser(tmp_path)
    with pytest.raises(AmrParserUnavailable, match="pip install amrlib"):
        load_graph_source("amrlib", model_dir=tmp_path)


def test_amrlib_parses_go_through_simplify(monkeypatch, tmp_path):
    calls = []

    class Stog:
        def parse_sents(self, sents, add_metadata=True):
            calls.append(list(sents))
            return ["# ::snt x\n" + WANT if "boy" in s else None if "fail" in s else INVERSE for s in sents]

    fake = types.ModuleType("amrlib")
    fake.__spec__ = importlib.machinery.ModuleSpec("amrlib", None)
    fake.__version__ = "0.test"
    fake.load_stog_model = lambda model_dir=None, **kw: calls.append((model_dir, kw)) or Stog()
    monkeypatch.setitem(sys.modules, "amrlib", fake)
    with pytest.raises(AmrParserUnavailable, match="is not a folder"):
        AmrlibParser(tmp_path / "nowhere")
    parser = AmrlibParser(tmp_path, batch_size=4)
    assert parser.graphs(["The boy wants to go.", "A runner."]) == [simplify(WANT), simplify(INVERSE)]
    assert calls[0] == (str(tmp_path), {"batch_size": 4})
    assert "amrlib=0.test" in parser.signature() and tmp_path.name in parser.signature()
    with pytest.raises(InputError, match=r"texts\[1\].*'This will fail'"):
        parser.graphs(["The boy", "This will fail"])


def test_dependency_graphs_keep_lemmas_labels_and_order():
    src = load_graph_source("dependency")
    assert isinstance(src, DependencyGraphs)
    run, eat, multi, empty = src.graphs(["The dogs were running in the park.", "She did not eat the red apples.",
                                         "Hi there! I bought two new books.", " ..."])
    assert run == SimpleGraph(("dog", "run", "park"), ((1, 0, "nsubj"), (1, 2, "prep_in")), 1)
    assert eat.concepts == ("she", "not", "eat", "red", "apple") and eat.root == 2
    assert set(eat.edges) == {(2, 0, "nsubj"), (2, 1, "neg"), (2, 4, "dobj"), (4, 3, "amod")}
    assert multi.concepts[0] == "multi-sentence" and multi.root == 0
    assert [e for e in multi.edges if e[0] == 0] == [(0, 1, "snt1"), (0, multi.concepts.index("buy"), "snt2")]
    assert empty == SimpleGraph((), (), None)
    assert re.fullmatch(r"dependency\(model=en_core_web_sm\S*-[\d.]+,normalize=True,v=\d+\)", src.signature())


def _sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CountingSource(GraphSource):
    name = "counting"

    def __init__(self, tag="a"):
        self.tag, self.calls = tag, []

    def signature(self):
        return f"counting({self.tag})"

    def graphs(self, texts):
        self.calls.append(list(texts))
        return [SimpleGraph((t, self.tag), ((0, 1, "mod"),), 0) for t in texts]


def test_cache_hits_misses_and_torn_lines(tmp_path):
    texts = ["hello there", "how are you", "hello there"]
    source = CountingSource()
    cache = CachedGraphs(source, tmp_path)
    first = cache.graphs(texts)
    assert first == [SimpleGraph((t, "a"), ((0, 1, "mod"),), 0) for t in texts]
    assert source.calls == [["hello there", "how are you"]]
    assert (cache.hits, cache.misses) == (0, 3)
    assert cache.graphs(texts) == first and (cache.hits, cache.misses) == (3, 3) and len(source.calls) == 1
    assert cache.signature() == "counting(a)" and cache.hit_rate == 0.5
    lines = cache.path.read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["graph"]["concepts"] == ["hello there", "a"]

    with open(cache.path, "a") as fh:  # a crash in the middle of a line
        fh.write('{"text_sha256": "abc", "gra')
    reopened = CachedGraphs(CountingSource(), tmp_path)
    assert reopened.graphs(texts) == first and (reopened.hits, reopened.misses) == (3, 0)
    assert reopened.skipped_lines == 1 and reopened.source.calls == []
    assert reopened.graphs(["new one"])[0].concepts == ("new one", "a")
    third = CachedGraphs(CountingSource(), tmp_path)
    assert third.graphs(["new one", "how are you"]) and (third.hits, third.misses, third.skipped_lines) == (2, 0, 1)

    other = CachedGraphs(CountingSource("b"), tmp_path)
    assert other.graphs(texts)[0].concepts == ("hello there", "b") and (other.hits, other.misses) == (0, 3)
    assert other.path != cache.path


def test_load_graph_source_names_the_choices():
    with pytest.raises(UnknownNameError, match="unknown graph source 'amr'.*choices: penman, amrlib, dependency, "
                                               "parser"):
        load_graph_source("amr")
    with pytest.raises(InputError, match="graph source 'penman' has no option 'model_dir'; its options: files, "
                                         "graphs, duplicates"):
        load_graph_source("penman", model_dir="x")
    src = load_graph_source("penman", graphs={"hi": WANT})
    assert isinstance(src, PenmanGraphs) and src.graphs(["hi"]) == [simplify(WANT)]


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


@pytest.mark.data
def test_little_prince_splits_and_every_test_graph_simplifies(data_dir):
    sizes = {split: len(list(read_amr_corpus("little_prince", split, data_dir))) for split in ("train", "dev", "test")}
    assert sizes == {"train": 1274, "dev": 145, "test": 143}
    dev_ids = {gid for gid, _, _ in read_amr_corpus("little_prince", "dev", data_dir)}
    assert "lpp_1943.1" in dev_ids and "lpp_1943.146" not in dev_ids
    for gid, sentence, text in read_amr_corpus("little_prince", "test", data_dir):
        g = simplify(text, item=gid)
        line = g.linearise()
        assert g.n_nodes >= 1 and sentence and "\n" not in line
        # every node bracketed once, every edge written once
        assert _STRING.sub("S", line).count("(") == g.n_nodes and line.count(" :") == len(g.edges), gid
    assert {s: len(list(read_amr_corpus("massive_amr", s, data_dir))) for s in ("train", "dev", "test")} == \
        {"train": 1183, "dev": 214, "test": 288}
    with pytest.raises(UnknownNameError, match="choices: dev, test"):
        next(read_amr_corpus("bio", "train", data_dir))


@pytest.mark.data
def test_smatch_of_a_graph_with_itself_and_with_a_changed_concept(data_dir):
    gold = [text for _, _, text in read_amr_corpus("little_prince", "test", data_dir)][:5]
    assert smatch_f1(gold, gold) == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "n": 5}
    changed = [gold[1].replace("learn-01", "forget-01", 1), *gold[2:]]
    assert changed[0] != gold[1]
    score = smatch_f1(changed, gold[1:])
    assert 0.5 < score["f1"] < 1.0 and score == smatch_f1(changed, gold[1:])
    random.seed(1)
    expected = random.random()
    random.seed(1)
    smatch_f1(changed, gold[1:])
    assert random.random() == expected  # smatch's own seeding leaves the caller's random state alone
    with pytest.raises(InputError, match=r"predicted\[0\]"):
        smatch_f1(["(a / b"], gold[:1])
    with pytest.raises(InputError, match="predicted has 1 graphs but gold has 2"):
        smatch_f1(gold[:1], gold[:2])


def test_dailydialog_pp_examples_split_the_dev_contexts_and_keep_the_file_order(tmp_path):
    import json

    from dialeval.metrics.amr_eval import dailydialog_pp_examples
    from dialeval.metrics.amr_eval.data import dev_split_of

    folder = tmp_path / "dailydialog_plusplus"
    folder.mkdir()
    rows = [{"id": i, "context": [f"turn {i} a", f"turn {i} b"],
             "positive_responses": [f"good {i} {k}" for k in range(5)],
             "adversarial_negative_responses": [f"tricky {i} {k}" for k in range(5)],
             "random_negative_responses": [f"random {i} {k}" for k in range(5)]} for i in range(40)]
    (folder / "dev.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "test.json").write_text("".join(json.dumps(r) + "\n" for r in rows[:3]))
    train = dailydialog_pp_examples(tmp_path, "train")
    validation = dailydialog_pp_examples(tmp_path, "validation", negatives=("adversarial", "random"))
    assert train and validation
    assert {e.context_id for e in train}.isdisjoint({e.context_id for e in validation})
    assert all(dev_split_of(e.context) == "train" for e in train)
    assert len(train) + len(validation) * 10 // 15 == 40 * 10
    first = [e for e in train if e.context_id == train[0].context_id]
    assert [e.kind for e in first] == ["positive"] * 5 + ["adversarial"] * 5
    assert [e.label for e in first] == [1] * 5 + [0] * 5 and first[5].response.startswith("tricky")
    test = dailydialog_pp_examples(tmp_path, "test")
    assert [e.context_id for e in test] == [0] * 10 + [1] * 10 + [2] * 10
    with pytest.raises(ValueError, match="negatives must name"):
        dailydialog_pp_examples(tmp_path, "train", negatives=("parroted",))
    with pytest.raises(FileNotFoundError, match="dev.json"):
        dailydialog_pp_examples(tmp_path / "nowhere", "train")


def test_cache_holds_at_most_memory_entries_and_reads_back_what_fell_out(tmp_path):
    source = CountingSource()
    cache = CachedGraphs(source, tmp_path, memory_entries=2)
    texts = ["one", "two", "three", "one"]
    assert [g.concepts[0] for g in cache.graphs(texts)] == texts  # a call gets all its graphs, however many
    held = [json.loads(line)["text_sha256"] for line in cache.path.read_text().splitlines()][1:]
    assert list(cache._load()) == held  # "two" and "three": the most recently computed
    assert source.calls == [["one", "two", "three"]]
    assert cache.graphs(["one"])[0].concepts == ("one", "a")  # fell out of memory: read back from its line
    assert source.calls == [["one", "two", "three"]] and len(cache.path.read_text().splitlines()) == 3
    assert (cache.hits, cache.misses) == (1, 4) and list(cache._load())[-1] == _sha256("one")
    reopened = CachedGraphs(CountingSource(), tmp_path, memory_entries=1)
    assert list(reopened._load()) == []  # opening indexes the lines and decodes no graph
    assert [g.concepts[0] for g in reopened.graphs(["two", "one", "three", "two"])] == ["two", "one", "three", "two"]
    assert reopened.source.calls == [] and (reopened.hits, reopened.misses) == (4, 0)
    reopened.close()
    assert reopened.graphs(["four", "one"])[1].concepts[0] == "one" and reopened.source.calls == [["four"]]


def test_cache_reads_back_past_a_torn_line_in_its_own_format(tmp_path):
    cache = CachedGraphs(CountingSource(), tmp_path)
    cache.graphs(["one"])
    with open(cache.path, "a") as fh:  # a crash after the key was written: the line starts as ours does
        fh.write('{"text_sha256":"' + _sha256("two") + '","graph":{"conc')
    reopened = CachedGraphs(CountingSource(), tmp_path)
    assert reopened.graphs(["two", "one"])[0].concepts == ("two", "a")
    assert reopened.source.calls == [["two"]] and reopened.skipped_lines == 1
    reopened.graphs(["three"])  # appended after the torn line, which stays skipped
    third = CachedGraphs(CountingSource(), tmp_path, memory_entries=1)
    assert [g.concepts[0] for g in third.graphs(["three", "two", "one"])] == ["three", "two", "one"]
    assert third.source.calls == [] and third.skipped_lines == 1

    corrupt = cache.path.read_bytes().replace(b'"concepts":["three"', b'"concepts":["three"}}', 1)
    cache.path.write_bytes(corrupt)  # a line that looks whole but does not decode
    fourth = CachedGraphs(CountingSource(), tmp_path)
    assert fourth.graphs(["three"])[0].concepts == ("three", "a") and fourth.source.calls == [["three"]]
    assert fourth.skipped_lines == 2  # the torn line at opening, the undecodable one when read back
