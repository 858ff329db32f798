"""Simplified AMR graphs: the :class:`SimpleGraph` value type and :func:`simplify`, which turns PENMAN into it.

Simplification (the AMR simplifier of Konstas et al. 2017 as used by Song et al. 2020, which the AMR-enhanced
evaluator applies to amrlib's parses):

- variables are dropped: a node is its concept; a variable used twice (reentrancy) is still one node;
- sense suffixes are dropped from concepts: ``want-01`` -> ``want``, ``look-up-05`` -> ``look-up``
  (a trailing ``-<digits>`` on an instance's concept; constants are never touched);
- constants (``:polarity -``, ``:quant 6``, ``:op1 "BRAF"``) become nodes of their own, one per occurrence,
  with the quotes of a string removed;
- a ``name`` node whose ``:op1 .. :opN`` are constants becomes one node whose concept is the constants joined by
  one space in op order (``"True" "Stories"`` -> ``True Stories``); its other roles, if any, are kept;
- ``:wiki`` roles are dropped;
- relation labels lose the leading colon; alignment markers (``~e.3``) are dropped (penman strips them);
- inverse roles are normalised as penman's triples give them under its AMR model: ``(p / planet :ARG3-of
  (c / come-01))`` is the edge ``come -ARG3-> planet`` (the role without ``-of``, source and target swapped).
  The AMR model's roles that merely end in ``-of`` (``:consist-of``, ``:prep-out-of``, ``:prep-on-behalf-of``)
  are not inverted.

Node order is the order in which the PENMAN text introduces nodes (``(v / concept`` for a variable, the constant
itself for a constant); edge order is the order of their roles in the text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dialeval.errors import InputError

__all__ = ["GRAPH_FORMAT_VERSION", "SimpleGraph", "decode_penman", "simplify"]

#: Bumped whenever :func:`simplify` or the dependency stand-in would produce different graphs for the same input;
#: graph-source signatures include it, so caches keyed by them are invalidated.
GRAPH_FORMAT_VERSION = 1

_PLAIN_CONCEPT = re.compile(r'[^\s()":]+')
_SENSE = re.compile(r"(.+?)-\d+")
_OP = re.compile(r":op([1-9][0-9]*)")


@dataclass(frozen=True)
class SimpleGraph:
    """A simplified AMR (or AMR-like) graph.

    ``concepts[i]`` is node ``i``'s label; ``edges`` are ``(source, target, relation)`` with node indices and the
    relation without its colon (``"ARG0"``); ``root`` is a node index, or ``None`` only for the empty graph.
    Lists given for ``concepts`` / ``edges`` are stored as tuples; bad indices raise :class:`InputError`.
    """

    concepts: tuple[str, ...]
    edges: tuple[tuple[int, int, str], ...] = ()
    root: int | None = None

    def __post_init__(self) -> None:
        concepts = tuple(self.concepts)
        edges = tuple((int(s), int(t), str(r)) for s, t, r in self.edges)
        n = len(concepts)
        for i, c in enumerate(concepts):
            if not isinstance(c, str):
                raise InputError(f"SimpleGraph.concepts[{i}] must be a string, got {type(c).__name__}")
        for i, (s, t, r) in enumerate(edges):
            if not (0 <= s < n and 0 <= t < n):
                raise InputError(f"SimpleGraph.edges[{i}] = {(s, t, r)!r} points outside the {n} nodes")
            if not r:
                raise InputError(f"SimpleGraph.edges[{i}] has an empty relation label")
        if n and (self.root is None or not 0 <= self.root < n):
            raise InputError(f"SimpleGraph.root = {self.root!r} is not a node index (0..{n - 1})")
        if not n and self.root is not None:
            raise InputError(f"SimpleGraph.root = {self.root!r} but the graph has no nodes (root must be None)")
        object.__setattr__(self, "concepts", concepts)
        object.__setattr__(self, "edges", edges)

    @property
    def n_nodes(self) -> int:
        return len(self.concepts)

    def linearise(self) -> str:
        """One line of text for an LLM prompt: PENMAN without variables, e.g.
        ``(want :ARG0 (boy) :ARG1 (go :ARG0 boy) :polarity (-))``.

        Layout: starting from the root, edges are taken in edge order, each hung under an end already laid out:
        under its source as ``:rel``, or, when only its target is laid out, under the target as ``:rel-of`` (so
        penman's normalised inverse roles read as in the PENMAN source). An edge with neither end laid out waits
        for the next pass over the waiting edges. An edge whose other end was already laid out (reentrancy,
        cycle) writes that node as its bare concept, without brackets; every node is bracketed exactly once and
        every edge written exactly once. Nodes not connected to the root follow as further trees, each started
        from its lowest-index node. A concept that is not one plain token (whitespace, a bracket, a colon or a
        quote, or empty) is written as a JSON string (``"True Stories"``). The empty graph gives ``""``.
        """
        n = len(self.concepts)
        if not n:
            return ""
        children: list[list[tuple[str, int, bool]]] = [[] for _ in range(n)]
        placed: set[int] = set()
        starts: list[int] = []
        waiting = list(range(len(self.edges)))
        start = self.root if self.root is not None else 0
        while True:
            starts.append(start)
            placed.add(start)
            progress = True
            while waiting and progress:
                rest = []
                for e in waiting:
                    s, t, rel = self.edges[e]
                    if s in placed:
                        children[s].append((rel, t, t not in placed))
                        placed.add(t)
                    elif t in placed:
                        children[t].append((rel + "-of", s, True))
                        placed.add(s)
                    else:
                        rest.append(e)
                progress = len(rest) < len(waiting)
                waiting = rest
            if len(placed) == n:
                break
            start = min(i for i in range(n) if i not in placed)

        def name(i: int) -> str:
            c = self.concepts[i]
            return c if _PLAIN_CONCEPT.fullmatch(c) else json.dumps(c, ensure_ascii=False)

        out: list[str] = []
        for tree in starts:
            out.append(("(" if not out else " (") + name(tree))
            stack = [iter(children[tree])]  # iterative: deep graphs must not hit the recursion limit
            while stack:
                for rel, other, expand in stack[-1]:
                    if expand:
                        out.append(f" :{rel} (" + name(other))
                        stack.append(iter(children[other]))
                        break
                    out.append(f" :{rel} {name(other)}")
                else:
                    out.append(")")
                    stack.pop()
        return "".join(out)

    def to_json(self) -> str:
        """Compact JSON: ``{"concepts": [...], "edges": [[s, t, rel], ...], "root": int|null}``."""
        return json.dumps({"concepts": list(self.concepts), "edges": [list(e) for e in self.edges],
                           "root": self.root}, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, data: str | Mapping[str, Any]) -> SimpleGraph:
        """The graph written by :meth:`to_json` (the string or the decoded dict); a missing key raises
        :class:`InputError` naming it."""
        obj = json.loads(data) if isinstance(data, str) else data
        if not isinstance(obj, Mapping):
            raise InputError(f"SimpleGraph JSON must be an object, got {type(obj).__name__}")
        for key in ("concepts", "edges", "root"):
            if key not in obj:
                raise InputError(f"SimpleGraph JSON has no {key!r} field")
        edges = []
        for i, e in enumerate(obj["edges"]):
            if not isinstance(e, (list, tuple)) or len(e) != 3:
                raise InputError(f"SimpleGraph JSON edges[{i}] = {e!r} is not [source, target, relation]")
            edges.append(tuple(e))
        return cls(tuple(obj["concepts"]), tuple(edges), obj["root"])


def _bad(item: object, text: str, reason: str) -> InputError:
    where = "PENMAN graph" if item is None else f"PENMAN graph {item}"
    start = " ".join(text.split())[:60]
    return InputError(f"{where}: cannot decode ({reason}); text starts {start!r}")


def _single_graph_problem(text: str) -> str | None:
    """Why ``text`` is not exactly one bracketed graph (after ``#`` comment lines), or None.

    penman's decoder stops at the first complete graph and ignores what follows; this catches that."""
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")).strip()
    if not body:
        return "no graph"
    if not body.startswith("("):
        return "text before the first '('"
    depth, in_string, escaped = 0, False, False
    for pos, ch in enumerate(body):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return None if not body[pos + 1:].strip() else "text after the graph's closing ')'"
    return "unbalanced brackets" if not in_string else "unterminated string"


def decode_penman(text: str, item: object = None):
    """``text`` decoded by penman with its AMR model; it must hold exactly one graph (``#`` comment lines
    allowed), else :class:`~dialeval.errors.InputError` names ``item`` and quotes the start of the text."""
    import penman
    from penman.models.amr import model as amr_model

    problem = _single_graph_problem(text)
    if problem is not None:
        raise _bad(item, text, problem)
    try:
        return penman.decode(text, model=amr_model)
    except penman.DecodeError as err:
        raise _bad(item, text, str(err).strip().splitlines()[-1]) from err


def _constant(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value[1:-1]
    return value


def simplify(graph, item: object = None) -> SimpleGraph:
    """The simplified graph (module docstring) of a PENMAN string or a ``penman.Graph``.

    A string is decoded with penman's AMR model and must hold exactly one graph (``# ::`` metadata lines
    allowed); otherwise :class:`~dialeval.errors.InputError` names ``item`` (an id or index, when given) and
    quotes the start of the text. So does a node with no concept (``(a :ARG0 (b / boy))``). A ``penman.Graph`` is
    taken as it was decoded.
    """
    text = graph if isinstance(graph, str) else None
    if text is not None:
        graph = decode_penman(text, item)
    triples = list(graph.triples)
    variables = graph.variables()
    concept_of: dict[str, str | None] = {}
    for src, role, tgt in triples:
        if role == ":instance":
            concept_of.setdefault(src, tgt)
    missing = sorted(v for v in variables if concept_of.get(v) is None)
    if missing:
        raise _bad(item, text if text is not None else str(graph), f"node {missing[0]!r} has no concept")

    # name nodes whose :opN constants collapse into the node's concept
    ops: dict[str, list[tuple[int, str]]] = {}
    for src, role, tgt in triples:
        m = _OP.fullmatch(role)
        if m and concept_of.get(src) == "name" and tgt not in variables:
            ops.setdefault(src, []).append((int(m.group(1)), _constant(tgt)))
    collapsed = {v: " ".join(s for _, s in sorted(parts, key=lambda p: p[0])) for v, parts in ops.items()}

    concepts: list[str] = []
    index: dict[str, int] = {}
    edges: list[tuple[int, int, str]] = []
    pending: list[tuple[str, str, str]] = []  # variable-to-variable edges, resolved once every node has an index
    for src, role, tgt in triples:
        if role == ":instance":
            if src not in index:
                index[src] = len(concepts)
                concept = collapsed.get(src)
                if concept is None:
                    m = _SENSE.fullmatch(tgt)
                    concept = m.group(1) if m else tgt
                concepts.append(concept)
        elif role == ":wiki" or (src in collapsed and _OP.fullmatch(role) and tgt not in variables):
            continue
        elif tgt in variables:
            pending.append((src, tgt, role))
        else:
            concepts.append(_constant(tgt))
            pending.append((src, len(concepts) - 1, role))
    for src, tgt, role in pending:
        t = tgt if isinstance(tgt, int) else index[tgt]
        edges.append((index[src], t, role[1:] if role.startswith(":") else role))
    # constants were given indices as they came; edges were appended in triple order, as documented
    return SimpleGraph(tuple(concepts), tuple(edges), index[graph.top] if graph.top in index else None)
