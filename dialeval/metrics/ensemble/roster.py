"""Who the ensemble's members are, as data: :class:`MemberSpec`, the known members (:data:`MEMBERS`), the member sets
(:data:`MEMBER_SETS`), the controls (:data:`CONTROLS`) and how the dialogue level maps onto them. Light to import (no
torch, no model): the training options and the command line read it.

A member is a registry metric with options (``bert_ruber_unref_base`` is ``bert_ruber_unref`` with
``checkpoint="base"``); its name is its column everywhere (tables, metadata, the checkpoint).

A member set lists the members a fit may use; which of them enter is the member rule's decision, made on the
training sets (:func:`~.combiners.admitted`: a member whose agreement with the humans is not established above 0,
:func:`~.combiners.sign_established`, on more than one training set stays out). Which members a fit admitted is a
fact of its checkpoint: its ``config.json`` lists them and the ensemble's card tables them.

* ``full`` -- the learned scorers that need no reference (GRADE, PONE, BERT-RUBER's unreferenced score, DynaEval)
  and the context cosine;
* ``fast`` -- the members that are one MiniLM encoder pass and a small head or a cosine (PONE, BERT-RUBER
  unreferenced, ``context_cosine``): no cross-encoder (GRADE), no graph network (DynaEval's GCN);
* ``base`` -- ``full`` with BERT-RUBER's, PONE's and DynaEval's shipped ``base`` heads (on all-mpnet-base-v2,
  ``checkpoint="base"``) in place of their MiniLM heads: the members ``bert_ruber_unref_base``, ``pone_base`` and
  ``dynaeval_base``.
  It needs that encoder installed (``dialeval encoders install all-mpnet-base-v2``), so it is never a default;
* ``full+rade`` -- ``full`` and RADE, which reads a reference per reply (:data:`WITH_REFERENCES`): only for a user
  who gives references (or asks for RADE's pseudo-references), never by default, and shipped only where the rule
  admits RADE;
* ``full+length`` -- ``full`` and the reply's length (:data:`CONTROLS`), for a user who knows that the raters of
  their data reward long replies: a control is in wherever a member set names it, exempt from the rule, and no
  default set names one.

``amr_eval`` (the AMR evaluator's small model without its LLM judge) is a known member that no set holds by
default; ``turn_count`` is built in (dialogue level only). At dialogue level a member set's members are its members with a dialogue form plus those that share a weight
with them (:data:`DIALOGUE_SHARES`: ``utterance_length`` and ``turn_count`` share the length weight), so the number
of turns is a control too and joins only beside length.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import InputError

__all__ = ["BUILT_IN_NAMES", "CONTROLS", "DIALOGUE_SHARES", "MEMBERS", "MEMBER_SETS", "WITH_REFERENCES", "MemberSpec",
           "dialogue_members"]

#: members computed by the ensemble itself (no registry metric)
BUILT_IN_NAMES = ("turn_count",)


@dataclass(frozen=True)
class MemberSpec:
    """One member: its column ``name``, the registry ``metric`` it loads (None: built in here) with ``options``,
    the levels it scores and whether it reads a reference per reply."""

    name: str
    metric: str | None
    options: Mapping[str, Any] = field(default_factory=dict)
    levels: tuple[str, ...] = ("turn", "dialogue")
    reads_references: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "metric": self.metric, "options": dict(self.options), "levels": list(self.levels),
                "reads_references": self.reads_references}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, where: str) -> MemberSpec:
        for key in ("name", "metric", "options", "levels", "reads_references"):
            if key not in data:
                raise InputError(f"{where}: member {data.get('name', '?')!r} has no field {key!r}")
        levels = tuple(data["levels"])
        if not levels or not set(levels) <= {"turn", "dialogue"}:
            raise InputError(f"{where}: member {data['name']!r}: levels must be turn and/or dialogue, got {levels}")
        if data["metric"] is None and data["name"] not in BUILT_IN_NAMES:
            raise InputError(f"{where}: member {data['name']!r} names no metric and is not built in "
                             f"({', '.join(BUILT_IN_NAMES)})")
        return cls(name=str(data["name"]), metric=data["metric"], options=dict(data["options"]), levels=levels,
                   reads_references=bool(data["reads_references"]))


MEMBERS: dict[str, MemberSpec] = {m.name: m for m in (
    MemberSpec("grade", "grade"),
    MemberSpec("pone", "pone"),
    MemberSpec("bert_ruber_unref", "bert_ruber_unref"),
    MemberSpec("bert_ruber_unref_base", "bert_ruber_unref", {"checkpoint": "base"}),
    MemberSpec("pone_base", "pone", {"checkpoint": "base"}),
    MemberSpec("dynaeval", "dynaeval"),
    MemberSpec("dynaeval_base", "dynaeval", {"checkpoint": "base"}),
    MemberSpec("context_cosine", "context_cosine"),
    MemberSpec("utterance_length", "utterance_length"),
    MemberSpec("amr_eval", "amr_eval"),
    MemberSpec("rade", "rade", levels=("turn",), reads_references=True),
    MemberSpec("turn_count", None, levels=("dialogue",)),
)}

#: members whose agreement with humans changes sign from corpus to corpus (reply length: negative on GRADE's
#: DailyDialog sets, positive on USR-TopicalChat and RADE's emotion set); in a fit only where a member set names them
CONTROLS = ("utterance_length", "turn_count")
_FULL = ("grade", "pone", "bert_ruber_unref", "dynaeval", "context_cosine")
#: member set -> the turn-level members its fits may use (the rule decides which enter)
MEMBER_SETS: dict[str, tuple[str, ...]] = {
    "full": _FULL,
    "fast": ("pone", "bert_ruber_unref", "context_cosine"),
    "base": ("grade", "pone_base", "bert_ruber_unref_base", "dynaeval_base", "context_cosine"),
    "full+rade": (*_FULL, "rade"),
    "full+length": (*_FULL, "utterance_length"),
}

#: at dialogue level, a turn member's weight split evenly over these dialogue members
DIALOGUE_SHARES: dict[str, tuple[str, ...]] = {"utterance_length": ("utterance_length", "turn_count")}


def dialogue_members(turn_members: Sequence[str], specs: Mapping[str, MemberSpec] = MEMBERS) -> tuple[str, ...]:
    """The dialogue-level members of a member set: its members with a dialogue form, and the members they share a
    weight with (:data:`DIALOGUE_SHARES`)."""
    out: list[str] = []
    for name in turn_members:
        if "dialogue" not in specs[name].levels:
            continue
        for target in DIALOGUE_SHARES.get(name, (name,)):
            if target not in out:
                out.append(target)
    return tuple(out)


#: base member set -> its counterpart that adds the members reading references
WITH_REFERENCES: dict[str, str] = {"full": "full+rade"}
