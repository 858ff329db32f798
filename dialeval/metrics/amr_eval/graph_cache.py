"""A per-utterance on-disk cache in front of any graph source (parsing is the slow part of the AMR metric).

Format: one JSON-lines file per source signature, ``<cache_dir>/<source.name>-<sha256(signature)>.jsonl``, each
line ``{"text_sha256": ..., "graph": <SimpleGraph JSON object>}``. JSON lines rather than sqlite: entries are
only ever appended, which a text file does crash-safely with no database engine, stays readable with
``head``/``grep``, and works on file systems where sqlite's locking does not (network mounts). Writes append whole
lines under a file lock and are flushed and fsynced per :meth:`CachedGraphs.graphs` call; a line torn by a crash
(or any line that does not decode) is skipped and counted in ``skipped_lines``, and the next append starts on a
fresh line, so the torn entry is simply computed again.

Memory: opening the file reads only its keys, into an index of where each entry's line starts (about 150 bytes
per entry, the file's later line winning); graphs are decoded from the file when first asked for. At most
``memory_entries`` decoded graphs are held (the most recently used), so scoring 10^6 rows does not hold 10^6
graphs, and a graph that fell out of memory is read back from its line, never computed twice.
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

_LINE_PREFIX = b'{"text_sha256":"'  # how every line this module writes starts, the key's 64 hex digits next


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
        self._offsets: dict[bytes, int] = {}  # key digest -> where its line starts in the file
        self._reader = None  # a binary handle on the file, opened on the first read-back

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
        """The decoded graphs held in memory; the first call also indexes the file's lines by key."""
        if self._entries is None:
            self._entries = OrderedDict()
            self._offsets = {}
            if self.path.is_file():
                with open(self.path, "rb") as fh:
                    offset = 0
                    for line in fh:
                        key = self._line_key(line)
                        if key is None:
                            self.skipped_lines += 1
                        else:
                            self._offsets[key] = offset
                        offset += len(line)
        return self._entries

    @staticmethod
    def _line_key(line: bytes) -> bytes | None:
        """The key of a complete cache line (as the 32 digest bytes); None for a torn or foreign line."""
        body = line.rstrip(b"\r\n")
        if body.startswith(_LINE_PREFIX) and body.endswith(b"}") and body[len(_LINE_PREFIX) + 64:][:1] == b'"':
            try:
                return bytes.fromhex(body[len(_LINE_PREFIX):len(_LINE_PREFIX) + 64].decode("ascii"))
            except (UnicodeDecodeError, ValueError):
                return None
        try:  # written by another tool: any JSON spacing
            return bytes.fromhex(json.loads(body)["text_sha256"])
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError):
            return None

    def _read_back(self, key: str) -> SimpleGraph | None:
        """The graph of ``key`` from its line in the file, or None when it has none (or it does not decode)."""
        offset = self._offsets.get(bytes.fromhex(key))
        if offset is None:
            return None
        if self._reader is None:
            self._reader = open(self.path, "rb")
        self._reader.seek(offset)
        try:
            row = json.loads(self._reader.readline())
            if str(row["text_sha256"]).lower() != key:
                raise KeyError("text_sha256")
            return SimpleGraph.from_json(row["graph"])
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, InputError):
            self.skipped_lines += 1
            del self._offsets[bytes.fromhex(key)]
            return None

    def close(self) -> None:
        """Closes the file handle used to read graphs back (reopened when needed)."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def __del__(self) -> None:
        reader = getattr(self, "_reader", None)
        if reader is not None:
            reader.close()

    def _remember(self, key: str, graph: SimpleGraph) -> None:
        self._entries[key] = graph
        self._entries.move_to_end(key)
        while len(self._entries) > self.memory_entries:
            self._entries.popitem(last=False)

    def _append(self, rows: list[tuple[str, SimpleGraph]]) -> None:
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        lines = [f'{_LINE_PREFIX.decode()}{key}","graph":{graph.to_json()}}}\n'.encode("utf-8")
                 for key, graph in rows]
        with FileLock(str(self.path) + ".lock"):
            with open(self.path, "a+b") as fh:
                end = fh.seek(0, os.SEEK_END)
                if end:
                    fh.seek(-1, os.SEEK_END)
                    if fh.read(1) != b"\n":  # a torn last line: start ours on a fresh line
                        fh.seek(0, os.SEEK_END)
                        fh.write(b"\n")
                        end += 1
                fh.seek(0, os.SEEK_END)
                fh.write(b"".join(lines))
                fh.flush()
                os.fsync(fh.fileno())
        for (key, _), line in zip(rows, lines):
            self._offsets[bytes.fromhex(key)] = end
            end += len(line)

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
            elif (graph := self._read_back(key)) is not None:
                self.hits += 1
                found[key] = graph
                self._remember(key, graph)
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
