"""DynaEval's training data: DailyDialog dialogues and their perturbations.

DynaEval learns to rank an original dialogue above a perturbed copy of it. The paper trained on EmpatheticDialogues
and ConvAI2 (the released checkpoint: EmpatheticDialogues, utterance shuffling); neither corpus is available here, so
DailyDialog (train / validation / test, dialogues with 4 to 30 utterances) stands in. Two perturbations, as in the
paper:

* **UR** (utterance replacement): one utterance, chosen at random, is replaced by an utterance of another dialogue
  of the same split (never by the same text).
* **SS** (speaker-level utterance shuffling): the utterances of one speaker are shuffled among that speaker's
  positions; the other speaker's utterances stay where they are. Only shuffles that change the text sequence count.

Two harder ones of ours (issue 19: with MiniLM, the mean cosine of adjacent utterances alone tells UR and SS copies
from originals 0.91 / 0.82 of the time, so those pairs teach little that a cosine does not know):

* **HR** (hard replacement): one utterance replaced by one of the ``k`` utterances most similar to it by the
  encoder's cosine (:func:`nearest_texts`), drawn at random among those that do not occur in the dialogue;
* **SW** (swap): two neighbouring utterances with different texts swap places.

Each dialogue yields up to ``perturbations`` distinct perturbed copies, split evenly over the strategies in use
(the earlier ones get the remainder; the paper's UR and SS by default); a dialogue whose SS variants run out (e.g.
4 utterances: one alternative per speaker) simply has fewer pairs. Each pair
is stored in a random order with ``label`` = the position (0 or 1) of the original, so both orders occur, as in the
original's pair files. DailyDialog has no speaker labels: speakers alternate by position (A, B, A, ...), in the
original and in every perturbed copy. A second training corpus (``--corpus``, the CCC chit-chat corpus) gives
dialogues of the same form; each corpus is perturbed among its own dialogues and the pair sets are then merged
(:func:`merge_pair_sets`).

Everything is deterministic given the seed: each dialogue draws from its own generator seeded with
``(seed, split, dialogue index)``.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...perturb import swap_adjacent

MIN_UTTERANCES = 4
MAX_UTTERANCES = 30
# Stored pair files index this tuple: new strategies go at the end.
STRATEGIES = ("ur", "ss", "hr", "sw")
PAPER_STRATEGIES = ("ur", "ss")
# Draws per wanted perturbation before giving up on finding a new distinct one.
_ATTEMPTS = 8


@dataclass(frozen=True)
class DialoguePair:
    """An original dialogue and one perturbation of it, as indices into a text table.

    ``a`` and ``b`` are the two dialogues (lists of text ids, speakers alternating by position); ``label`` is the
    index (0: ``a``, 1: ``b``) of the original; ``kind`` is ``"ur"`` or ``"ss"``.
    """

    dialogue_id: str
    kind: str
    a: tuple[int, ...]
    b: tuple[int, ...]
    label: int

    @property
    def original(self) -> tuple[int, ...]:
        return self.a if self.label == 0 else self.b

    @property
    def perturbed(self) -> tuple[int, ...]:
        return self.b if self.label == 0 else self.a


def alternating_speakers(n: int) -> list[int]:
    return [i % 2 for i in range(n)]


def filter_dialogues(dialogues: Sequence[Sequence[str]], min_utterances: int = MIN_UTTERANCES,
                     max_utterances: int = MAX_UTTERANCES) -> list[int]:
    """Indices of the dialogues with ``min_utterances`` to ``max_utterances`` utterances."""
    return [i for i, d in enumerate(dialogues) if min_utterances <= len(d) <= max_utterances]


def dialogue_windows(lengths: Sequence[int], min_utterances: int = MIN_UTTERANCES,
                     max_utterances: int = MAX_UTTERANCES) -> list[tuple[int, int, int]]:
    """``(dialogue index, start, end)`` of the training dialogues a corpus of long chats gives: a dialogue of
    ``min_utterances`` to ``max_utterances`` whole, a longer one cut into consecutive windows of ``max_utterances``
    (a last window shorter than ``min_utterances`` left out), a shorter one nothing. A window of a two-speaker
    dialogue still alternates speakers by position."""
    out = []
    for i, n in enumerate(lengths):
        if n > max_utterances:
            out += [(i, start, min(start + max_utterances, n)) for start in range(0, n, max_utterances)
                    if min(start + max_utterances, n) - start >= min_utterances]
        elif n >= min_utterances:
            out.append((i, 0, n))
    return out


def _split_code(split: str) -> int:
    return zlib.crc32(split.encode())


def dialogue_rng(seed: int, split: str, index: int) -> np.random.Generator:
    return np.random.default_rng([seed, _split_code(split), index])


# -- perturbations ----------------------------------------------------------------------------------------------------


def replace_utterance(dialogue: Sequence[int], pool: Sequence[int], owner: Sequence[int], me: int,
                      texts: Sequence[str], rng: np.random.Generator) -> tuple[int, ...] | None:
    """UR: ``dialogue`` with one random position replaced by a pool utterance from another dialogue and with a
    different text. ``pool[i]`` is a text id and ``owner[i]`` the dialogue it comes from. None if no draw worked."""
    position = int(rng.integers(len(dialogue)))
    for _ in range(_ATTEMPTS):
        k = int(rng.integers(len(pool)))
        if owner[k] != me and texts[pool[k]] != texts[dialogue[position]]:
            out = list(dialogue)
            out[position] = pool[k]
            return tuple(out)
    return None


def replace_with_similar(dialogue: Sequence[int], neighbours: np.ndarray, texts: Sequence[str],
                         rng: np.random.Generator) -> tuple[int, ...] | None:
    """HR: ``dialogue`` with one random position replaced by one of that utterance's ``neighbours`` (text ids, most
    similar first) whose text is not in the dialogue. None if every neighbour's text is."""
    position = int(rng.integers(len(dialogue)))
    present = {texts[t] for t in dialogue}
    candidates = [int(t) for t in neighbours[dialogue[position]] if texts[t] not in present]
    if not candidates:
        return None
    out = list(dialogue)
    out[position] = candidates[int(rng.integers(len(candidates)))]
    return tuple(out)


def swap_neighbours(dialogue: Sequence[int], texts: Sequence[str], rng: np.random.Generator) -> tuple[int, ...] | None:
    """SW: two neighbouring utterances with different texts swapped, at a random place (the sanity benchmark's
    :func:`~dialeval.perturb.swap_adjacent`, on text ids). None if there is none."""
    out = swap_adjacent(dialogue, rng, key=texts.__getitem__)
    return None if out is None else tuple(out)


def nearest_texts(vectors: np.ndarray, k: int, chunk: int = 2048) -> np.ndarray:
    """For each row of ``vectors`` ``[n, dim]``, the ``k`` other rows with the highest cosine, most similar first
    (``[n, k]`` int64; fewer columns when ``n <= k``). Computed in chunks of rows, ties by row index."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    n, k = len(unit), min(k, len(unit) - 1)
    out = np.zeros((n, max(k, 0)), dtype=np.int64)
    if k <= 0:
        return out
    for start in range(0, n, chunk):
        sims = unit[start:start + chunk] @ unit.T
        rows = np.arange(start, min(start + chunk, n))
        sims[rows - start, rows] = -np.inf  # not itself
        top = np.argpartition(-sims, k, axis=1)[:, :k]
        order = np.lexsort((top, -np.take_along_axis(sims, top, axis=1)), axis=1)
        out[rows] = np.take_along_axis(top, order, axis=1)
    return out


def shuffle_speaker(dialogue: Sequence[int], speakers: Sequence[int], texts: Sequence[str],
                    rng: np.random.Generator) -> tuple[int, ...] | None:
    """SS: the utterances of one randomly chosen speaker permuted among that speaker's positions. None if the chosen
    speaker's utterances cannot change order (fewer than two distinct texts) or no draw changed the text."""
    candidates = []
    for s in sorted(set(speakers)):
        positions = [i for i, sp in enumerate(speakers) if sp == s]
        if len({texts[dialogue[i]] for i in positions}) >= 2:
            candidates.append(positions)
    if not candidates:
        return None
    positions = candidates[int(rng.integers(len(candidates)))]
    original_text = [texts[t] for t in dialogue]
    for _ in range(_ATTEMPTS):
        order = rng.permutation(len(positions))
        out = list(dialogue)
        for dst, src in zip(positions, order):
            out[dst] = dialogue[positions[src]]
        if [texts[t] for t in out] != original_text:
            return tuple(out)
    return None


def check_strategies(strategies: Sequence[str]) -> None:
    unknown = sorted(set(strategies) - set(STRATEGIES))
    if unknown or not strategies or len(set(strategies)) != len(strategies):
        raise ValueError(f"perturbation strategies must be distinct names among {', '.join(STRATEGIES)}; "
                         f"got {list(strategies)}")


def perturb_dialogue(dialogue: Sequence[int], *, pool: Sequence[int], owner: Sequence[int], me: int,
                     texts: Sequence[str], n: int, rng: np.random.Generator,
                     strategies: Sequence[str] = PAPER_STRATEGIES,
                     neighbours: np.ndarray | None = None) -> list[tuple[str, tuple[int, ...]]]:
    """Up to ``n`` distinct perturbations ``(kind, dialogue)`` of ``dialogue``, split evenly over ``strategies``
    (earlier strategies get the remainder). Distinct means: different text sequences, all different from the
    original. ``neighbours`` (text id -> similar text ids, :func:`nearest_texts`) is needed for ``"hr"``."""
    check_strategies(strategies)
    if "hr" in strategies and neighbours is None:
        raise ValueError("the 'hr' strategy needs the neighbours of every text")
    speakers = alternating_speakers(len(dialogue))
    seen = {tuple(texts[t] for t in dialogue)}
    out: list[tuple[str, tuple[int, ...]]] = []
    for k, kind in enumerate(strategies):
        wanted = n // len(strategies) + (1 if k < n % len(strategies) else 0)
        made, tries = 0, 0
        while made < wanted and tries < wanted * _ATTEMPTS:
            tries += 1
            if kind == "ur":
                new = replace_utterance(dialogue, pool, owner, me, texts, rng)
            elif kind == "hr":
                new = replace_with_similar(dialogue, neighbours, texts, rng)
            elif kind == "sw":
                new = swap_neighbours(dialogue, texts, rng)
            else:
                new = shuffle_speaker(dialogue, speakers, texts, rng)
            if new is None:
                if kind in ("ss", "sw"):
                    break  # nothing to shuffle or swap in this dialogue
                continue
            key = tuple(texts[t] for t in new)
            if key in seen:
                continue
            seen.add(key)
            out.append((kind, new))
            made += 1
    return out


# -- pairs for a split ------------------------------------------------------------------------------------------------


def pack_strings(strings: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Strings as one UTF-8 byte array and ``len + 1`` offsets (arrays ``np.savez`` stores without pickling)."""
    encoded = [s.encode("utf-8") for s in strings]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def unpack_strings(data: np.ndarray, offsets: np.ndarray) -> list[str]:
    raw = data.tobytes()
    return [raw[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(len(offsets) - 1)]


@dataclass
class PairSet:
    """The pairs of one split with the text table they index.

    Saved as one compressed ``.npz`` of integer arrays (no pickle): the text table and the dialogue ids as UTF-8
    bytes with offsets, each original dialogue once (its text ids), and per pair the index of its original, its
    kind, its label and the perturbed copy's text ids (a perturbation keeps the dialogue's length). At the default
    budget (185k training pairs) that is 3.3 MB, where one JSON line per pair was 42 MB.
    """

    texts: list[str]
    pairs: list[DialoguePair]

    def save(self, path: str | Path) -> None:
        originals: dict[tuple[str, tuple[int, ...]], int] = {}
        pair_dialogue = [originals.setdefault((p.dialogue_id, p.original), len(originals)) for p in self.pairs]
        dialogues = list(originals)
        for p in self.pairs:
            if len(p.perturbed) != len(p.original):
                raise ValueError(f"pair of {p.dialogue_id!r}: the perturbed copy has {len(p.perturbed)} utterances, "
                                 f"the original {len(p.original)}")
        lengths = [len(d) for _, d in dialogues]
        offsets = np.zeros(len(dialogues) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        text_bytes, text_offsets = pack_strings(self.texts)
        id_bytes, id_offsets = pack_strings([ident for ident, _ in dialogues])
        with open(path, "wb") as fh:
            np.savez_compressed(
                fh, text_bytes=text_bytes, text_offsets=text_offsets, id_bytes=id_bytes, id_offsets=id_offsets,
                dialogue_offsets=offsets,
                dialogue_tokens=np.fromiter((t for _, d in dialogues for t in d), dtype=np.int32, count=offsets[-1]),
                pair_dialogue=np.asarray(pair_dialogue, dtype=np.int32).reshape(-1),
                pair_kind=np.asarray([STRATEGIES.index(p.kind) for p in self.pairs], dtype=np.uint8).reshape(-1),
                pair_label=np.asarray([p.label for p in self.pairs], dtype=np.uint8).reshape(-1),
                perturbed_tokens=np.fromiter((t for p in self.pairs for t in p.perturbed), dtype=np.int32),
            )

    @classmethod
    def load(cls, path: str | Path) -> PairSet:
        with np.load(path, allow_pickle=False) as z:
            arrays = {name: z[name] for name in z.files}
        texts = unpack_strings(arrays["text_bytes"], arrays["text_offsets"])
        ids = unpack_strings(arrays["id_bytes"], arrays["id_offsets"])
        offsets, tokens = arrays["dialogue_offsets"].tolist(), arrays["dialogue_tokens"].tolist()
        dialogues = [tuple(tokens[offsets[i]:offsets[i + 1]]) for i in range(len(ids))]
        perturbed = arrays["perturbed_tokens"].tolist()
        pairs, at = [], 0
        for d, kind, label in zip(arrays["pair_dialogue"].tolist(), arrays["pair_kind"].tolist(),
                                  arrays["pair_label"].tolist()):
            original = dialogues[d]
            new = tuple(perturbed[at:at + len(original)])
            at += len(original)
            a, b = (original, new) if label == 0 else (new, original)
            pairs.append(DialoguePair(ids[d], STRATEGIES[kind], a, b, label))
        if at != len(perturbed):
            raise ValueError(f"{path}: {len(perturbed)} perturbed utterance ids, the pairs use {at}")
        return cls(texts, pairs)


def unique_texts(dialogues: Sequence[Sequence[str]]) -> list[str]:
    """The distinct utterance texts in order of first appearance: the text ids of :func:`build_pairs`."""
    return list(dict.fromkeys(u for d in dialogues for u in d))


def build_pairs(dialogues: Sequence[Sequence[str]], ids: Sequence[str], *, split: str, seed: int,
                perturbations: int, strategies: Sequence[str] = PAPER_STRATEGIES,
                neighbours: np.ndarray | None = None) -> PairSet:
    """Pairs (original, perturbation) for every dialogue of ``dialogues`` (already filtered / subsampled).

    The UR pool is every utterance of these dialogues. Text ids index ``PairSet.texts``, the unique utterance texts
    in order of first appearance (:func:`unique_texts`); ``neighbours`` (for ``"hr"``) is indexed by them.
    """
    if len(dialogues) != len(ids):
        raise ValueError(f"{len(dialogues)} dialogues but {len(ids)} ids")
    if perturbations < 1:
        raise ValueError(f"perturbations must be >= 1, got {perturbations}")
    texts = unique_texts(dialogues)
    table = {t: i for i, t in enumerate(texts)}
    encoded = [tuple(table[u] for u in d) for d in dialogues]
    if neighbours is not None and len(neighbours) != len(texts):
        raise ValueError(f"neighbours has {len(neighbours)} rows for {len(texts)} texts")
    pool = [t for d in encoded for t in d]
    owner = [i for i, d in enumerate(encoded) for _ in d]
    pairs = []
    for i, (dialogue, ident) in enumerate(zip(encoded, ids)):
        rng = dialogue_rng(seed, split, i)
        for kind, new in perturb_dialogue(dialogue, pool=pool, owner=owner, me=i, texts=texts, n=perturbations,
                                          rng=rng, strategies=strategies, neighbours=neighbours):
            label = int(rng.integers(2))
            a, b = (dialogue, new) if label == 0 else (new, dialogue)
            pairs.append(DialoguePair(ident, kind, a, b, label))
    return PairSet(texts, pairs)


def merge_pair_sets(sets: Sequence[PairSet]) -> PairSet:
    """The pairs of ``sets`` in order, over one text table: the distinct texts in order of first appearance (a text
    two sets share gets one id). One set comes back as it is."""
    if len(sets) == 1:
        return sets[0]
    texts = unique_texts([s.texts for s in sets])
    table = {t: i for i, t in enumerate(texts)}
    pairs = []
    for s in sets:
        ids = [table[t] for t in s.texts]
        pairs += [DialoguePair(p.dialogue_id, p.kind, tuple(ids[t] for t in p.a), tuple(ids[t] for t in p.b), p.label)
                  for p in s.pairs]
    return PairSet(texts, pairs)


def subsample(indices: Sequence[int], limit: int | None, *, seed: int, split: str) -> list[int]:
    """``limit`` of ``indices`` chosen by a seeded permutation (kept in corpus order); all if ``limit`` is None."""
    if limit is None or limit >= len(indices):
        return list(indices)
    if limit < 1:
        raise ValueError(f"dialogue limit must be >= 1, got {limit}")
    chosen = np.random.default_rng([seed, _split_code(split)]).permutation(len(indices))[:limit]
    return [indices[i] for i in sorted(chosen.tolist())]
