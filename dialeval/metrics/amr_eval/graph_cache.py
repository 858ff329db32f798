"""A per-utterance on-disk cache in front of any graph source (parsing is the slow part of the AMR metric).

Format: one JSON-lines file per source signature, ``<cache_dir>/<source.name>-<sha256(signature)>.jsonl``, each
line ``{"text_sha256": ..., "graph": <SimpleGraph JSON object>}``. JSON lines rather than sqlite: entries are
only ever appended and read back whole, which a text file does crash-safely with no database engine, stays
readable with ``head``/``grep``, and works on file systems where sqlite's locking does not (network mounts).
Writes append whole lines under a file lock and are flushed and fsynced per :meth:`CachedGraphs.graphs` call; a
line torn by a crash (or any line that does not decode) is skipped on reading and counted in
``skipped_lines``, and the next append starts on a fresh line, so the torn entry is simply computed again.

Memory: at most ``memory_entries`` graphs are held (the most recently used; the file's last ones when it is read),
so scoring 10^6 rows does not hold 10^6 graphs. A graph that fell out of memory but is in the file is computed
and appended again when asked for (the file's later line wins when it is read back).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

from filelock import FileLock

from dialeval.errors import InputError

from .graph_sources import GraphSource
from .graphs import SimpleGraph

__all__ = ["DEFAULT_MEMORY_ENTRIES", "CachedGraphs", "default_graph_cache_dir"]

#: graphs held in memory at most (a graph of a chat message is a few kB as Python objects)
DEFAULT_MEMORY_ENTRIES = 50_000


def default_graph_cache_dir() -> Path:
    """``$DIALEVAL_CACHE_DIR/amr_graphs``, else ``$XDG_CACHE_HOME/dialeval/amr_graphs``, else
    ``~/.cache/dialeval/amr_graphs`` (:func:`dialeval.paths.cache_dir`)."""
    from dialeval.paths import cache_dir

    return cache_dir("amr_graphs")


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachedGraphs(GraphSource):
    """``source`` with its graphs cached per utterance under ``cache_dir`` (default
    :func:`default_graph_cache_dir`), keyed by ``source.signature()`` and the sha256 of the exact text.

    ``hits`` / ``misses`` count input items over the object's life: a hit was in the cache before the call, a
    miss was not (its graph is computed once per call, however often the text repeats). ``name`` and
    :meth:`signature` are the source's: caching does not change the graphs.
    """

    def __init__(self, source: GraphSource, cache_dir: str | os.PathLike | None = None, *,
                 memory_entries: int = DEFAULT_MEMORY_ENTRIES) -> None:
        if memory_entries < 1:
            raise ValueError(f"memory_entries must be >= 1, got {memory_entries}")
        self.source = source
        self.memory_entries = memory_entries
        self.name = source.name
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_graph_cache_dir()
        self.hits = 0
        self.misses = 0
        self.skipped_lines = 0
        self._signature: str | None = None
        self._entries: OrderedDict[str, SimpleGraph] | None = None

    def signature(self) -> str:
        if self._signature is None:
            self._signature = self.source.signature()
        return self._signature

    @property
    def path(self) -> Path:
        """The JSON-lines file of this source's signature."""
        return self.cache_dir / f"{self.name}-{_sha256(self.signature())}.jsonl"

    @property
    def hit_rate(self) -> float | None:
        """``hits / (hits + misses)``; None before any item was asked for."""
        total = self.hits + self.misses
        return self.hits / total if total else None

    def _load(self) -> OrderedDict[str, SimpleGraph]:
        if self._entries is None:
            self._entries = OrderedDict()
            if self.path.is_file():
                with open(self.path, encoding="utf-8", errors="replace") as fh:
                    for line in fh:
                        try:
                            row = json.loads(line)
                            self._remember(row["text_sha256"], SimpleGraph.from_json(row["graph"]))
                        except (json.JSONDecodeError, KeyError, TypeError, InputError):
                            self.skipped_lines += 1
        return self._entries

    def _remember(self, key: str, graph: SimpleGraph) -> None:
        self._entries[key] = graph
        self._entries.move_to_end(key)
        while len(self._entries) > self.memory_entries:
            self._entries.popitem(last=False)

    def _append(self, rows: list[tuple[str, SimpleGraph]]) -> None:
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        lines = "".join(f'{{"text_sha256":"{key}","graph":{graph.to_json()}}}\n' for key, graph in rows)
        with FileLock(str(self.path) + ".lock"):
            with open(self.path, "a+b") as fh:
                fh.seek(0, os.SEEK_END)
                if fh.tell():
                    fh.seek(-1, os.SEEK_END)
                    if fh.read(1) != b"\n":  # a torn last line: start ours on a fresh line
                        lines = "\n" + lines
                fh.seek(0, os.SEEK_END)
                fh.write(lines.encode("utf-8"))
                fh.flush()
                os.fsync(fh.fileno())

    def graphs(self, texts: Sequence[str]) -> list[SimpleGraph]:
        entries = self._load()
        keys = [_sha256(t) for t in texts]
        found: dict[str, SimpleGraph] = {}  # this call's graphs, whatever memory_entries lets the cache keep
        todo: dict[str, str] = {}
        for key, text in zip(keys, texts):
            if key in todo:  # asked for again in this call: still a miss, computed once
                self.misses += 1
            elif key in entries:
                self.hits += 1
                found[key] = entries[key]
                entries.move_to_end(key)
            else:
                self.misses += 1
                todo[key] = text
        if todo:
            computed = self.source.graphs(list(todo.values()))
            if len(computed) != len(todo):
                raise RuntimeError(f"graph source {self.signature()} returned {len(computed)} graphs "
                                   f"for {len(todo)} texts")
            new = list(zip(todo, computed))
            self._append(new)
            for key, graph in new:
                found[key] = graph
                self._remember(key, graph)
        return [found[k] for k in keys]
