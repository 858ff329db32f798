"""The ensemble checkpoint: one small ``config.json`` (:class:`EnsembleConfig`), written by ``dialeval train
ensemble`` and read by :class:`~.scorer.EnsembleScorer`.

Fields::

    model_type          "dialeval-ensemble"
    format_version      1
    default_member_set  the member set used when none is asked for ("full")
    members             [{name, metric, options, levels, reads_references, identity}]: every member of any set,
                        with the identity it had when fitted (metric name and fingerprint)
    calibration         {"turn": {member: cdf}, "dialogue": {member: cdf}, ...}: each member's stored quantiles
                        (see :mod:`dialeval.scoring.calibration`), plus what they were measured on
    member_sets         {name: {members, dialogue_members, reads_references, turn: combiner, dialogue: combiner
                        or null, ...}}: each member set's combiners (see :mod:`.combiners`)

and, for the record (read by nobody at scoring time): ``training`` (the sets fitted on, the settings) and each
member set's ``loo`` summary. Reading checks every field a scorer uses and names the one at fault.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...scoring.calibration import EmpiricalCdf
from .combiners import Combiner
from .roster import MemberSpec

__all__ = ["FORMAT_VERSION", "MODEL_TYPE", "CheckpointError", "EnsembleConfig", "MemberSetConfig"]

MODEL_TYPE = "dialeval-ensemble"
FORMAT_VERSION = 1


class CheckpointError(InputError):
    """An ensemble ``config.json`` that cannot be used (the message names the file and the field)."""


@dataclass(frozen=True)
class MemberSetConfig:
    """One member set: its members at each level and its fitted combiners."""

    name: str
    members: tuple[str, ...]
    dialogue_members: tuple[str, ...]
    reads_references: bool
    turn: Combiner
    dialogue: Combiner | None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {**self.extra, "members": list(self.members), "dialogue_members": list(self.dialogue_members),
                "reads_references": self.reads_references, "turn": self.turn.to_json(),
                "dialogue": None if self.dialogue is None else self.dialogue.to_json()}


@dataclass(frozen=True)
class EnsembleConfig:
    """A parsed ensemble ``config.json`` (module docstring)."""

    members: dict[str, MemberSpec]
    identities: dict[str, dict[str, str]]
    turn_calibration: dict[str, EmpiricalCdf]
    dialogue_calibration: dict[str, EmpiricalCdf]
    member_sets: dict[str, MemberSetConfig]
    default_member_set: str
    record: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "model_type": MODEL_TYPE,
            "format_version": FORMAT_VERSION,
            "default_member_set": self.default_member_set,
            "members": [{**self.members[m].to_json(), "identity": self.identities[m]} for m in self.members],
            "calibration": {**self.record.get("calibration", {}),
                            "turn": {m: c.to_json() for m, c in self.turn_calibration.items()},
                            "dialogue": {m: c.to_json() for m, c in self.dialogue_calibration.items()}},
            "member_sets": {name: s.to_json() for name, s in self.member_sets.items()},
            **{k: v for k, v in self.record.items() if k != "calibration"},
        }

    def save(self, folder: str | os.PathLike) -> Path:
        path = Path(folder) / "config.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        # one top-level key per line, each value compact: the quantile lists would triple the file indented
        lines = ",\n".join(f"{json.dumps(key)}: {json.dumps(value, separators=(',', ':'))}"
                           for key, value in self.to_json().items())
        path.write_text("{\n" + lines + "\n}\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, folder: str | os.PathLike) -> EnsembleConfig:
        path = Path(folder) / "config.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as err:
            raise CheckpointError(f"{path}: cannot read an ensemble config ({err})") from None
        return cls.from_json(data, where=str(path))

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, where: str) -> EnsembleConfig:
        if not isinstance(data, Mapping):
            raise CheckpointError(f"{where}: not a JSON object")
        if data.get("model_type") != MODEL_TYPE:
            raise CheckpointError(f"{where}: model_type is {data.get('model_type')!r}, not {MODEL_TYPE!r}")
        if data.get("format_version") != FORMAT_VERSION:
            raise CheckpointError(f"{where}: format_version {data.get('format_version')!r}; this dialeval reads "
                                  f"{FORMAT_VERSION}")
        for key in ("members", "calibration", "member_sets", "default_member_set"):
            if key not in data:
                raise CheckpointError(f"{where}: no field {key!r}")
        members, identities = {}, {}
        for i, entry in enumerate(data["members"]):
            if not isinstance(entry, Mapping) or not isinstance(entry.get("identity"), Mapping):
                raise CheckpointError(f"{where}: members[{i}] has no mapping 'identity'")
            try:
                spec = MemberSpec.from_json(entry, where=f"{where}: members[{i}]")
            except InputError as err:
                raise CheckpointError(str(err)) from None
            members[spec.name] = spec
            identities[spec.name] = {str(k): str(v) for k, v in entry["identity"].items()}
        calibration = data["calibration"]
        cdfs: dict[str, dict[str, EmpiricalCdf]] = {}
        for level in ("turn", "dialogue"):
            if not isinstance(calibration.get(level), Mapping):
                raise CheckpointError(f"{where}: calibration has no mapping {level!r}")
            try:
                cdfs[level] = {m: EmpiricalCdf.from_json(c, member=m) for m, c in calibration[level].items()}
            except InputError as err:
                raise CheckpointError(f"{where}: calibration.{level}: {err}") from None
        sets = {}
        for name, entry in data["member_sets"].items():
            sets[name] = _member_set(name, entry, members, cdfs, where=f"{where}: member_sets.{name}")
        if data["default_member_set"] not in sets:
            raise CheckpointError(f"{where}: default_member_set {data['default_member_set']!r} is not among "
                                  f"member_sets ({', '.join(sets)})")
        record = {k: v for k, v in data.items()
                  if k not in ("model_type", "format_version", "members", "member_sets", "default_member_set")}
        record["calibration"] = {k: v for k, v in calibration.items() if k not in ("turn", "dialogue")}
        return cls(members, identities, cdfs["turn"], cdfs["dialogue"], sets, data["default_member_set"], record)


def _member_set(name: str, entry: Mapping[str, Any], members: Mapping[str, MemberSpec],
                cdfs: Mapping[str, Mapping[str, EmpiricalCdf]], *, where: str) -> MemberSetConfig:
    for key in ("members", "dialogue_members", "reads_references", "turn", "dialogue"):
        if key not in entry:
            raise CheckpointError(f"{where}: no field {key!r}")
    turn_members, dialogue_members = tuple(entry["members"]), tuple(entry["dialogue_members"])
    for level, names in (("turn", turn_members), ("dialogue", dialogue_members)):
        for m in names:
            if m not in members:
                raise CheckpointError(f"{where}: {level} member {m!r} is not among the checkpoint's members")
            if m not in cdfs[level]:
                raise CheckpointError(f"{where}: member {m!r} has no {level}-level calibration")
    turn = Combiner.from_json(entry["turn"], where=f"{where}.turn")
    if tuple(turn.weights) != turn_members:
        raise CheckpointError(f"{where}.turn: weights name {list(turn.weights)}, the set's members are "
                              f"{list(turn_members)}")
    dialogue = None
    if entry["dialogue"] is not None:
        dialogue = Combiner.from_json(entry["dialogue"], where=f"{where}.dialogue")
        if tuple(dialogue.weights) != dialogue_members:
            raise CheckpointError(f"{where}.dialogue: weights name {list(dialogue.weights)}, the set's dialogue "
                                  f"members are {list(dialogue_members)}")
    reads = any(members[m].reads_references for m in turn_members)
    if bool(entry["reads_references"]) != reads:
        raise CheckpointError(f"{where}: reads_references is {entry['reads_references']} but its members "
                              f"{'do' if reads else 'do not'} read references")
    extra = {k: v for k, v in entry.items() if k not in ("members", "dialogue_members", "reads_references", "turn",
                                                         "dialogue")}
    return MemberSetConfig(name, turn_members, dialogue_members, reads, turn, dialogue, extra)
