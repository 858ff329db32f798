"""The item sets the ensemble is calibrated, fitted and measured on, built from the data directory.

**Human-rated sets** (:data:`HELD_OUT`, the leave-one-out cells, and :func:`training_sets`, what the combiner is
fitted on). Each names its human target, the set's overall quality aspect:

============================  =====================  ================  ==========================================
set                           benchmark (split)      target            training data
============================  =====================  ================  ==========================================
``grade_eval/convai2``        grade_eval (test)      ``coherence``     the same items (its 4 systems)
``grade_eval/dailydialog``    grade_eval (test)      ``coherence``     the same items (2 systems)
``grade_eval/empathetic...``  grade_eval (test)      ``coherence``     the same items (2 systems)
``usr_topicalchat``           usr_topicalchat        ``Overall``       the same items
``usr_personachat``           usr_personachat        ``Overall``       the same items
``fed_turn``                  fed_turn               ``Overall``       the same items
``fed_dialogue``              fed_dialogue           ``Overall``       none (dialogue level: no other such set)
``rade_<set>/test``           rade_<set> (test)      ``overall``       the set's ``validation`` split (default) or
                                                                       its ``train`` split
``dailydialog_pp/test``       dailydialog_pp (test)  ``human_reply``   the same items
============================  =====================  ================  ==========================================

``dailydialog_pp/test`` is a discrimination set (:func:`discrimination_set`; issue 49, so that GRADE's and USR's
corpus families weigh less): DailyDialog++'s first :data:`DISCRIMINATION_CONTEXTS` test contexts in the file's
order, each with its first human reply (target 1), its first adversarial negative and its first random negative
(target 0), and its second human reply as the reference. The adversarial negatives share the context's words and
do not answer it, which no human-rated set here isolates. 300 of the 1,142 contexts keep its size that of the other
sets (900 replies).

A cell's ``group`` says what leaving it out removes from the fit: its own training data, and for ``fed_dialogue``
FED's turn-level items too (the same conversations' systems, rated in the same study). The RADE sets train on
their validation split by default: the RADE member was trained on their train split, so its scores there are
in-sample and would inflate its weight; their test split is the held-out cell. ``in_domain`` marks the members
trained on a cell's own set (RADE on the RADE cells; RADE, whose first stage read DailyDialog++'s human replies, and
the AMR evaluator, trained on DailyDialog++, on ``dailydialog_pp/test``).

**Calibration sets** (no human score): :func:`turn_calibration` -- DailyDialog validation, one real reply per
dialogue (a random turn after the first, its context every turn before it) and as many random replies (a random
turn of another dialogue, same contexts); :func:`reference_calibration` -- for members that read a reference
(RADE), DailyDialog++ dev (DailyDialog contexts with five human replies each): reference = the first positive reply,
candidates = the second positive and the first random negative; :func:`dialogue_calibration` -- DailyDialog
validation dialogues of at least 3 turns and each one's turns in a random order (speakers stay with positions).
Draws are seeded; the same arguments give the same items on every machine.

**The sanity check set** (:func:`sanity_check_set`, no human score): ``sanity_turn``'s ``validation`` split (built
from DailyDialog validation, :mod:`dialeval.benchmarks.sanity`), each row's gold reply followed by its perturbed
copies, kinds ``gold`` and the perturbation's name. Combiners are checked on it (:mod:`.checks`); its ``test``
split, which the metric cards report, is never read here.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ...errors import InputError
from ...perturb import same_text, shuffle_turns
from ...schema import Dialogue, ScoringItem, normalize_dialogues, normalize_items

__all__ = ["DISCRIMINATION_CONTEXTS", "HELD_OUT", "RADE_SETS", "SANITY_SPLIT", "HumanSet", "ItemSet",
           "dialogue_calibration", "discrimination_set", "load_human_set",
           "reference_calibration", "sanity_check_set", "training_sets", "turn_calibration"]

RADE_SETS = ("rade_chitchat", "rade_emotion", "rade_persona")
GRADE_CORPORA = ("convai2", "dailydialog", "empatheticdialogues")
#: the split of ``sanity_turn`` the combiners are checked on (never its test split)
SANITY_SPLIT = "validation"


@dataclass(frozen=True)
class HumanSet:
    """One human-rated set: where its items come from, its target aspect and level, and its leave-out group."""

    key: str
    benchmark: str
    split: str
    aspect: str
    level: Literal["turn", "dialogue"]
    group: str
    #: GRADE's corpus: only the rows whose subset starts with ``<corpus>/``
    subset_prefix: str | None = None
    #: members trained on this set's own training split
    in_domain: tuple[str, ...] = ()


def _grade(corpus: str) -> HumanSet:
    return HumanSet(f"grade_eval/{corpus}", "grade_eval", "test", "coherence", "turn", f"grade_eval/{corpus}",
                    subset_prefix=f"{corpus}/")


HELD_OUT: tuple[HumanSet, ...] = (
    *(_grade(c) for c in GRADE_CORPORA),
    HumanSet("usr_topicalchat", "usr_topicalchat", "test", "Overall", "turn", "usr_topicalchat"),
    HumanSet("usr_personachat", "usr_personachat", "test", "Overall", "turn", "usr_personachat"),
    HumanSet("fed_turn", "fed_turn", "test", "Overall", "turn", "fed"),
    HumanSet("fed_dialogue", "fed_dialogue", "test", "Overall", "dialogue", "fed"),
    *(HumanSet(f"{name}/test", name, "test", "overall", "turn", name, in_domain=("rade",)) for name in RADE_SETS),
    HumanSet("dailydialog_pp/test", "dailydialog_pp", "test", "human_reply", "turn", "dailydialog_pp",
             in_domain=("rade", "amr_eval")),
)
#: how many DailyDialog++ test contexts ``dailydialog_pp/test`` reads (module docstring)
DISCRIMINATION_CONTEXTS = 300

RadeSplit = Literal["validation", "train"]


def training_sets(rade_split: RadeSplit = "validation") -> tuple[HumanSet, ...]:
    """The turn-level human sets the combiner is fitted on (the module docstring's table)."""
    if rade_split not in ("validation", "train"):
        raise InputError(f"rade_split must be validation or train, got {rade_split!r}")
    own = tuple(s for s in HELD_OUT if s.level == "turn" and s.benchmark not in RADE_SETS)
    rade = tuple(HumanSet(f"{name}/{rade_split}", name, rade_split, "overall", "turn", name, in_domain=("rade",))
                 for name in RADE_SETS)
    return own + rade


@dataclass(frozen=True, eq=False)
class ItemSet:
    """Items to score: ``items`` (turn level, :class:`ScoringItem`) or ``dialogues`` (dialogue level), their ids,
    the human target (NaN where an item has no numeric rating; None for a calibration set) and a content hash that
    changes with any text of the set."""

    key: str
    level: Literal["turn", "dialogue"]
    ids: tuple[str, ...]
    items: tuple[ScoringItem, ...] = ()
    dialogues: tuple[Dialogue, ...] = ()
    human: np.ndarray | None = None
    #: ``positive`` / ``negative`` per item of a calibration set, ``gold`` or the perturbation's name per item of
    #: the sanity check set (empty for a human set)
    kinds: tuple[str, ...] = ()
    spec: HumanSet | None = None
    content: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        n = len(self.items) if self.level == "turn" else len(self.dialogues)
        if len(self.ids) != n:
            raise InputError(f"set {self.key}: {len(self.ids)} ids for {n} items")
        if self.human is not None and len(self.human) != n:
            raise InputError(f"set {self.key}: {len(self.human)} human scores for {n} items")
        if self.kinds and len(self.kinds) != n:
            raise InputError(f"set {self.key}: {len(self.kinds)} kinds for {n} items")
        object.__setattr__(self, "content", _content_hash(self))

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def has_references(self) -> bool:
        return self.level == "turn" and bool(self.items) and all(it.references for it in self.items)


def _content_hash(s: ItemSet) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([s.key, s.level, list(s.ids)]).encode())
    for it in s.items:
        h.update(json.dumps([[(t.speaker, t.text) for t in it.context], it.response, list(it.references)]).encode())
    for d in s.dialogues:
        h.update(json.dumps([(t.speaker, t.text) for t in d.turns]).encode())
    return h.hexdigest()[:12]


def _turn_items(contexts: Sequence, responses: Sequence, references: Sequence | None, where: str) -> tuple:
    try:
        items = normalize_items(contexts, responses, references)
    except InputError as err:
        raise InputError(f"{where}: {err}") from None
    return tuple(items)


def load_human_set(spec: HumanSet, data_dir: str | os.PathLike | None = None) -> ItemSet:
    """The rows of ``spec`` as an :class:`ItemSet` (every row kept, in the benchmark's order; an item without a
    numeric rating of the target aspect has NaN as its human score, which the fit and the correlations leave out
    and count)."""
    from ...benchmarks import benchmark_info, load_benchmark

    info = benchmark_info(spec.benchmark)
    if info.kind == "discrimination":
        return discrimination_set(spec, data_dir)
    if spec.aspect not in info.aspects:
        raise InputError(f"set {spec.key}: {spec.benchmark} has no aspect {spec.aspect!r}")
    ds = load_benchmark(spec.benchmark, split=spec.split, data_dir=data_dir)
    rows = [r for r in ds if spec.subset_prefix is None or r["subset"].startswith(spec.subset_prefix)]
    if not rows:
        raise InputError(f"set {spec.key}: no rows of {spec.benchmark} ({spec.split})"
                         + (f" with a subset starting {spec.subset_prefix!r}" if spec.subset_prefix else ""))
    a = list(info.aspects).index(spec.aspect)
    human = np.array([np.nan if r["human"][a] is None else r["human"][a] for r in rows], dtype=np.float64)
    ids = tuple(r["id"] for r in rows)
    contexts = [[{"speaker": t["speaker"], "text": t["text"]} for t in r["context"]] for r in rows]
    if spec.level == "dialogue":
        try:
            dialogues = tuple(normalize_dialogues(contexts, min_turns=2))
        except InputError as err:
            raise InputError(f"set {spec.key}: {err}") from None
        return ItemSet(spec.key, "dialogue", ids, dialogues=dialogues, human=human, spec=spec)
    references = [r["references"] for r in rows] if info.has_references else None
    items = _turn_items(contexts, [r["response"] for r in rows], references, f"set {spec.key}")
    return ItemSet(spec.key, "turn", ids, items=items, human=human, spec=spec)


def discrimination_set(spec: HumanSet, data_dir: str | os.PathLike | None = None, *,
                       contexts: int = DISCRIMINATION_CONTEXTS) -> ItemSet:
    """DailyDialog++ as a rated set: per context a human reply (1) and two negatives (0), the second human reply as
    reference (module docstring)."""
    from ...benchmarks import load_benchmark

    ds = load_benchmark(spec.benchmark, split=spec.split, data_dir=data_dir)
    if contexts > len(ds):
        raise InputError(f"set {spec.key}: {contexts} contexts asked for, {spec.benchmark} ({spec.split}) has "
                         f"{len(ds)}")
    ctx, responses, references, ids, human = [], [], [], [], []
    for r in ds.select(range(contexts)):
        for column, target in (("positive_responses", 1.0), ("adversarial_negative_responses", 0.0),
                               ("random_negative_responses", 0.0)):
            ctx.append(r["context"])
            responses.append(r[column][0])
            references.append([r["positive_responses"][1]])
            ids.append(f"{spec.benchmark}/{spec.split}/{r['id']}/{column}/0")
            human.append(target)
    items = _turn_items(ctx, responses, references, f"set {spec.key}")
    return ItemSet(spec.key, "turn", tuple(ids), items=items, human=np.asarray(human), spec=spec)


def _dailydialog(split: str, data_dir) -> list[tuple[str, list[str]]]:
    from ...benchmarks import load_benchmark

    ds = load_benchmark("dailydialog", split=split, data_dir=data_dir)
    return [(r["dialogue_id"], list(r["utterances"])) for r in ds]


def _pick(dialogues: list, n: int, rng: np.random.Generator, what: str) -> list[int]:
    if n > len(dialogues):
        raise InputError(f"{what}: {n} dialogues asked for, the split has {len(dialogues)} that qualify")
    return sorted(rng.choice(len(dialogues), size=n, replace=False).tolist())


def turn_calibration(data_dir: str | os.PathLike | None = None, *, dialogues: int = 500, seed: int = 0) -> ItemSet:
    """DailyDialog validation: ``dialogues`` real replies and as many random replies (module docstring)."""
    rng = np.random.default_rng(seed)
    pool = [(d, u) for d, u in _dailydialog("validation", data_dir) if len(u) >= 2]
    chosen = _pick(pool, dialogues, rng, "turn calibration")
    contexts, responses, ids, kinds = [], [], [], []
    negatives = []
    for i in chosen:
        name, turns = pool[i]
        t = int(rng.integers(1, len(turns)))
        contexts.append(turns[:t])
        responses.append(turns[t])
        ids.append(f"dailydialog/validation/{name}/{t}/positive")
        kinds.append("positive")
        while True:  # a turn of another dialogue that is not the real reply's text
            j = int(rng.integers(len(pool)))
            other = pool[j][1]
            k = int(rng.integers(len(other)))
            if j != i and not same_text(other[k], turns[t]):
                break
        negatives.append((turns[:t], other[k], f"dailydialog/validation/{name}/{t}/random:{pool[j][0]}/{k}"))
    for context, reply, ident in negatives:
        contexts.append(context)
        responses.append(reply)
        ids.append(ident)
        kinds.append("negative")
    items = _turn_items(contexts, responses, None, "turn calibration")
    return ItemSet(f"calibration/turn/dailydialog_validation/n{dialogues}/seed{seed}", "turn", tuple(ids),
                   items=items, kinds=tuple(kinds))


def reference_calibration(data_dir: str | os.PathLike | None = None, *, contexts: int = 500) -> ItemSet:
    """DailyDialog++ dev, its first ``contexts`` contexts: the second positive and the first random negative, each
    with the first positive as reference (module docstring)."""
    from ...benchmarks import load_benchmark

    ds = load_benchmark("dailydialog_pp", split="validation", data_dir=data_dir)
    if contexts > len(ds):
        raise InputError(f"reference calibration: {contexts} contexts asked for, DailyDialog++ dev has {len(ds)}")
    ctx, responses, references, ids, kinds = [], [], [], [], []
    for kind, column, index in (("positive", "positive_responses", 1), ("negative", "random_negative_responses", 0)):
        for r in ds.select(range(contexts)):
            ctx.append(r["context"])
            responses.append(r[column][index])
            references.append([r["positive_responses"][0]])
            ids.append(f"dailydialog_pp/validation/{r['id']}/{column}/{index}")
            kinds.append(kind)
    items = _turn_items(ctx, responses, references, "reference calibration")
    return ItemSet(f"calibration/turn/dailydialog_pp_dev/n{contexts}", "turn", tuple(ids), items=items,
                   kinds=tuple(kinds))


def dialogue_calibration(data_dir: str | os.PathLike | None = None, *, dialogues: int = 100,
                         seed: int = 0) -> ItemSet:
    """DailyDialog validation: ``dialogues`` dialogues of at least 3 turns and each one shuffled (module
    docstring)."""
    rng = np.random.default_rng(seed)
    pool = [(d, u) for d, u in _dailydialog("validation", data_dir) if len(u) >= 3 and len(set(u)) >= 2]
    chosen = _pick(pool, dialogues, rng, "dialogue calibration")
    real, shuffled = [], []
    for i in chosen:
        name, turns = pool[i]
        mixed = shuffle_turns(turns, rng)
        if mixed is None:
            raise InputError(f"dialogue calibration: dialogue {name} cannot be shuffled into another order")
        real.append((turns, f"dailydialog/validation/{name}", "positive"))
        shuffled.append((mixed, f"dailydialog/validation/{name}/shuffled", "negative"))
    rows = real + shuffled
    try:
        normalized = tuple(normalize_dialogues([t for t, _, _ in rows], min_turns=2))
    except InputError as err:
        raise InputError(f"dialogue calibration: {err}") from None
    return ItemSet(f"calibration/dialogue/dailydialog_validation/n{dialogues}/seed{seed}", "dialogue",
                   tuple(i for _, i, _ in rows), dialogues=normalized, kinds=tuple(k for _, _, k in rows))


def sanity_check_set(data_dir: str | os.PathLike | None = None) -> ItemSet:
    """``sanity_turn`` (:data:`SANITY_SPLIT`): per row its gold reply, then each perturbed copy, in the benchmark's
    order (module docstring)."""
    from ...benchmarks import load_benchmark

    ds = load_benchmark("sanity_turn", split=SANITY_SPLIT, data_dir=data_dir)
    contexts, responses, ids, kinds = [], [], [], []
    for row in ds:
        context = [{"speaker": t["speaker"], "text": t["text"]} for t in row["context"]]
        for kind, reply in (("gold", row["response"]), *zip(row["kinds"], row["perturbed"])):
            contexts.append(context)
            responses.append(reply)
            ids.append(f"{row['id']}/{kind}")
            kinds.append(kind)
    items = _turn_items(contexts, responses, None, f"sanity_turn ({SANITY_SPLIT})")
    return ItemSet(f"checks/sanity_turn/{SANITY_SPLIT}", "turn", tuple(ids), items=items, kinds=tuple(kinds))
