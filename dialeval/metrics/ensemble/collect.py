"""Every member's raw scores of every item set it is asked for, through the member score cache (:mod:`.cache`).

:func:`collect_scores` loads each member once (:func:`~.members.load_members`, encoders shared), reads what the cache
holds and scores the rest set by set, writing each (member, set) to the cache as soon as it is done: a stopped run
loses at most the set in progress, and the same command goes on from there. ``recompute=True`` scores everything
again and overwrites the cache. What each member cost (seconds, items) is kept for the report, from the cache when
the scores came from there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from .cache import MemberScoreCache
from .members import identity, load_members, member_dialogue_scores, member_turn_scores
from .roster import MemberSpec
from .sets import ItemSet

__all__ = ["Job", "MemberRun", "ScoreTables", "collect_scores"]


@dataclass(frozen=True)
class Job:
    """One item set and the members that score it."""

    item_set: ItemSet
    members: tuple[str, ...]


@dataclass
class MemberRun:
    """A member as the collection saw it: its spec, signature, identity and cost per set."""

    spec: MemberSpec
    signature: str
    identity: dict[str, str]
    seconds: dict[str, float] = field(default_factory=dict)
    items: dict[str, int] = field(default_factory=dict)
    cached: dict[str, bool] = field(default_factory=dict)
    levels: dict[str, str] = field(default_factory=dict)

    def items_per_second(self, level: str = "turn") -> float | None:
        """Items (or dialogues) per second over every set of ``level`` it scored, when each was scored (cached
        sets count with the seconds they took then); None when there is none."""
        keys = [k for k, v in self.levels.items() if v == level]
        seconds, items = sum(self.seconds[k] for k in keys), sum(self.items[k] for k in keys)
        return items / seconds if seconds > 0 else None


@dataclass
class ScoreTables:
    """``scores[set key][member]``: the raw scores, in the set's item order; ``sets[key]``: the item set;
    ``members[name]``: the member's :class:`MemberRun`."""

    scores: dict[str, dict[str, np.ndarray]]
    sets: dict[str, ItemSet]
    members: dict[str, MemberRun]

    def raw(self, set_key: str, member: str) -> np.ndarray:
        try:
            return self.scores[set_key][member]
        except KeyError:
            raise KeyError(f"no scores of member {member!r} on set {set_key!r}") from None


def collect_scores(specs: Sequence[MemberSpec], jobs: Sequence[Job], cache: MemberScoreCache, *,
                   device: str | torch.device | None = None, batch_size: int = 32, recompute: bool = False,
                   progress_bar: bool | None = None, extra_options: Mapping[str, Mapping] | None = None,
                   echo: Callable[[str], None] = lambda line: None) -> ScoreTables:
    """Scores of every job's members on its set (see the module docstring); ``echo`` gets one line per (member,
    set)."""
    by_name = {s.name: s for s in specs}
    unknown = sorted({m for job in jobs for m in job.members} - set(by_name))
    if unknown:
        raise KeyError(f"jobs name members that are not given: {', '.join(unknown)}")
    scorers = load_members(specs, device=device, extra_options=extra_options)
    runs = {name: MemberRun(by_name[name], scorer.signature, identity(scorer)) for name, scorer in scorers.items()}
    tables: dict[str, dict[str, np.ndarray]] = {}
    sets: dict[str, ItemSet] = {}
    for job in jobs:
        item_set = job.item_set
        sets[item_set.key] = item_set
        row = tables.setdefault(item_set.key, {})
        for name in job.members:
            run, scorer = runs[name], scorers[name]
            found = None if recompute else cache.get(name, run.signature, item_set)
            if found is not None:
                scores, seconds = found.scores, found.seconds
            else:
                start = time.perf_counter()
                if item_set.level == "turn":
                    scores, _ = member_turn_scores(run.spec, scorer, item_set.items, batch_size=batch_size,
                                                   progress_bar=progress_bar)
                else:
                    scores, _ = member_dialogue_scores(run.spec, scorer, item_set.dialogues, batch_size=batch_size,
                                                       progress_bar=progress_bar)
                seconds = time.perf_counter() - start
                cache.put(name, run.signature, item_set, scores, seconds)
            row[name] = scores
            run.seconds[item_set.key] = seconds
            run.items[item_set.key] = len(item_set)
            run.levels[item_set.key] = item_set.level
            run.cached[item_set.key] = found is not None
            rate = f"{len(item_set) / seconds:.1f} items/s" if seconds > 0 else "-"
            echo(f"{name} on {item_set.key} ({len(item_set)} {item_set.level}s): {seconds:.1f} s, {rate}"
                 + (" (cached)" if found is not None else ""))
    return ScoreTables(tables, sets, runs)
