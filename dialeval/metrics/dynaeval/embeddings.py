"""On-disk cache of utterance embeddings for training: the frozen encoder runs once per unique text.

A cache folder holds ``texts.json`` (the unique utterance texts, in row order), ``vectors.npy`` (float32
``[len(texts), dim]``) and ``meta.json`` (encoder, its weights hash, token limit, dimension). Training then only runs
the small graph model on rows of this matrix.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from ...backbone import Encoder

TEXTS_FILE, VECTORS_FILE, META_FILE = "texts.json", "vectors.npy", "meta.json"


class EmbeddingCache:
    """Text -> row of an embedding matrix, backed by a folder."""

    def __init__(self, texts: list[str], vectors: np.ndarray, meta: dict) -> None:
        if vectors.shape[0] != len(texts):
            raise ValueError(f"{len(texts)} texts but {vectors.shape[0]} vectors")
        self.texts = texts
        self.vectors = vectors
        self.meta = meta
        self.row = {t: i for i, t in enumerate(texts)}

    @staticmethod
    def meta_for(encoder: Encoder) -> dict:
        return {"encoder": encoder.name_or_path, "encoder_sha256": encoder.fingerprint,
                "max_tokens": encoder.max_length, "dim": encoder.hidden_size, "pooling": "mean"}

    @classmethod
    def build(cls, folder: str | Path, texts: Sequence[str], encoder: Encoder, *, batch_size: int = 128,
              progress_bar: bool | None = True) -> tuple["EmbeddingCache", dict]:
        """Load the cache in ``folder`` and encode the texts it lacks (rewriting it); returns the cache and stats.

        A cache made by another encoder (weights hash, token limit) is an error, not silently mixed.
        """
        folder = Path(folder)
        meta = cls.meta_for(encoder)
        known_texts: list[str] = []
        known = np.zeros((0, meta["dim"]), dtype=np.float32)
        if (folder / META_FILE).exists():
            saved = json.loads((folder / META_FILE).read_text())
            differs = {k: (saved.get(k), v) for k, v in meta.items() if k != "encoder" and saved.get(k) != v}
            if differs:
                raise ValueError(f"embedding cache {folder} was made with other encoder settings {differs}; "
                                 "use a new output directory")
            known_texts = json.loads((folder / TEXTS_FILE).read_text())
            known = np.load(folder / VECTORS_FILE)
        have = set(known_texts)
        missing = list(dict.fromkeys(t for t in texts if t not in have))
        start = time.perf_counter()
        if missing:
            new = encoder.embed(missing, batch_size=batch_size, progress_bar=progress_bar).numpy().astype(np.float32)
            known_texts = known_texts + missing
            known = np.concatenate([known, new]) if known.size else new
            folder.mkdir(parents=True, exist_ok=True)
            np.save(folder / VECTORS_FILE, known)
            (folder / TEXTS_FILE).write_text(json.dumps(known_texts, ensure_ascii=False))
            (folder / META_FILE).write_text(json.dumps(meta, indent=1))
        seconds = time.perf_counter() - start
        stats = {"cached_texts": len(known_texts) - len(missing), "encoded_texts": len(missing),
                 "encode_seconds": round(seconds, 1),
                 "texts_per_second": round(len(missing) / seconds, 1) if missing else None}
        return cls(known_texts, known, meta), stats

    def rows(self, texts: Sequence[str]) -> np.ndarray:
        return np.fromiter((self.row[t] for t in texts), dtype=np.int64, count=len(texts))

    def tensor(self) -> torch.Tensor:
        return torch.from_numpy(self.vectors)
