"""GRADE's commonsense graph: readers, CSR graph, node embeddings, alignment, hops, neighbour features.

Sources
-------
* **ConceptNet-100K** (Li et al. 2016), shipped in the data directory as ``conceptnet_cn100k/``
  (:func:`read_cn100k`). Rows are ``relation<TAB>head<TAB>tail[<TAB>label]``; concepts are lower-cased phrases
  ("play on ice"). What the files hold (checked on the files, which differ from SOURCES.md for ``test.txt``):
  ``train.txt`` 100,000 true triples (3 columns); ``valid.txt`` 1,200 (3 columns, the 600 + 600 true rows of
  ``dev1``/``dev2``); ``test.txt`` 1,200 (3 columns, all true, disjoint from the others; SOURCES.md says it has a
  label column, it has none); ``dev1.txt``/``dev2.txt`` 1,200 each with a 4th column, 600 labelled 1 (true) and
  600 labelled 0 (*corrupted* triples, e.g. ``IsA land gas``). Rows labelled 0 never become edges; a 4-column
  row is kept only when its label is 1. Names are whitespace-normalised (9 names end in a space, e.g.
  "airport "). Result: 102,397 distinct true triples, 99,847 distinct directed (head, tail) pairs after dropping
  self-loops (57 rows) and collapsing parallel relations, 78,334 concepts, 34 relations (all kept, the negated
  ones such as ``NotDesires`` included, as in KagNet-style graphs).
* **ConceptNet 5 assertions** (``conceptnet-assertions-5.7.0.csv[.gz]``, the user's download;
  :func:`read_conceptnet_assertions`): tab-separated ``uri, relation, start, end, json``; an edge is kept when
  both ends are ``/c/en/...``; the concept is the term of the URI with ``_`` -> space (``/c/en/ice_hockey/n`` ->
  "ice hockey"); ``ExternalURL`` and ``HasContext`` assertions are skipped (as KagNet's builder, which GRADE's
  ``cpnet.graph`` most likely came from). The full English graph has hundreds of thousands of concepts, far
  beyond the 10 MB per-file limit for shipped tables: it is for local builds (``allow_large_files`` is set).
* **Numberbatch** text vectors (``numberbatch-en-19.08.txt[.gz]``, :func:`read_numberbatch`), GRADE's node
  embeddings, when the user has them (``embedding="numberbatch:<path>"``). Not available here.

Graph
-----
:class:`ConceptGraph`: directed, parallel edges collapsed, self-loops dropped, stored as CSR over integer node ids
(names sorted, so ids are deterministic), with the (first) relation id per edge. ``reverse_edges=True`` adds the
reverse of every edge, as KagNet's ``save_cpnet`` does (``graph.add_edge(obj, subj, rel=rel+len(relations))``);
GRADE's ``cpnet.graph`` (KagNet-style, not inspectable here) was most likely made that way, so its "directed"
shortest paths were effectively undirected. On ConceptNet-100K the purely directed graph reaches only 34% of the
GRADE-eval (context keyword, response keyword) pairs within depth 4, against 64% with reverse edges (see
:mod:`.coverage`), so :meth:`GraphTables.build` defaults to ``reverse_edges=True`` (198,072 stored edges);
:meth:`ConceptGraph.hops` always follows edge direction in the stored graph.

Alignment (:meth:`ConceptGraph.lookup`): exact match of the keyword to a concept name, then with ``_`` and ``-``
replaced by spaces. Keywords are single lemmas, so only single-word concepts (10,477 of 78,334 in
ConceptNet-100K) can be hit. GRADE eval: 86.0% of keyword occurrences (70.2% of distinct keywords) align.

Hops (:meth:`ConceptGraph.hops`): shortest directed path length + 1 (GRADE's convention: the same concept is
hop 1, a direct edge hop 2), ``unlimited_hop`` (20) when unaligned or not reachable within ``max_depth`` edges
(default 4, i.e. hops 1..5 or 20; the original searched without limit). Distances are found by meeting in the
middle: a forward ball of radius ceil(d/2) around the source and a backward ball of radius floor(d/2) around the
target, both cached per node, and ``min(depth_f + depth_b)`` over their intersection (results also cached per
pair) -- exact for paths up to ``max_depth`` edges. Measured on the 14,711 (context, response) keyword pairs of
the GRADE eval, graph with reverse edges: depth 4 takes 0.96 s cold (0.01 s cached) and reaches 64.2% of pairs;
depth 3: 0.6 s, 51.1%; depth 5: 5.5 s, 67.4%; depth 6: 11.9 s, 68.0%. A plain depth-4 BFS per source costs
7.9 ms and reaches 37k nodes (half the graph) per source. Directed graph, depth 4: 0.21 s, 34.1%.

Neighbours (:meth:`GraphTables.neighbour_ids`): 1-hop = successors, 2-hop = successors of successors except the
concept itself (1-hop nodes may recur, as in the original); each list without duplicates; the top ``n`` by cosine
to the concept's embedding (ties by node id), only among neighbours with a non-zero vector; a concept without a
vector ranks by cosine to the mean of its candidates. Fewer than ``n`` -> all of them (the original sampled with
replacement up to ``n``, which only re-weights the mean); none -> zero vector. Feature = mean of the selected
neighbours' vectors (:meth:`GraphTables.node_features`).

Node embeddings (Numberbatch is not available here)
---------------------------------------------------
Substitutes, measured with :func:`measure_embeddings` (``python -m dialeval.metrics.grade.graph measure``): the
graph is built from ``train.txt`` only (97,891 edges); held-out true pairs = ``valid.txt`` + ``test.txt`` minus
train pairs (1,956 distinct); ROC-AUC of cosine(head, tail) of held-out pairs against (a) 20,000 uniformly random
node pairs, (b) held-out heads with shuffled held-out tails (1,904, degree-preserving) and (c) the corrupted
triples of dev1/dev2 (772 distinct, not true); coverage = share of the 78,334 nodes with a non-zero vector. Seed 0,
vectors rounded to fp16 as shipped; 2-core CPU.

=====================================  ====  ========  ========  =========  ========  =========
kind                                   dims  AUC rand  AUC shuf  AUC corr.  coverage  build (s)
=====================================  ====  ========  ========  =========  ========  =========
glove-plain (all words, not centred)    50   0.574     0.776     0.744      0.9795       4
glove (no stop words, centred)          50   0.840     0.839     0.840      0.9795       4
glove-retrofit                          50   0.906     0.901     0.901      0.9994       6
minilm (384-d name embedding)          384   0.971     0.872     0.887      1.0         75
minilm-retrofit (not centred)          384   0.977     0.915     0.922      1.0         77
minilm-pca50                            50   0.934     0.889     0.903      1.0         77
minilm-pca32-retrofit                   32   0.964     0.929     0.939      1.0         78
**minilm-pca50-retrofit** (default)     50   0.968     0.936     0.945      1.0         78
minilm-pca64-retrofit                   64   0.969     0.937     0.945      1.0         78
=====================================  ====  ========  ========  =========  ========  =========

``glove``: mean GloVe-6B-50d vector of the name's words without stop words, centred (the plain mean scores 0.57
on random pairs: long phrases share the stop-word direction). ``minilm``: :class:`dialeval.backbone.Encoder`
(all-MiniLM-L6-v2, mean pooling) on the concept name; ``-pcaK``: centred PCA to K dims. ``-retrofit``: Faruqui et
al. (2015) retrofitting on the undirected graph, alpha 1, 10 iterations -- how Numberbatch itself is made; it
also gives the nodes without a word vector the mean of their neighbours. (alpha 0.5 scores higher still, 0.92 for
GloVe, but smooths away the concept's own identity; not used.) Retrofitting gains 0.03-0.07 AUC, MiniLM beats
GloVe by 0.03-0.06. **Default: ``minilm-pca50-retrofit``**: 50-d fp16 (7.8 MB for ConceptNet-100K), 100%
coverage; building it encodes the 78k names once (about 80 s on 2 CPU cores, cached). ``glove-retrofit`` builds in
seconds and is the fallback when time matters. Build the tables with ``python -m dialeval.metrics.grade.graph build
[--embedding KIND] [--out DIR]``.

Tables (:class:`GraphTables`)
-----------------------------
Folder with ``nodes.txt`` (one name per line, line = node id), ``graph.safetensors`` (``indptr`` int64,
``indices`` int32, ``edge_relation`` int16), ``embeddings.safetensors`` (``embeddings`` fp16 [N, D]) and
``meta.json`` (format, source, counts, relations, embedding kind and dims, sha256 of the source files and of the
saved files, settings). For ConceptNet-100K with reverse edges: nodes.txt 1.33 MB, graph.safetensors 1.82 MB,
embeddings.safetensors 7.83 MB, meta.json 3 kB; loading takes 0.1 s.
:meth:`GraphTables.build` caches the folder under ``cache_dir`` keyed by the source hashes and settings.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import tempfile
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

__all__ = [
    "DEFAULT_UNLIMITED_HOP",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_EMBEDDING",
    "EMBEDDING_KINDS",
    "CN100K_FOLDER",
    "ConceptGraph",
    "GraphTables",
    "default_cache_dir",
    "read_cn100k",
    "read_conceptnet_assertions",
    "conceptnet_term",
    "read_numberbatch",
    "node_embeddings",
    "glove_name_embeddings",
    "minilm_name_embeddings",
    "retrofit",
    "pca_reduce",
    "edge_auc",
    "measure_embeddings",
]

DEFAULT_UNLIMITED_HOP = 20
DEFAULT_MAX_DEPTH = 4
DEFAULT_EMBEDDING = "minilm-pca50-retrofit"
EMBEDDING_KINDS = (
    "glove", "glove-retrofit", "glove-plain", "minilm", "minilm-retrofit", "minilm-pca<K>", "minilm-pca<K>-retrofit",
    "numberbatch:<path>", "numberbatch:<path>-retrofit",
)
MEASURED_KINDS = (
    "glove-plain", "glove", "glove-retrofit", "minilm", "minilm-pca50", "minilm-pca32-retrofit",
    "minilm-pca50-retrofit", "minilm-pca64-retrofit", "minilm-retrofit",
)
CN100K_FOLDER = "conceptnet_cn100k"
CN100K_FILES = ("train.txt", "valid.txt", "test.txt", "dev1.txt", "dev2.txt")
TABLES_FORMAT = "dialeval-grade-graph-tables"
TABLES_VERSION = 1
BUILDER_VERSION = 1  # bump when a change to the readers / embeddings changes built tables (invalidates caches)
MAX_TABLE_FILE_BYTES = 10 * 1024 * 1024
_BALL_CACHE_ELEMENTS = 20_000_000  # node ids kept in the hop cache (5 bytes each)
_PAIR_CACHE_SIZE = 1_000_000  # (source, target, depth) -> distance entries


def default_cache_dir() -> Path:
    """``$DIALEVAL_CACHE_DIR/grade``, else ``$XDG_CACHE_HOME/dialeval/grade``, else ``~/.cache/dialeval/grade``."""
    if os.environ.get("DIALEVAL_CACHE_DIR"):
        return Path(os.environ["DIALEVAL_CACHE_DIR"]) / "grade"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dialeval" / "grade"


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def _open_text(path: str | os.PathLike):
    path = str(path)
    if path.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="\n")
    return open(path, encoding="utf-8", newline="\n")


# == readers =========================================================================================================
def read_cn100k(folder: str | os.PathLike) -> tuple[list[tuple[str, str, str]], dict[str, Any]]:
    """True (relation, head, tail) triples of the ConceptNet-100K files in ``folder``, in file order.

    ``train.txt`` is required; ``valid/test/dev1/dev2.txt`` are read when present. A 3-column row is a true
    triple; a 4-column row is kept only when its label is 1 (label 0 = corrupted negative). Returns the triples
    (duplicates across files kept) and per-file counts ``{file: {"rows", "kept", "negatives_dropped"}}``.
    """
    folder = Path(folder)
    if not (folder / "train.txt").exists():
        raise FileNotFoundError(f"{folder / 'train.txt'} not found: is {folder} the ConceptNet-100K folder?")
    triples: list[tuple[str, str, str]] = []
    stats: dict[str, Any] = {}
    for name in CN100K_FILES:
        path = folder / name
        if not path.exists():
            continue
        rows = kept = dropped = 0
        with _open_text(path) as fh:
            for lineno, line in enumerate(fh, 1):
                line = line.rstrip("\n").rstrip("\r")
                if not line.strip():
                    continue
                cols = line.split("\t")
                rows += 1
                if len(cols) == 4:
                    label = float(cols[3])
                    if label not in (0.0, 1.0):
                        raise ValueError(f"{path}:{lineno}: label {cols[3]!r} is neither 0 nor 1")
                    if label == 0.0:
                        dropped += 1
                        continue
                elif len(cols) != 3:
                    raise ValueError(f"{path}:{lineno}: expected 3 or 4 tab-separated columns, got {len(cols)}")
                rel, head, tail = cols[0].strip(), " ".join(cols[1].split()), " ".join(cols[2].split())
                if head and tail:
                    triples.append((rel, head, tail))
                    kept += 1
        stats[name] = {"rows": rows, "kept": kept, "negatives_dropped": dropped}
    return triples, stats


def conceptnet_term(uri: str, lang: str = "en") -> str | None:
    """``/c/en/ice_hockey/n/...`` -> ``"ice hockey"``; ``None`` for another language or a non-concept URI."""
    parts = uri.split("/")
    if len(parts) < 4 or parts[1] != "c" or parts[2] != lang or not parts[3]:
        return None
    return parts[3].replace("_", " ")


def read_conceptnet_assertions(
    path: str | os.PathLike,
    *,
    lang: str = "en",
    exclude_relations: Iterable[str] = ("ExternalURL", "HasContext"),
) -> Iterator[tuple[str, str, str]]:
    """(relation, head, tail) of the ConceptNet 5 assertions CSV where both ends are ``/c/<lang>/`` concepts.

    Columns: assertion URI, relation URI (``/r/IsA``; ``/r/dbpedia/genre`` -> ``dbpedia/genre``), start URI, end
    URI, JSON info. ``.gz`` files are read directly.
    """
    exclude = set(exclude_relations)
    with _open_text(path) as fh:
        for line in fh:
            cols = line.rstrip("\n").split("\t")
            if len(cols) < 4 or not cols[1].startswith("/r/"):
                continue
            rel = cols[1][3:]
            if rel in exclude:
                continue
            head, tail = conceptnet_term(cols[2], lang), conceptnet_term(cols[3], lang)
            if head is None or tail is None:
                continue
            yield rel, head, tail


def read_numberbatch(path: str | os.PathLike, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Numberbatch vectors for ``names``: ([N, dim] float32, covered bool [N]); other terms are skipped.

    Accepts the English file (``ice_hockey 0.1 ...``) and the multilingual one (``/c/en/ice_hockey ...``); the
    first line ``count dim`` is skipped.
    """
    index = {n: i for i, n in enumerate(names)}
    out: np.ndarray | None = None
    covered = np.zeros(len(names), dtype=bool)
    with _open_text(path) as fh:
        for line in fh:
            parts = line.rstrip("\n").split(" ")
            if len(parts) <= 2:
                continue
            term = parts[0]
            if term.startswith("/c/"):
                term = conceptnet_term(term)
                if term is None:
                    continue
            else:
                term = term.replace("_", " ")
            i = index.get(term)
            if i is None:
                continue
            if out is None:
                out = np.zeros((len(names), len(parts) - 1), dtype=np.float32)
            out[i] = np.asarray(parts[1:], dtype=np.float32)
            covered[i] = True
    if out is None:
        raise ValueError(f"no vector in {path} matched any of the {len(names)} concepts")
    return out, covered


# == the graph =======================================================================================================
class ConceptGraph:
    """Directed concept graph in CSR form (see the module docstring). Node ``i`` is ``names[i]``."""

    def __init__(
        self,
        names: Sequence[str],
        indptr: np.ndarray,
        indices: np.ndarray,
        edge_relation: np.ndarray | None = None,
        relations: Sequence[str] = (),
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.names = list(names)
        self.indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        self.indices = np.ascontiguousarray(indices, dtype=np.int32)
        n_edges = int(self.indices.shape[0])
        if self.indptr.shape != (len(self.names) + 1,) or int(self.indptr[-1]) != n_edges:
            raise ValueError("indptr does not match the node and edge counts")
        self.edge_relation = (
            np.zeros(n_edges, dtype=np.int16) if edge_relation is None else np.asarray(edge_relation, np.int16)
        )
        self.relations = list(relations)
        self.meta: dict[str, Any] = dict(meta or {})
        self._index: dict[str, int] | None = None
        self._rev: tuple[np.ndarray, np.ndarray] | None = None
        self._balls: OrderedDict[tuple[int, int, bool], tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._ball_elements = 0
        self._pairs: dict[tuple[int, int, int], int | None] = {}

    # -- construction -------------------------------------------------------------------------------------------
    @classmethod
    def from_triples(
        cls,
        triples: Iterable[tuple[str, str, str]],
        *,
        reverse_edges: bool = False,
        drop_self_loops: bool = True,
        extra_nodes: Iterable[str] = (),
        meta: dict[str, Any] | None = None,
    ) -> "ConceptGraph":
        """Build from (relation, head, tail) triples. Parallel edges collapse to one (smallest relation id)."""
        rels, heads, tails = [], [], []
        for rel, head, tail in triples:
            rels.append(rel)
            heads.append(head)
            tails.append(tail)
        names = sorted(set(heads) | set(tails) | set(extra_nodes))
        index = {n: i for i, n in enumerate(names)}
        relations = sorted(set(rels))
        rel_index = {r: i for i, r in enumerate(relations)}
        h = np.fromiter((index[x] for x in heads), dtype=np.int64, count=len(heads))
        t = np.fromiter((index[x] for x in tails), dtype=np.int64, count=len(tails))
        r = np.fromiter((rel_index[x] for x in rels), dtype=np.int64, count=len(rels))
        n_loops = 0
        if drop_self_loops:
            keep = h != t
            n_loops = int((~keep).sum())
            h, t, r = h[keep], t[keep], r[keep]
        if reverse_edges:
            n_rel = len(relations)
            h, t, r = np.concatenate([h, t]), np.concatenate([t, h]), np.concatenate([r, r + n_rel])
            relations = relations + [f"{x}^-1" for x in relations]
        n = len(names)
        order = np.lexsort((r, t, h))  # by head, then tail, then relation id
        h, t, r = h[order], t[order], r[order]
        first = np.ones(len(h), dtype=bool)
        first[1:] = (h[1:] != h[:-1]) | (t[1:] != t[:-1])
        h, t, r = h[first], t[first], r[first]
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(h, minlength=n), out=indptr[1:])
        info = {
            "n_triples": len(rels),
            "n_self_loops_dropped": n_loops,
            "reverse_edges": bool(reverse_edges),
            **(meta or {}),
        }
        return cls(names, indptr, t.astype(np.int32), r.astype(np.int16), relations, info)

    @classmethod
    def from_cn100k(cls, data_dir: str | os.PathLike | None = None, **kwargs) -> "ConceptGraph":
        """ConceptNet-100K from ``<data_dir>/conceptnet_cn100k`` (true triples of all five files)."""
        from ...paths import data_file

        folder = data_file(CN100K_FOLDER, data_dir)
        triples, stats = read_cn100k(folder)
        meta = {"source": "conceptnet_cn100k", "files": stats, **kwargs.pop("meta", {})}
        return cls.from_triples(triples, meta=meta, **kwargs)

    @classmethod
    def from_conceptnet_csv(cls, path: str | os.PathLike, *, lang: str = "en", **kwargs) -> "ConceptGraph":
        """English ConceptNet 5 from the assertions CSV (see :func:`read_conceptnet_assertions`)."""
        meta = {"source": f"conceptnet_assertions:{Path(path).name}", **kwargs.pop("meta", {})}
        return cls.from_triples(read_conceptnet_assertions(path, lang=lang), meta=meta, **kwargs)

    # -- basic queries -------------------------------------------------------------------------------------------
    @property
    def n_nodes(self) -> int:
        return len(self.names)

    @property
    def n_edges(self) -> int:
        return int(self.indices.shape[0])

    @property
    def index(self) -> dict[str, int]:
        if self._index is None:
            self._index = {n: i for i, n in enumerate(self.names)}
        return self._index

    def csr(self):
        """The adjacency as a ``scipy.sparse.csr_matrix`` of ones (rows = heads)."""
        import scipy.sparse as sp

        data = np.ones(self.n_edges, dtype=np.float32)
        return sp.csr_matrix((data, self.indices, self.indptr), shape=(self.n_nodes, self.n_nodes))

    def _reverse(self) -> tuple[np.ndarray, np.ndarray]:
        if self._rev is None:
            heads = np.repeat(np.arange(self.n_nodes, dtype=np.int64), np.diff(self.indptr))
            order = np.lexsort((heads, self.indices))
            indptr = np.zeros(self.n_nodes + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.indices, minlength=self.n_nodes), out=indptr[1:])
            self._rev = (indptr, heads[order].astype(np.int32))
        return self._rev

    def successors(self, node: int) -> np.ndarray:
        return self.indices[self.indptr[node] : self.indptr[node + 1]]

    def predecessors(self, node: int) -> np.ndarray:
        indptr, indices = self._reverse()
        return indices[indptr[node] : indptr[node + 1]]

    def lookup(self, term: str) -> int | None:
        """Node id of ``term``: exact name, else with ``_`` and ``-`` as spaces; ``None`` when absent."""
        index = self.index
        if term in index:
            return index[term]
        alt = " ".join(term.replace("_", " ").replace("-", " ").split())
        return index.get(alt)

    def align(self, terms: Sequence[str]) -> list[int | None]:
        return [self.lookup(t) for t in terms]

    # -- distances -----------------------------------------------------------------------------------------------
    @staticmethod
    def _gather(indptr: np.ndarray, indices: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        starts, ends = indptr[nodes], indptr[nodes + 1]
        lengths = ends - starts
        total = int(lengths.sum())
        if total == 0:
            return np.empty(0, dtype=np.int32)
        offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
        return indices[offsets + np.arange(total)]

    def ball(self, node: int, radius: int, *, backward: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Nodes within ``radius`` edges of ``node`` (following edges, or against them when ``backward``).

        Returns (node ids sorted, depth uint8), ``node`` itself at depth 0. Cached per (node, radius, direction).
        """
        key = (int(node), int(radius), bool(backward))
        hit = self._balls.get(key)
        if hit is not None:
            self._balls.move_to_end(key)
            return hit
        indptr, indices = self._reverse() if backward else (self.indptr, self.indices)
        seen = np.zeros(self.n_nodes, dtype=bool)
        seen[node] = True
        frontier = np.array([node], dtype=np.int64)
        ids, depths = [frontier], [np.zeros(1, dtype=np.uint8)]
        for d in range(1, radius + 1):
            nxt = np.unique(self._gather(indptr, indices, frontier))
            nxt = nxt[~seen[nxt]]
            if nxt.size == 0:
                break
            seen[nxt] = True
            ids.append(nxt.astype(np.int64))
            depths.append(np.full(nxt.size, d, dtype=np.uint8))
            frontier = nxt.astype(np.int64)
        all_ids, all_depths = np.concatenate(ids), np.concatenate(depths)
        order = np.argsort(all_ids, kind="stable")
        result = (all_ids[order].astype(np.int32), all_depths[order])
        self._balls[key] = result
        self._ball_elements += result[0].size
        while self._ball_elements > _BALL_CACHE_ELEMENTS and len(self._balls) > 1:
            _, (old, _) = self._balls.popitem(last=False)
            self._ball_elements -= old.size
        return result

    def distance(self, source: int, target: int, max_depth: int = DEFAULT_MAX_DEPTH) -> int | None:
        """Shortest directed path length (edges) from ``source`` to ``target`` if ``<= max_depth``, else None."""
        if source == target:
            return 0
        key = (int(source), int(target), int(max_depth))
        if key in self._pairs:
            return self._pairs[key]
        fwd_ids, fwd_d = self.ball(source, (max_depth + 1) // 2)
        bwd_ids, bwd_d = self.ball(target, max_depth // 2, backward=True)
        _, i, j = np.intersect1d(fwd_ids, bwd_ids, assume_unique=True, return_indices=True)
        dist = int((fwd_d[i].astype(np.int64) + bwd_d[j]).min()) if i.size else None
        if len(self._pairs) >= _PAIR_CACHE_SIZE:
            self._pairs.clear()
        self._pairs[key] = dist
        return dist

    def hops(
        self,
        sources: Sequence[int | None],
        targets: Sequence[int | None],
        *,
        max_depth: int = DEFAULT_MAX_DEPTH,
        unlimited_hop: int = DEFAULT_UNLIMITED_HOP,
    ) -> np.ndarray:
        """[len(sources), len(targets)] int64: shortest directed path length + 1, ``unlimited_hop`` when a node is
        ``None`` (unaligned) or the target is not reachable within ``max_depth`` edges."""
        out = np.full((len(sources), len(targets)), unlimited_hop, dtype=np.int64)
        for a, s in enumerate(sources):
            if s is None:
                continue
            for b, t in enumerate(targets):
                if t is None:
                    continue
                d = self.distance(int(s), int(t), max_depth)
                if d is not None:
                    out[a, b] = d + 1
        return out

    def clear_cache(self) -> None:
        self._balls.clear()
        self._ball_elements = 0
        self._pairs.clear()


# == node embeddings =================================================================================================
def glove_name_embeddings(
    names: Sequence[str], *, centre: bool = True, drop_stop_words: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """GloVe-6B-50d vector of each name: ([N, 50] float32, covered bool).

    Mean of the vectors of the name's in-vocabulary words without stop words (spaCy's English list; all words
    when every word is a stop word), then, with ``centre``, minus the mean over the covered names (raw means of
    short phrases share a large common component that makes unrelated phrases look similar). Tokens as
    :func:`dialeval.baselines.glove.tokenize`.
    """
    from spacy.lang.en.stop_words import STOP_WORDS

    from ...backbone.glove import load_glove, tokenize

    glove = load_glove()
    out = np.zeros((len(names), glove.dim), dtype=np.float32)
    covered = np.zeros(len(names), dtype=bool)
    for i, name in enumerate(names):
        words = [t for t in tokenize(name, glove.vocab) if t in glove.vocab]
        if drop_stop_words:
            words = [t for t in words if t not in STOP_WORDS] or words
        if words:
            rows = np.asarray([glove.vocab[t] for t in words])
            out[i] = np.asarray(glove.vectors[rows], dtype=np.float64).mean(axis=0)
            covered[i] = True
    if centre and covered.any():
        out[covered] -= out[covered].mean(axis=0, dtype=np.float64).astype(np.float32)
    return out, covered


def minilm_name_embeddings(names: Sequence[str], *, encoder=None, batch_size: int = 256) -> np.ndarray:
    """Mean-pooled MiniLM embedding of each name ([N, 384] float32) via :class:`dialeval.backbone.Encoder`."""
    if encoder is None:
        from ...backbone import Encoder

        encoder = Encoder(cache_size=0)
    return encoder.embed(list(names), batch_size=batch_size).numpy().astype(np.float32)


def pca_reduce(x: np.ndarray, dim: int) -> np.ndarray:
    """Project onto the top ``dim`` principal components (centred; sign fixed: largest loading positive)."""
    x = np.asarray(x, dtype=np.float64)
    centred = x - x.mean(axis=0, keepdims=True)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    comps = vt[:dim]
    signs = np.sign(comps[np.arange(comps.shape[0]), np.abs(comps).argmax(axis=1)])
    comps = comps * signs[:, None]
    return (centred @ comps.T).astype(np.float32)


def retrofit(
    emb: np.ndarray, covered: np.ndarray, graph: ConceptGraph, *, iterations: int = 10, alpha: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Retrofitting (Faruqui et al. 2015) on the undirected graph: ``q_i <- (alpha q^_i + mean_nbrs q_j) /
    (alpha + 1)`` for covered nodes and ``q_i <- mean_nbrs q_j`` for uncovered ones (``iterations`` Jacobi
    steps). Returns the new vectors and the new coverage (non-zero rows)."""
    import scipy.sparse as sp

    a = graph.csr()
    sym = ((a + a.T) > 0).astype(np.float32).tocsr()
    deg = np.asarray(sym.sum(axis=1)).ravel()
    inv = np.where(deg > 0, 1.0 / np.maximum(deg, 1), 0.0).astype(np.float32)
    w = sp.diags(inv) @ sym
    base = np.asarray(emb, dtype=np.float32) * covered[:, None]
    a_i = np.where(covered, alpha, 0.0).astype(np.float32)[:, None]
    has_nb = (deg > 0)[:, None]
    q = base.copy()
    for _ in range(iterations):
        nb = np.asarray(w @ q, dtype=np.float32)
        q = np.where(has_nb, (a_i * base + nb) / (a_i + 1.0), base)
    return q.astype(np.float32), np.abs(q).sum(axis=1) > 0


def node_embeddings(
    graph: ConceptGraph, kind: str = DEFAULT_EMBEDDING, *, encoder=None
) -> tuple[np.ndarray, dict[str, Any]]:
    """Vectors for every node of ``graph`` by ``kind`` (see :data:`EMBEDDING_KINDS`) and a description."""
    t0 = time.perf_counter()
    names = graph.names
    retro = kind.endswith("-retrofit")
    base = kind[: -len("-retrofit")] if retro else kind
    extra: dict[str, Any] = {}
    if base == "glove":
        emb, covered = glove_name_embeddings(names)
    elif base == "glove-plain":  # measured for comparison: all words, not centred
        emb, covered = glove_name_embeddings(names, centre=False, drop_stop_words=False)
    elif base in ("minilm",) or base.startswith("minilm-pca"):
        emb = minilm_name_embeddings(names, encoder=encoder)
        covered = np.ones(len(names), dtype=bool)
        if base.startswith("minilm-pca"):
            emb = pca_reduce(emb, int(base[len("minilm-pca") :]))
    elif base.startswith("numberbatch:"):
        path = base.split(":", 1)[1]
        emb, covered = read_numberbatch(path, names)
        extra["numberbatch_sha256"] = sha256_file(path)
    else:
        raise ValueError(f"unknown embedding kind {kind!r}; expected one of {EMBEDDING_KINDS}")
    base_coverage = float(covered.mean()) if len(names) else 0.0
    if retro:
        emb, covered = retrofit(emb, covered, graph)
    info = {
        "kind": kind,
        "dim": int(emb.shape[1]),
        "coverage": float(covered.mean()) if len(names) else 0.0,
        "base_coverage": base_coverage,
        "seconds": round(time.perf_counter() - t0, 2),
        **extra,
    }
    return emb.astype(np.float32), info


# == the tables scoring needs ========================================================================================
def _unit_rows(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


class GraphTables:
    """Graph + node embeddings + the queries GRADE features need (alignment, hops, neighbour features).

    ``embeddings`` are kept in memory as float32 copies of the fp16 values that are saved, so a built table and
    its reloaded copy give identical features.
    """

    def __init__(
        self,
        graph: ConceptGraph,
        embeddings: np.ndarray,
        meta: dict[str, Any] | None = None,
        *,
        max_depth: int = DEFAULT_MAX_DEPTH,
        unlimited_hop: int = DEFAULT_UNLIMITED_HOP,
    ) -> None:
        if embeddings.shape[0] != graph.n_nodes:
            raise ValueError(f"{embeddings.shape[0]} embedding rows for {graph.n_nodes} nodes")
        self.graph = graph
        self.embeddings = np.asarray(embeddings, dtype=np.float16).astype(np.float32)
        self._unit = _unit_rows(self.embeddings)
        self._nonzero = np.abs(self.embeddings).sum(axis=1) > 0
        self.meta: dict[str, Any] = dict(meta or {})
        self.max_depth = int(max_depth)
        self.unlimited_hop = int(unlimited_hop)
        self._features: dict[tuple[int, int, int], np.ndarray] = {}

    @property
    def dim(self) -> int:
        return int(self.embeddings.shape[1])

    @property
    def n_nodes(self) -> int:
        return self.graph.n_nodes

    def lookup(self, keyword: str) -> int | None:
        return self.graph.lookup(keyword)

    def hops(self, sources: Sequence[int | None], targets: Sequence[int | None]) -> np.ndarray:
        return self.graph.hops(sources, targets, max_depth=self.max_depth, unlimited_hop=self.unlimited_hop)

    # -- neighbours ------------------------------------------------------------------------------------------------
    def _top(self, node: int, candidates: np.ndarray, n: int) -> np.ndarray:
        candidates = candidates[self._nonzero[candidates]]
        if candidates.size <= n:
            return np.sort(candidates)
        ref = self._unit[node]
        if not self._nonzero[node]:
            ref = _unit_rows(self.embeddings[candidates].mean(axis=0, keepdims=True))[0]
        cos = self._unit[candidates] @ ref
        order = np.lexsort((candidates, -cos))
        return np.sort(candidates[order[:n]])

    def neighbour_ids(self, node: int, n1: int = 10, n2: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Selected 1-hop and 2-hop neighbour ids of ``node`` (sorted), see the module docstring."""
        g = self.graph
        first = np.unique(g.successors(node)).astype(np.int64)
        second = np.unique(g._gather(g.indptr, g.indices, first)).astype(np.int64)
        second = second[second != node]
        return self._top(node, first, n1), self._top(node, second, n2)

    def node_features(self, node: int, n1: int = 10, n2: int = 10) -> np.ndarray:
        """[3, D] float32: concept vector, mean of the selected 1-hop and of the 2-hop neighbours (zeros if none)."""
        key = (int(node), int(n1), int(n2))
        hit = self._features.get(key)
        if hit is None:
            s1, s2 = self.neighbour_ids(node, n1, n2)
            hit = np.zeros((3, self.dim), dtype=np.float32)
            hit[0] = self.embeddings[node]
            if s1.size:
                hit[1] = self.embeddings[s1].mean(axis=0)
            if s2.size:
                hit[2] = self.embeddings[s2].mean(axis=0)
            hit.setflags(write=False)
            self._features[key] = hit
        return hit

    # -- persistence -----------------------------------------------------------------------------------------------
    def save(self, directory: str | os.PathLike) -> dict[str, int]:
        """Write the folder; returns ``{file: bytes}``. Raises if a file exceeds 10 MiB (``MAX_TABLE_FILE_BYTES``)
        unless ``meta["allow_large_files"]`` is true (full ConceptNet builds)."""
        from safetensors.numpy import save_file

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        g = self.graph
        (d / "nodes.txt").write_text("".join(n + "\n" for n in g.names), encoding="utf-8")
        save_file(
            {"indptr": g.indptr, "indices": g.indices, "edge_relation": g.edge_relation},
            str(d / "graph.safetensors"),
        )
        save_file({"embeddings": self.embeddings.astype(np.float16)}, str(d / "embeddings.safetensors"))
        files = ["nodes.txt", "graph.safetensors", "embeddings.safetensors"]
        sizes = {f: (d / f).stat().st_size for f in files}
        meta = {
            **self.meta,
            "format": TABLES_FORMAT,
            "version": TABLES_VERSION,
            "n_nodes": g.n_nodes,
            "n_edges": g.n_edges,
            "relations": g.relations,
            "graph": g.meta,
            "embedding_dim": self.dim,
            "max_depth": self.max_depth,
            "unlimited_hop": self.unlimited_hop,
            "files": {f: {"bytes": sizes[f], "sha256": sha256_file(d / f)} for f in files},
        }
        (d / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        sizes["meta.json"] = (d / "meta.json").stat().st_size
        too_big = {f: b for f, b in sizes.items() if b > MAX_TABLE_FILE_BYTES}
        if too_big and not self.meta.get("allow_large_files"):
            raise ValueError(f"table files over {MAX_TABLE_FILE_BYTES} bytes: {too_big}")
        return sizes

    @classmethod
    def load(cls, directory: str | os.PathLike, *, verify: bool = False, **kwargs) -> "GraphTables":
        """Read a folder written by :meth:`save` (``verify=True`` checks the sha256 of every file)."""
        from safetensors.numpy import load_file

        d = Path(directory)
        meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
        if meta.get("format") != TABLES_FORMAT:
            raise ValueError(f"{d} is not a GRADE graph-tables folder (format={meta.get('format')!r})")
        if meta.get("version") != TABLES_VERSION:
            raise ValueError(f"{d}: tables version {meta.get('version')} (this code reads {TABLES_VERSION})")
        if verify:
            for f, info in meta["files"].items():
                if sha256_file(d / f) != info["sha256"]:
                    raise ValueError(f"{d / f}: sha256 does not match meta.json")
        names = (d / "nodes.txt").read_text(encoding="utf-8").split("\n")[:-1]
        arrays = load_file(str(d / "graph.safetensors"))
        emb = load_file(str(d / "embeddings.safetensors"))["embeddings"]
        graph = ConceptGraph(
            names, arrays["indptr"], arrays["indices"], arrays["edge_relation"], meta.get("relations", ()),
            meta.get("graph"),
        )
        own = {k: v for k, v in meta.items() if k not in ("relations", "graph", "files", "format", "version")}
        kwargs.setdefault("max_depth", meta.get("max_depth", DEFAULT_MAX_DEPTH))
        kwargs.setdefault("unlimited_hop", meta.get("unlimited_hop", DEFAULT_UNLIMITED_HOP))
        return cls(graph, emb, own, **kwargs)

    @classmethod
    def build(
        cls,
        data_dir: str | os.PathLike | None = None,
        *,
        embedding: str = DEFAULT_EMBEDDING,
        conceptnet_csv: str | os.PathLike | None = None,
        reverse_edges: bool = True,
        cache_dir: str | os.PathLike | None = None,
        use_cache: bool = True,
        max_depth: int = DEFAULT_MAX_DEPTH,
        unlimited_hop: int = DEFAULT_UNLIMITED_HOP,
        encoder=None,
    ) -> "GraphTables":
        """Build (or reuse from ``cache_dir``) the tables for ConceptNet-100K of ``data_dir``, or for the
        ConceptNet 5 assertions CSV at ``conceptnet_csv``. The cache key hashes the source files, the settings and
        the tables format; a cached folder is loaded instead of rebuilt."""
        from ...paths import data_file

        if conceptnet_csv is not None:
            sources = [Path(conceptnet_csv)]
            source = f"conceptnet_assertions:{Path(conceptnet_csv).name}"
        else:
            folder = data_file(CN100K_FOLDER, data_dir)
            sources = [folder / f for f in CN100K_FILES if (folder / f).exists()]
            source = CN100K_FOLDER
        hashes = {p.name: sha256_file(p) for p in sources}
        if embedding.startswith("numberbatch:"):
            nb_path = embedding.split(":", 1)[1]
            nb_path = nb_path[: -len("-retrofit")] if nb_path.endswith("-retrofit") else nb_path
            hashes["numberbatch"] = sha256_file(nb_path)
        if embedding.startswith("minilm"):
            from ...backbone import default_encoder_path, weights_fingerprint

            hashes["encoder"] = encoder.fingerprint if encoder is not None else weights_fingerprint(
                default_encoder_path()
            )
        settings = {
            "embedding": embedding, "reverse_edges": bool(reverse_edges), "format": TABLES_VERSION,
            "builder": BUILDER_VERSION,
        }
        key = hashlib.sha256(json.dumps([hashes, settings], sort_keys=True).encode()).hexdigest()[:16]
        kind_tag = embedding.split(":", 1)[0]
        cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        folder_out = cache / f"tables_{source.split(':')[0]}_{kind_tag}_{key}"
        if use_cache and (folder_out / "meta.json").exists():
            return cls.load(folder_out, max_depth=max_depth, unlimited_hop=unlimited_hop)
        t0 = time.perf_counter()
        if conceptnet_csv is not None:
            graph = ConceptGraph.from_conceptnet_csv(conceptnet_csv, reverse_edges=reverse_edges)
        else:
            graph = ConceptGraph.from_cn100k(data_dir, reverse_edges=reverse_edges)
        t_graph = time.perf_counter() - t0
        emb, emb_info = node_embeddings(graph, embedding, encoder=encoder)
        meta = {
            "source": source,
            "source_sha256": hashes,
            "cache_key": key,
            "settings": settings,
            "embedding": emb_info,
            "build_seconds": {"graph": round(t_graph, 2), "embeddings": emb_info["seconds"]},
            "allow_large_files": conceptnet_csv is not None,
        }
        tables = cls(graph, emb, meta, max_depth=max_depth, unlimited_hop=unlimited_hop)
        if use_cache:
            folder_out.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=folder_out.name + ".", dir=folder_out.parent))
            try:
                tables.save(tmp)
                os.chmod(tmp, 0o755)
                for f in tmp.iterdir():
                    os.chmod(f, 0o644)
                if (folder_out / "meta.json").exists():  # built concurrently by another process
                    shutil.rmtree(tmp)
                else:
                    if folder_out.exists():
                        shutil.rmtree(folder_out)
                    os.replace(tmp, folder_out)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        return tables


# == measuring node embeddings =======================================================================================
def edge_auc(emb: np.ndarray, pos: np.ndarray, neg: np.ndarray) -> float:
    """ROC-AUC of cosine similarity separating ``pos`` pairs [P, 2] from ``neg`` pairs [Q, 2] (ties count half;
    a zero vector has cosine 0)."""
    from scipy.stats import rankdata

    unit = _unit_rows(np.asarray(emb, dtype=np.float32))
    sp = np.einsum("ij,ij->i", unit[pos[:, 0]], unit[pos[:, 1]])
    sn = np.einsum("ij,ij->i", unit[neg[:, 0]], unit[neg[:, 1]])
    ranks = rankdata(np.concatenate([sp, sn]))
    n_p, n_n = len(sp), len(sn)
    return float((ranks[:n_p].sum() - n_p * (n_p + 1) / 2) / (n_p * n_n))


def measure_embeddings(
    data_dir: str | os.PathLike | None = None,
    kinds: Sequence[str] = MEASURED_KINDS,
    *,
    seed: int = 0,
    n_random: int = 20_000,
) -> dict[str, Any]:
    """The intrinsic test of the module docstring. Returns ``{kind: {auc_random, auc_shuffled, auc_corrupted,
    coverage, dim, seconds}}`` plus the counts under ``"_setup"``."""
    from ...paths import data_file

    folder = data_file(CN100K_FOLDER, data_dir)
    train, _ = read_cn100k_file(folder / "train.txt")
    held = read_cn100k_file(folder / "valid.txt")[0] + read_cn100k_file(folder / "test.txt")[0]
    corrupted = [t for f in ("dev1.txt", "dev2.txt") for t in read_cn100k_file(folder / f)[1]]
    names = {x for tr in (train, held, corrupted) for _, h, t in tr for x in (h, t)}
    graph = ConceptGraph.from_triples(train, extra_nodes=names)
    idx = graph.index
    train_pairs = {(idx[h], idx[t]) for _, h, t in train}
    pos = np.array(sorted({(idx[h], idx[t]) for _, h, t in held if h != t} - train_pairs), dtype=np.int64)
    rng = np.random.default_rng(seed)
    rand = rng.integers(0, graph.n_nodes, size=(n_random, 2))
    rand = rand[rand[:, 0] != rand[:, 1]]
    true_pairs = train_pairs | {tuple(p) for p in pos.tolist()}
    shuf = np.stack([pos[:, 0], pos[rng.permutation(len(pos)), 1]], axis=1)
    shuf = np.array([p for p in shuf.tolist() if p[0] != p[1] and tuple(p) not in true_pairs], dtype=np.int64)
    corr = np.array(sorted({(idx[h], idx[t]) for _, h, t in corrupted if h != t} - true_pairs), dtype=np.int64)
    out: dict[str, Any] = {
        "_setup": {
            "graph": "train.txt only", "n_nodes": graph.n_nodes, "n_edges": graph.n_edges,
            "n_heldout_pos": len(pos), "n_random": len(rand), "n_shuffled": len(shuf), "n_corrupted": len(corr),
            "seed": seed,
        }
    }
    cache: dict[str, np.ndarray] = {}
    for kind in kinds:
        t0 = time.perf_counter()
        base = kind[: -len("-retrofit")] if kind.endswith("-retrofit") else kind
        if base.startswith("minilm"):  # encode the names once for every MiniLM variant
            if "minilm" not in cache:
                cache["minilm"] = minilm_name_embeddings(graph.names)
            raw = cache["minilm"]
            emb = pca_reduce(raw, int(base[len("minilm-pca") :])) if base.startswith("minilm-pca") else raw
            covered = np.ones(graph.n_nodes, dtype=bool)
            if kind.endswith("-retrofit"):
                emb, covered = retrofit(emb, covered, graph)
            info = {"dim": emb.shape[1], "coverage": float(covered.mean())}
        else:
            emb, info = node_embeddings(graph, kind)
        emb16 = emb.astype(np.float16).astype(np.float32)
        out[kind] = {
            "dim": int(info["dim"]),
            "auc_random": round(edge_auc(emb16, pos, rand), 4),
            "auc_shuffled": round(edge_auc(emb16, pos, shuf), 4),
            "auc_corrupted": round(edge_auc(emb16, pos, corr), 4),
            "coverage": round(float((np.abs(emb16).sum(axis=1) > 0).mean()), 5),
            "seconds": round(time.perf_counter() - t0, 1),
        }
    return out


def read_cn100k_file(path: Path) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """(true triples, corrupted triples) of one ConceptNet-100K file."""
    pos, neg = [], []
    with _open_text(path) as fh:
        for line in fh:
            cols = line.rstrip("\n").split("\t")
            if len(cols) < 3:
                continue
            triple = (cols[0].strip(), " ".join(cols[1].split()), " ".join(cols[2].split()))
            (neg if len(cols) == 4 and float(cols[3]) == 0.0 else pos).append(triple)
    return pos, neg


# == command line ====================================================================================================
def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m dialeval.metrics.grade.graph", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build (or load from cache) the graph tables and report their sizes")
    b.add_argument("--data-dir")
    b.add_argument("--embedding", default=DEFAULT_EMBEDDING)
    b.add_argument("--conceptnet-csv")
    b.add_argument("--directed", action="store_true", help="do not add reverse edges")
    b.add_argument("--cache-dir")
    b.add_argument("--out", help="also save the tables to this folder")
    m = sub.add_parser("measure", help="intrinsic comparison of node-embedding substitutes")
    m.add_argument("--data-dir")
    m.add_argument("--kinds", nargs="+", default=None)
    m.add_argument("--json")
    args = parser.parse_args(argv)
    if args.cmd == "build":
        t0 = time.perf_counter()
        tables = GraphTables.build(
            args.data_dir, embedding=args.embedding, conceptnet_csv=args.conceptnet_csv,
            reverse_edges=not args.directed, cache_dir=args.cache_dir,
        )
        print(f"tables: {tables.n_nodes} nodes, {tables.graph.n_edges} edges, dim {tables.dim} "
              f"({time.perf_counter() - t0:.1f} s)")
        if args.out:
            for f, n in tables.save(args.out).items():
                print(f"  {f}: {n / 1e6:.2f} MB")
        return 0
    kinds = args.kinds or MEASURED_KINDS
    res = measure_embeddings(args.data_dir, kinds)
    print(json.dumps(res["_setup"]))
    print(f"{'kind':28s} {'dim':>4s} {'AUC rand':>9s} {'AUC shuf':>9s} {'AUC corr':>9s} {'coverage':>9s} {'s':>6s}")
    for k in kinds:
        r = res[k]
        print(f"{k:28s} {r['dim']:4d} {r['auc_random']:9.4f} {r['auc_shuffled']:9.4f} {r['auc_corrupted']:9.4f} "
              f"{r['coverage']:9.5f} {r['seconds']:6.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
