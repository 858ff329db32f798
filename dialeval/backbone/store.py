"""A persistent text -> sentence-embedding table for training the heads on frozen-encoder embeddings.

A store folder holds ``meta.json`` (encoder, weights hash, token limit, truncation side, dimension) and append-only
chunks ``chunk_NNNNN.npy`` (float32 ``[n, dim]``) + ``chunk_NNNNN.json`` (their texts). New texts are encoded in
chunks of ``chunk_size`` and each chunk is written as soon as it is done, so an interrupted run resumes after the
last finished chunk. A chunk whose text list is missing (interrupted while writing) is ignored and redone.
Concurrent runs may share a store: :meth:`EmbeddingStore.ensure` holds a file lock (``.lock``) while it writes and
first reads the chunks other processes finished since, so no chunk number is written twice.

Embeddings come from :class:`dialeval.backbone.Encoder` (masked mean pooling, batch-invariant), the same code the
scorers use, so a training embedding equals the scoring embedding of the same text bit for bit.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from filelock import FileLock

from .encoder import Encoder

META_FILE = "meta.json"


class EmbeddingStore:
    """Embeddings of texts encoded with one encoder and truncation side, backed by a folder."""

    def __init__(self, folder: str | os.PathLike, encoder: Encoder, *, side: str = "right",
                 chunk_size: int = 4096, batch_size: int = 64) -> None:
        if side not in ("left", "right"):
            raise ValueError(f"side must be 'left' or 'right', got {side!r}")
        self.folder = Path(folder)
        self.encoder = encoder
        self.side = side
        self.chunk_size = int(chunk_size)
        self.batch_size = int(batch_size)
        self.meta = {"encoder": encoder.display_name, "encoder_sha256": encoder.fingerprint,
                     "max_length": encoder.max_length, "side": side, "dim": encoder.hidden_size, "pooling": "mean"}
        self.folder.mkdir(parents=True, exist_ok=True)
        meta_path = self.folder / META_FILE
        if meta_path.exists():
            saved = json.loads(meta_path.read_text())
            differs = {k: (saved.get(k), v) for k, v in self.meta.items() if k != "encoder" and saved.get(k) != v}
            if differs:
                raise ValueError(f"embedding store {self.folder} was made with other encoder settings {differs} "
                                 "(saved, now); use a new output directory")
        else:
            meta_path.write_text(json.dumps(self.meta, indent=1))
        self._texts: list[str] = []
        self._chunks: list[np.ndarray] = []
        self._n_chunks = 0
        self.index: dict[str, int] = {}
        self._load()

    def _chunk_paths(self, n: int) -> tuple[Path, Path]:
        return self.folder / f"chunk_{n:05d}.npy", self.folder / f"chunk_{n:05d}.json"

    def _load(self) -> None:
        while True:
            vec_path, txt_path = self._chunk_paths(self._n_chunks)
            if not (vec_path.exists() and txt_path.exists()):
                break
            texts = json.loads(txt_path.read_text())
            vectors = np.load(vec_path)
            if vectors.shape != (len(texts), self.meta["dim"]):
                raise ValueError(f"{vec_path} has shape {vectors.shape}, expected ({len(texts)}, {self.meta['dim']})")
            self._add(texts, vectors)
            self._n_chunks += 1

    def _add(self, texts: list[str], vectors: np.ndarray) -> None:
        for t in texts:
            self.index[t] = len(self._texts)
            self._texts.append(t)
        self._chunks.append(vectors.astype(np.float32, copy=False))
        self._matrix = None

    def __len__(self) -> int:
        return len(self._texts)

    def __contains__(self, text: str) -> bool:
        return text in self.index

    def ensure(self, texts: Sequence[str], *, progress_bar: bool | None = None, desc: str = "") -> dict:
        """Encode (and write) the texts not stored yet; returns counts and seconds."""
        with FileLock(str(self.folder / ".lock")):
            self._load()  # chunks written by other processes since this store was opened
            return self._encode_missing(texts, progress_bar=progress_bar, desc=desc)

    def _encode_missing(self, texts: Sequence[str], *, progress_bar: bool | None, desc: str) -> dict:
        missing = list(dict.fromkeys(t for t in texts if t not in self.index))
        start = time.perf_counter()
        for begin in range(0, len(missing), self.chunk_size):
            chunk = missing[begin:begin + self.chunk_size]
            vectors = self.encoder.embed(chunk, batch_size=self.batch_size, side=self.side,
                                         progress_bar=progress_bar).numpy().astype(np.float32)
            vec_path, txt_path = self._chunk_paths(self._n_chunks)
            np.save(vec_path, vectors)
            tmp = txt_path.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(chunk, ensure_ascii=False))
            tmp.replace(txt_path)  # the text list is written last: its presence marks a finished chunk
            self._add(chunk, vectors)
            self._n_chunks += 1
            if progress_bar is not False:
                done = begin + len(chunk)
                rate = done / max(time.perf_counter() - start, 1e-9)
                print(f"encoded {done}/{len(missing)} {desc} texts ({rate:.0f}/s)", flush=True)
        seconds = time.perf_counter() - start
        return {"requested": len(set(texts)), "encoded": len(missing), "seconds": round(seconds, 1),
                "texts_per_second": round(len(missing) / seconds, 1) if missing and seconds > 0 else None}

    @property
    def matrix(self) -> np.ndarray:
        """All stored embeddings, float32 ``[len(self), dim]`` (row ``self.index[text]``)."""
        if getattr(self, "_matrix", None) is None:
            self._matrix = (np.concatenate(self._chunks) if self._chunks
                            else np.zeros((0, self.meta["dim"]), dtype=np.float32))
        return self._matrix

    def rows(self, texts: Sequence[str]) -> np.ndarray:
        """Row of each text (all must have been stored with :meth:`ensure`)."""
        try:
            return np.fromiter((self.index[t] for t in texts), dtype=np.int64, count=len(texts))
        except KeyError as err:
            raise KeyError(f"text not in embedding store {self.folder}: {err.args[0][:80]!r}") from None

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        return self.matrix[self.rows(texts)]
