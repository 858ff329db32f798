"""The project's own small AMR parser, as a graph source, and the measures of any graph source against gold AMR.

- **Output tokens.** A simplified graph is written as its :meth:`~.graphs.SimpleGraph.linearise` text, lower-cased,
  cut into output tokens (:class:`ParserVocabulary`): the brackets, the quote around a concept that is not one
  plain token, one token per relation label (``:arg0``, ``:mod``; ``:arg0-of`` for an edge read backwards) and the
  encoder's word pieces for concepts. :func:`graph_from_tokens` reads tokens back into a graph and accepts any
  sequence (a parser's output may be malformed): brackets left open are closed at the end, a stray ``)`` or a
  relation with nothing after it is ignored, a bare concept after a relation refers to the latest node with that
  concept (a reentrancy, as ``linearise`` writes it) or else is a new node, which the first bracket with that
  concept then introduces (``linearise`` can name a node before its bracket), and a second top-level tree stays a
  separate component.
- **The parser** (:class:`~.graph_sources.ParserGraphs`, graph source ``"parser"``) runs a trained
  ``dialeval.modeling.amr_eval.AmrParserModel`` (``dialeval train amr-parser``) and reads its tokens with
  :meth:`ParserVocabulary.decode`. Its graphs are lower-case, as its word pieces are.
- **Smatch of simplified graphs** (:func:`graph_smatch`): both graphs lower-cased and written as PENMAN with one
  variable per node (:func:`graph_penman`), then :func:`~.amr_corpora.smatch_f1`. This is not the standard Smatch of
  full AMR (senses, variables and name structure are gone on both sides); it measures what the evaluator reads.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dialeval.errors import InputError

from .amr_corpora import read_amr_corpus, smatch_f1
from .graph_source_base import GraphSource
from .graphs import SimpleGraph, simplify

__all__ = ["STRUCTURE_TOKENS", "ParserVocabulary", "graph_from_tokens", "graph_penman",
           "graph_smatch", "graph_tokens", "lowercased", "parse_sentences", "smatch_by_corpus", "source_smatch"]

#: Output tokens of the graph's structure (after the control tokens): open, close, quote, and the relation that
#: stands for any label the vocabulary lacks.
STRUCTURE_TOKENS = ("(", ")", '"', ":other")
#: Roles of penman's AMR model that end in ``-of`` without being inverse roles.
_NOT_INVERTED = frozenset({"consist-of", "prep-out-of", "prep-on-behalf-of"})
_LINEARISED = re.compile(r'\(|\)|:[^\s()"]+|"(?:[^"\\]|\\.)*"|[^\s()":]+')
_ARG = re.compile(r"arg(\d+)")
_EMPTY_CONCEPT = "amr-empty"


def lowercased(graph: SimpleGraph) -> SimpleGraph:
    """``graph`` with every concept lower-cased (what the parser writes, since its word pieces are)."""
    return SimpleGraph(tuple(c.lower() for c in graph.concepts), graph.edges, graph.root)


def graph_tokens(graph: SimpleGraph, tokenize) -> list[tuple[str, str]]:
    """The output tokens of ``graph`` as ``(kind, text)``: kind ``"structure"`` (a bracket or the quote),
    ``"relation"`` (``":arg0"``) or ``"piece"`` (a word piece of ``tokenize``, the encoder tokenizer's
    ``tokenize``). The text is ``graph.linearise()`` lower-cased."""
    out: list[tuple[str, str]] = []
    for match in _LINEARISED.finditer(graph.linearise().lower()):
        token = match.group(0)
        if token in ("(", ")"):
            out.append(("structure", token))
        elif token.startswith(":"):
            out.append(("relation", token))
        elif token.startswith('"'):
            out.append(("structure", '"'))
            out.extend(("piece", p) for p in tokenize(json.loads(token)))
            out.append(("structure", '"'))
        else:
            out.extend(("piece", p) for p in tokenize(token))
    return out


def _join_pieces(pieces: Sequence[str]) -> str:
    """Word pieces -> text: ``##`` pieces join the previous one; a space goes only between two alphanumeric pieces
    (``look - up`` -> ``look-up``, ``new york`` stays two words)."""
    text = ""
    for piece in pieces:
        if piece.startswith("##"):
            text += piece[2:]
        elif text and piece[:1].isalnum() and text[-1:].isalnum():
            text += " " + piece
        else:
            text += piece
    return text


def _relation(token: str) -> str:
    """``:arg0-of`` -> ``ARG0-of``: the label without its colon, ``ARGn`` in AMR's case."""
    return _ARG.sub(lambda m: f"ARG{m.group(1)}", token[1:], count=1)


def graph_from_tokens(tokens: Iterable[tuple[str, str]]) -> SimpleGraph:
    """The graph that output tokens (``(kind, text)`` as :func:`graph_tokens` gives them) describe; never fails
    (module docstring). Relations ending in ``-of`` (other than penman's ``consist-of``, ``prep-out-of``,
    ``prep-on-behalf-of``) are edges read backwards: ``(a :arg0-of (b))`` is the edge ``b -ARG0-> a``."""
    tokens = list(tokens)
    concepts: list[str] = []
    edges: list[tuple[int, int, str]] = []
    root: int | None = None
    stack: list[int] = []
    relation: str | None = None
    referenced: list[int] = []  # nodes a bare concept created, not yet introduced by a bracket
    pos = 0

    def read_concept() -> str:
        nonlocal pos
        pieces: list[str] = []
        if pos < len(tokens) and tokens[pos] == ("structure", '"'):
            pos += 1
            while pos < len(tokens) and tokens[pos] != ("structure", '"'):
                if tokens[pos][0] == "piece":
                    pieces.append(tokens[pos][1])
                pos += 1
            pos += 1  # the closing quote (or the end)
        else:
            while pos < len(tokens) and tokens[pos][0] == "piece":
                pieces.append(tokens[pos][1])
                pos += 1
        return _join_pieces(pieces)

    def attach(parent: int, child: int, label: str) -> None:
        if label.endswith("-of") and label not in _NOT_INVERTED and len(label) > 3:
            edges.append((child, parent, label[:-3]))
        else:
            edges.append((parent, child, label))

    while pos < len(tokens):
        kind, text = tokens[pos]
        if (kind, text) == ("structure", "("):
            pos += 1
            concept = read_concept() or _EMPTY_CONCEPT
            waiting = [i for i in referenced if concepts[i] == concept]
            if waiting:  # linearise may name a node bare before the bracket that introduces it
                node = waiting[0]
                referenced.remove(node)
            else:
                concepts.append(concept)
                node = len(concepts) - 1
            if stack:
                attach(stack[-1], node, relation or "other")
            elif root is None:
                root = node
            stack.append(node)
            relation = None
        elif (kind, text) == ("structure", ")"):
            pos += 1
            if stack:
                stack.pop()
            relation = None
        elif kind == "relation":
            pos += 1
            relation = _relation(text)
        else:  # a word piece or a quote: a bare concept, a reentrancy after a relation; elsewhere out of place
            concept = read_concept()
            if stack and relation and concept:
                earlier = [i for i, c in enumerate(concepts) if c == concept]
                if earlier:
                    target = earlier[-1]
                else:
                    concepts.append(concept)
                    target = len(concepts) - 1
                    referenced.append(target)
                attach(stack[-1], target, relation)
            relation = None
    return SimpleGraph(tuple(concepts), tuple(edges), root if concepts else None)


@dataclass(frozen=True)
class ParserVocabulary:
    """The parser's output tokens: ``special_tokens`` (control tokens, :data:`STRUCTURE_TOKENS`, relations) then
    ``piece_ids`` (encoder-vocabulary ids), as in ``AmrParserConfig``; ``pieces`` are the piece texts."""

    special_tokens: tuple[str, ...]
    piece_ids: tuple[int, ...]
    pieces: tuple[str, ...]
    unknown_piece: str

    @classmethod
    def build(cls, graphs: Iterable[SimpleGraph], sentences: Iterable[str], tokenizer) -> ParserVocabulary:
        """Relations of ``graphs``' tokens (by frequency, then text) and word pieces of their concepts and of
        ``sentences`` (in the encoder's id order), plus the tokenizer's unknown piece."""
        from dialeval.modeling.amr_eval import CONTROL_TOKENS

        relations: Counter[str] = Counter()
        pieces: set[str] = {tokenizer.unk_token}
        for graph in graphs:
            for kind, text in graph_tokens(graph, tokenizer.tokenize):
                if kind == "relation":
                    relations[text] += 1
                elif kind == "piece":
                    pieces.add(text)
        for sentence in sentences:
            pieces.update(tokenizer.tokenize(sentence))
        ordered = sorted(relations, key=lambda r: (-relations[r], r))
        specials = (*CONTROL_TOKENS, *STRUCTURE_TOKENS, *(r for r in ordered if r not in STRUCTURE_TOKENS))
        ids = sorted(tokenizer.convert_tokens_to_ids(sorted(pieces)))
        return cls(specials, tuple(ids), tuple(tokenizer.convert_ids_to_tokens(ids)), tokenizer.unk_token)

    @classmethod
    def of_config(cls, config, tokenizer) -> ParserVocabulary:
        ids = tuple(config.piece_ids)
        return cls(tuple(config.special_tokens), ids, tuple(tokenizer.convert_ids_to_tokens(list(ids))),
                   tokenizer.unk_token)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_special_index", {t: i for i, t in enumerate(self.special_tokens)})
        object.__setattr__(self, "_piece_index",
                           {p: len(self.special_tokens) + i for i, p in enumerate(self.pieces)})

    def encode(self, graph: SimpleGraph, tokenize) -> list[int]:
        """Output ids of ``graph`` (without the end token); a relation the vocabulary lacks is ``:other``, a piece
        it lacks the unknown piece."""
        ids = []
        for kind, text in graph_tokens(graph, tokenize):
            if kind == "piece":
                ids.append(self._piece_index.get(text, self._piece_index[self.unknown_piece]))
            else:
                ids.append(self._special_index.get(text, self._special_index[":other"]))
        return ids

    def decode(self, ids: Sequence[int]) -> SimpleGraph:
        """The graph of output ids (control tokens are skipped)."""
        n_special = len(self.special_tokens)
        tokens = []
        for i in ids:
            if i >= n_special:
                tokens.append(("piece", self.pieces[i - n_special]))
            elif i >= 3:
                text = self.special_tokens[i]
                tokens.append(("relation" if text.startswith(":") else "structure", text))
        return graph_from_tokens(tokens)


def parse_sentences(model, tokenizer, vocabulary: ParserVocabulary, sentences: Sequence[str], *,
                    batch_size: int = 32) -> list[SimpleGraph]:
    """Greedy parses of ``sentences`` by an ``AmrParserModel`` on its own device, in input order (batches of
    ``batch_size`` sorted by word-piece length inside); the model is left in the mode it was in."""
    import torch

    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    lengths = [len(tokenizer.tokenize(s)) for s in sentences]
    order = sorted(range(len(sentences)), key=lambda i: lengths[i])
    out: list[SimpleGraph | None] = [None] * len(sentences)
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            batch = tokenizer([sentences[i] for i in rows], padding=True, truncation=True,
                              max_length=model.config.max_source_length, return_tensors="pt").to(device)
            for i, ids in zip(rows, model.generate_ids(batch["input_ids"], batch["attention_mask"])):
                out[i] = vocabulary.decode(ids)
    model.train(was_training)
    return out


# -- Smatch of simplified graphs --------------------------------------------------------------------------------------
def _smatch_symbol(text: str) -> str:
    """A concept or relation label as one PENMAN symbol: whitespace and PENMAN's punctuation become ``_``."""
    return re.sub(r'[\s()":/~^]+', "_", text) or "_"


def graph_penman(graph: SimpleGraph) -> str:
    """``graph`` as one-line PENMAN for Smatch: node ``i`` is ``(v<i> / concept)``, every edge a role between
    variables (whitespace and PENMAN's punctuation in a concept or a relation label become ``_``); a node that no chain of edges (in
    either direction) joins to the root hangs from the root by ``:unattached``, so the graph is one tree for penman.
    Self-loops and repeated edges are left out. The empty graph is ``(v0 / amr-empty)``."""
    import penman

    if not graph.concepts:
        return f"(v0 / {_EMPTY_CONCEPT})"
    n = len(graph.concepts)
    root = graph.root if graph.root is not None else 0
    triples = [(f"v{i}", ":instance", _smatch_symbol(c)) for i, c in enumerate(graph.concepts)]
    neighbours: list[set[int]] = [set() for _ in range(n)]
    for s, t, r in dict.fromkeys(graph.edges):
        if s != t:
            triples.append((f"v{s}", f":{_smatch_symbol(r)}", f"v{t}"))
            neighbours[s].add(t)
            neighbours[t].add(s)
    reached = {root}
    frontier = [root]
    for start in [root, *range(n)]:
        if start not in reached:
            triples.append((f"v{root}", ":unattached", f"v{start}"))
            reached.add(start)
            frontier.append(start)
        while frontier:
            node = frontier.pop()
            for other in neighbours[node] - reached:
                reached.add(other)
                frontier.append(other)
    return penman.encode(penman.Graph(triples, top=f"v{root}"), indent=None)


def graph_smatch(predicted: Sequence[SimpleGraph], gold: Sequence[SimpleGraph]) -> dict[str, float | int]:
    """Corpus Smatch of simplified graphs (module docstring): ``{"precision", "recall", "f1", "n"}``."""
    if len(predicted) != len(gold):
        raise InputError(f"predicted has {len(predicted)} graphs but gold has {len(gold)}")
    return smatch_f1([graph_penman(lowercased(g)) for g in predicted], [graph_penman(lowercased(g)) for g in gold])


def smatch_by_corpus(corpora: Sequence[str], predicted: Sequence[SimpleGraph], gold: Sequence[SimpleGraph]
                     ) -> dict[str, dict[str, Any]]:
    """Smatch (:func:`graph_smatch`) of the items of each corpus (``corpora[i]`` names item ``i``'s), in the order
    the corpora first appear, and, with several corpora, ``"all"``: the pooled triples."""
    out: dict[str, dict[str, Any]] = {}
    for corpus in dict.fromkeys(corpora):
        rows = [i for i, c in enumerate(corpora) if c == corpus]
        out[corpus] = graph_smatch([predicted[i] for i in rows], [gold[i] for i in rows])
    if len(out) > 1:
        out["all"] = graph_smatch(predicted, gold)
    return out


def source_smatch(source: GraphSource, corpora: Sequence[str], split: str, data_dir: str | os.PathLike | None = None
                  ) -> dict[str, dict[str, Any]]:
    """:func:`smatch_by_corpus` of ``source``'s graphs of the sentences of each gold corpus against the simplified
    gold graphs, each corpus with its parse seconds and sentences per second."""
    names: list[str] = []
    predicted: list[SimpleGraph] = []
    gold: list[SimpleGraph] = []
    speed: dict[str, dict[str, Any]] = {}
    for corpus in corpora:
        rows = list(read_amr_corpus(corpus, split, data_dir))
        gold += [simplify(text, item=f"{corpus}/{split} {gid}") for gid, _, text in rows]
        began = time.perf_counter()
        predicted += source.graphs([sentence for _, sentence, _ in rows])
        seconds = time.perf_counter() - began
        names += [corpus] * len(rows)
        speed[corpus] = {"seconds": round(seconds, 2),
                         "sentences_per_second": round(len(rows) / seconds, 1) if seconds > 0 else None}
    report = smatch_by_corpus(names, predicted, gold)
    return {name: {**figures, **speed.get(name, {})} for name, figures in report.items()}
