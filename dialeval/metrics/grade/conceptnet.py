"""Readers of GRADE's commonsense sources: ConceptNet-100K, ConceptNet 5 assertions and Numberbatch vectors.

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
  embeddings, when the user has them (``embedding="numberbatch:<path>"``, see :mod:`.node_embeddings`).
  Not available here.
"""

from __future__ import annotations

import gzip
import io
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "CN100K_FILES",
    "CN100K_FOLDER",
    "conceptnet_term",
    "read_cn100k",
    "read_cn100k_file",
    "read_conceptnet_assertions",
    "read_numberbatch",
]

CN100K_FOLDER = "conceptnet_cn100k"
CN100K_FILES = ("train.txt", "valid.txt", "test.txt", "dev1.txt", "dev2.txt")


def _open_text(path: str | os.PathLike):
    path = str(path)
    if path.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="\n")
    return open(path, encoding="utf-8", newline="\n")

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
