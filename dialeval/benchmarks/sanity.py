"""Sanity checks: pairs whose better member nobody disputes (``sanity_turn``, ``sanity_dialogue``).

A metric that scores a reply above the same reply with its words shuffled, or a dialogue above the same dialogue
in a random order, has learnt a shortcut. Each row holds an original and its perturbed copies; ``dialeval
benchmark`` reports, per perturbation, how often the original scores higher (ties count one half), with a bootstrap
CI over the rows. Built from the data directory (no download), seeded, the same on every machine.

``sanity_turn`` (splits ``validation`` and ``test``, from DailyDialog's split of that name): 300 (context, gold
reply) pairs, one per dialogue, from dialogues drawn at random; the reply is a turn after the first with at least
:data:`MIN_WORDS` words that repeats no context turn. The context is every turn before it (speakers unnamed, they
alternate). Perturbations of the gold reply, in this order (:data:`TURN_KINDS`):

* ``random``: the turn of another dialogue of the split, drawn uniformly;
* ``similar``: the turn of another dialogue most similar to the gold reply by BM25 (English stop words left out);
* ``shuffled``: the gold's words in a random order;
* ``dropped``: the gold without 40% of its words (order kept);
* ``context_copy``: the last context turn, repeated as the reply;
* ``truncated``: the first half of the gold's words.

``sanity_dialogue`` (``validation``: DailyDialog validation; ``test``: DailyDialog test and FED): 200 DailyDialog
dialogues with 4 to 30 turns drawn at random, and every FED dialogue (124 of its 125 qualify). Perturbations
(:data:`DIALOGUE_KINDS`; speakers stay with their positions, texts move):

* ``shuffled``: the turns in a random order;
* ``swapped``: two neighbouring turns swapped;
* ``replaced_similar``: one turn (not the first) replaced by the turn of another dialogue of the same source most
  similar to it by BM25;
* ``repeated``: every turn of the second turn's speaker replaced by that speaker's first turn.

A source item is used only when every perturbation exists for it (its row always holds all of them, in the order
above); draws are seeded per item, so the rows do not depend on how many items are asked for. ``id`` is
``sanity_<level>/<split>/<source>/<dialogue id>[/<turn index>]``.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import datasets
import numpy as np

from ..perturb import (
    SimilarTexts,
    drop_words,
    repeat_speaker,
    same_text,
    shuffle_turns,
    shuffle_words,
    swap_adjacent,
    truncate_words,
)
from .common import DialevalBuilder, require_file
from .dailydialog import DD_SPLITS, iter_dailydialog
from .fed import SOURCE as FED_SOURCE
from .fed import load_rows as load_fed_rows

TURN_KINDS = ("random", "similar", "shuffled", "dropped", "context_copy", "truncated")
DIALOGUE_KINDS = ("shuffled", "swapped", "replaced_similar", "repeated")
TURN_ITEMS = 300
DIALOGUE_ITEMS = 200
MIN_WORDS = 5
MIN_TURNS, MAX_TURNS = 4, 30
SEED = 20261123

_TURN = datasets.List({"speaker": datasets.Value("string"), "text": datasets.Value("string")})
TURN_SANITY_FEATURES = datasets.Features({
    "id": datasets.Value("string"),
    "source": datasets.Value("string"),
    "context": _TURN,
    "response": datasets.Value("string"),
    "kinds": datasets.List(datasets.Value("string")),
    "perturbed": datasets.List(datasets.Value("string")),
})
DIALOGUE_SANITY_FEATURES = datasets.Features({
    "id": datasets.Value("string"),
    "source": datasets.Value("string"),
    "dialogue": _TURN,
    "kinds": datasets.List(datasets.Value("string")),
    "perturbed": datasets.List(_TURN),
})


def _rng(split: str, source: str, index: int) -> np.random.Generator:
    return np.random.default_rng([SEED, zlib.crc32(split.encode()), zlib.crc32(source.encode()), index])


def _order(n: int, split: str, source: str) -> list[int]:
    """A seeded random order of ``n`` items: items are taken in this order until enough are found."""
    return np.random.default_rng([SEED, zlib.crc32(split.encode()), zlib.crc32(source.encode())]).permutation(
        n).tolist()


def _turns(texts, speakers) -> list[dict]:
    return [{"speaker": s, "text": t} for s, t in zip(speakers, texts)]


def _reply_positions(turns: list[str]) -> list[int]:
    return [t for t in range(1, len(turns)) if len(turns[t].split()) >= MIN_WORDS
            and not any(same_text(turns[t], c) for c in turns[:t])]


def _random_turn(pool: list[str], owners: np.ndarray, me: int, exclude: list[str], rng) -> str | None:
    for _ in range(32):
        k = int(rng.integers(len(pool)))
        if owners[k] != me and not any(same_text(pool[k], e) for e in exclude):
            return pool[k]
    return None


def turn_rows(dialogues: list[list[str]], ids: list[str], split: str, limit: int = TURN_ITEMS) -> list[dict]:
    """The ``sanity_turn`` rows of one DailyDialog split (``dialogues`` as turn texts), in corpus order."""
    pool = [t for d in dialogues for t in d]
    owners = np.asarray([i for i, d in enumerate(dialogues) for _ in d])
    similar = SimilarTexts(pool, owners)
    chosen: dict[int, dict] = {}
    for i in _order(len(dialogues), split, "dailydialog"):
        if len(chosen) == limit:
            break
        turns = dialogues[i]
        positions = _reply_positions(turns)
        if not positions:
            continue
        rng = _rng(split, "dailydialog", i)
        t = positions[int(rng.integers(len(positions)))]
        gold, context = turns[t], turns[:t]
        made = {
            "random": _random_turn(pool, owners, i, [gold, *context], rng),
            "similar": similar.most_similar(gold, owner=i, exclude=context),
            "shuffled": shuffle_words(gold, rng),
            "dropped": drop_words(gold, rng),
            "context_copy": context[-1],
            "truncated": truncate_words(gold),
        }
        if any(v is None for v in made.values()):
            continue
        chosen[i] = {"id": f"sanity_turn/{split}/dailydialog/{ids[i]}/{t}", "source": "dailydialog",
                     "context": _turns(context, [None] * len(context)), "response": gold,
                     "kinds": list(TURN_KINDS), "perturbed": [made[k] for k in TURN_KINDS]}
    return [chosen[i] for i in sorted(chosen)]


def dialogue_rows(dialogues: list[list[str]], speakers: list[list[str | None]], ids: list[str], *, split: str,
                  source: str, limit: int | None) -> list[dict]:
    """The ``sanity_dialogue`` rows of one source: ``limit`` dialogues (None: all) with every perturbation."""
    pool = [t for d in dialogues for t in d]
    owners = np.asarray([i for i, d in enumerate(dialogues) for _ in d])
    similar = SimilarTexts(pool, owners)
    chosen: dict[int, dict] = {}
    for i in _order(len(dialogues), split, source):
        if limit is not None and len(chosen) == limit:
            break
        turns, names = dialogues[i], speakers[i]
        if len(turns) < 2:
            continue
        rng = _rng(split, source, i)
        position = 1 + int(rng.integers(len(turns) - 1))
        replacement = similar.most_similar(turns[position], owner=i, exclude=turns)
        replaced = None
        if replacement is not None:
            replaced = list(turns)
            replaced[position] = replacement
        ids_by_name = {n: k for k, n in enumerate(dict.fromkeys(names))}
        speaker_ids = [j % 2 for j in range(len(turns))] if None in names else [ids_by_name[n] for n in names]
        made = {
            "shuffled": shuffle_turns(turns, rng),
            "swapped": swap_adjacent(turns, rng),
            "replaced_similar": replaced,
            "repeated": repeat_speaker(turns, speaker_ids),
        }
        if any(v is None for v in made.values()):
            continue
        chosen[i] = {"id": f"sanity_dialogue/{split}/{source}/{ids[i]}", "source": source,
                     "dialogue": _turns(turns, names), "kinds": list(DIALOGUE_KINDS),
                     "perturbed": [_turns(made[k], names) for k in DIALOGUE_KINDS]}
    return [chosen[i] for i in sorted(chosen)]


def _dailydialog(path: Path, *, min_turns: int = 1, max_turns: int | None = None) -> tuple[list, list]:
    dialogues, ids = [], []
    for row in iter_dailydialog(path):
        n = len(row["utterances"])
        if n >= min_turns and (max_turns is None or n <= max_turns):
            dialogues.append(row["utterances"])
            ids.append(row["dialogue_id"])
    return dialogues, ids


class TurnSanity(DialevalBuilder):
    """Gold replies against perturbed copies (config ``sanity_turn``); splits validation and test."""

    CONFIGS = (("sanity_turn", "DailyDialog gold replies against six perturbations"),)
    SPLITS = ("validation", "test")
    FEATURES = TURN_SANITY_FEATURES
    LICENSE = "CC BY-NC-SA 4.0 (DailyDialog)"

    @classmethod
    def source_files(cls, config_name: str, root: Path) -> list[Path]:
        return [require_file(root, DD_SPLITS[s]) for s in cls.SPLITS]

    def rows(self, split: str) -> list[dict]:
        dialogues, ids = _dailydialog(self.root / DD_SPLITS[split])
        return turn_rows(dialogues, ids, split)


class DialogueSanity(DialevalBuilder):
    """Dialogues against perturbed copies (config ``sanity_dialogue``); validation: DailyDialog, test: DailyDialog
    and FED."""

    CONFIGS = (("sanity_dialogue", "DailyDialog and FED dialogues against four perturbations"),)
    SPLITS = ("validation", "test")
    FEATURES = DIALOGUE_SANITY_FEATURES
    LICENSE = "CC BY-NC-SA 4.0 (DailyDialog); FED: see its source"

    @classmethod
    def source_files(cls, config_name: str, root: Path) -> list[Path]:
        return [require_file(root, DD_SPLITS[s]) for s in cls.SPLITS] + [require_file(root, FED_SOURCE)]

    def rows(self, split: str) -> list[dict]:
        dialogues, ids = _dailydialog(self.root / DD_SPLITS[split], min_turns=MIN_TURNS, max_turns=MAX_TURNS)
        rows = dialogue_rows(dialogues, [[None] * len(d) for d in dialogues], ids, split=split,
                             source="dailydialog", limit=DIALOGUE_ITEMS)
        if split == "test":
            fed = load_fed_rows(self.root, "dialogue")
            rows += dialogue_rows([[t["text"] for t in r["context"]] for r in fed],
                                  [[t["speaker"] for t in r["context"]] for r in fed],
                                  [r["id"].split("/")[-1] for r in fed], split=split, source="fed", limit=None)
        return rows
