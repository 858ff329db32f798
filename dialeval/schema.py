"""One input schema for every metric.

A *context* may be given as
  * a string (one turn),
  * a list of strings (turns, oldest first), or
  * a list of messages ``{"role": ..., "content": ...}`` (``{"speaker": ..., "text": ...}`` is accepted too).
A *response* is a string. *References* are optional: one string or a list of strings per item.
A *dialogue* is a list of turns in any of the list forms above.

Validation never drops, merges or reorders anything: it either returns one normalised item per input, in input
order, or raises :class:`InputError` naming the index and the field at fault.

Empty turns (an empty or whitespace-only context turn, response or reference) follow a policy, ``empty_turns``:
``"error"`` (the default) raises :class:`EmptyTurnError` naming the item and field; ``"skip"`` puts a
:class:`SkippedItem` with the reason at that item's position, so the caller can score the others and give this one
no score. Every other problem (a wrong type, a missing field) is an error under both policies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .errors import EmptyTurnError, InputError, UnknownNameError

__all__ = [
    "EMPTY_TURN_POLICIES",
    "Dialogue",
    "EmptyTurnError",
    "InputError",
    "ScoringItem",
    "SkippedItem",
    "Turn",
    "check_empty_turns",
    "join_turns",
    "normalize_context",
    "normalize_dialogues",
    "normalize_items",
]

#: what to do with an item that has an empty turn: raise, or keep it in place without a score
EMPTY_TURN_POLICIES = ("error", "skip")


def check_empty_turns(policy: str) -> str:
    """``policy`` if it is one of :data:`EMPTY_TURN_POLICIES`, else :class:`UnknownNameError`."""
    if policy not in EMPTY_TURN_POLICIES:
        raise UnknownNameError("empty_turns policy", policy, EMPTY_TURN_POLICIES)
    return policy


@dataclass(frozen=True)
class Turn:
    text: str
    speaker: str | None = None


@dataclass(frozen=True)
class Dialogue:
    turns: tuple[Turn, ...]

    @property
    def speakers(self) -> tuple[str | None, ...]:
        return tuple(t.speaker for t in self.turns)


@dataclass(frozen=True)
class ScoringItem:
    context: tuple[Turn, ...]
    response: str
    references: tuple[str, ...] = ()

    @property
    def context_text(self) -> str:
        return join_turns(self.context)


def join_turns(turns: Sequence[Turn]) -> str:
    """The context as one string for encoders that read a single sequence (turns separated by a space)."""
    return " ".join(t.text for t in turns)


@dataclass(frozen=True)
class SkippedItem:
    """The place of an item left unscored under ``empty_turns="skip"``: its index and why."""

    index: int
    reason: str


def _where(field: str, index: int, sub: int | None = None) -> str:
    return f"{field}[{index}]" if sub is None else f"{field}[{index}][{sub}]"


# ``empty`` below: None raises EmptyTurnError at the first empty text; a list collects where each one is instead
# (the "skip" policy), so that every other problem in the item is still found and raised.
Empties = list[str] | None


def _text(value: object, where: str, empty: Empties) -> str:
    if value is None:
        raise InputError(f"{where} is None; expected a non-empty string")
    if not isinstance(value, str):
        raise InputError(f"{where} has type {type(value).__name__}; expected a non-empty string")
    if not value.strip():
        if empty is None:
            raise EmptyTurnError(where)
        empty.append(where)
    return value


def _turn(value: object, where: str, empty: Empties) -> Turn:
    if isinstance(value, str) or value is None:
        return Turn(_text(value, where, empty))
    if isinstance(value, Mapping):
        if "content" in value or "role" in value:
            keys = ("role", "content")
        elif "text" in value or "speaker" in value:
            keys = ("speaker", "text")
        else:
            raise InputError(f"{where} is a mapping without 'content' (or 'text'); got keys {sorted(value)}")
        speaker_key, text_key = keys
        if text_key not in value:
            raise InputError(f"{where} has no '{text_key}' field")
        speaker = value.get(speaker_key)
        if speaker is not None and not isinstance(speaker, str):
            raise InputError(f"{where}.{speaker_key} has type {type(speaker).__name__}; expected a string")
        return Turn(_text(value[text_key], f"{where}.{text_key}", empty), speaker)
    raise InputError(
        f"{where} has type {type(value).__name__}; expected a string or a {{'role', 'content'}} message"
    )


def _turns(value: object, field: str, index: int, empty: Empties = None) -> tuple[Turn, ...]:
    where = _where(field, index)
    if isinstance(value, str) or value is None:
        return (_turn(value, where, empty),)
    if isinstance(value, Mapping) or not isinstance(value, Sequence):
        raise InputError(
            f"{where} has type {type(value).__name__}; expected a string, a list of turns or a list of messages"
        )
    if len(value) == 0:
        raise InputError(f"{where} is an empty list; expected at least one turn")
    return tuple(_turn(v, _where(field, index, j), empty) for j, v in enumerate(value))


def normalize_context(value: object, index: int = 0, field: str = "contexts") -> tuple[Turn, ...]:
    """Normalise one context (string, list of turns or list of messages) to a tuple of :class:`Turn`."""
    return _turns(value, field, index)


def _as_list(value: object, field: str) -> list:
    if value is None:
        raise InputError(f"{field} is None; expected a list")
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise InputError(f"{field} has type {type(value).__name__}; expected a list with one entry per item")
    return list(value)


def _references(value: object, index: int, empty: Empties) -> tuple[str, ...]:
    where = _where("references", index)
    if isinstance(value, str) or value is None:
        return (_text(value, where, empty),)
    if isinstance(value, Mapping) or not isinstance(value, Sequence):
        raise InputError(f"{where} has type {type(value).__name__}; expected a string or a list of strings")
    if len(value) == 0:
        raise InputError(f"{where} is an empty list; expected at least one reference")
    return tuple(_text(v, _where("references", index, j), empty) for j, v in enumerate(value))


def _collector(empty_turns: str) -> Empties:
    return [] if check_empty_turns(empty_turns) == "skip" else None


def _skipped(index: int, empty: list[str]) -> SkippedItem:
    return SkippedItem(index, f"empty (or whitespace-only) text at {', '.join(empty)}")


def normalize_items(
    contexts: object, responses: object, references: object = None, *, empty_turns: str = "error"
) -> list[ScoringItem | SkippedItem]:
    """Validate and normalise parallel lists of contexts, responses and (optional) references.

    With ``empty_turns="error"`` every entry is a :class:`ScoringItem`; with ``"skip"`` an item with an empty
    turn, response or reference is a :class:`SkippedItem` at its own position.
    """
    ctx = _as_list(contexts, "contexts")
    rsp = _as_list(responses, "responses")
    if len(ctx) != len(rsp):
        raise InputError(f"contexts has {len(ctx)} items but responses has {len(rsp)}; they must match")
    refs: list | None = None
    if references is not None:
        refs = _as_list(references, "references")
        if len(refs) != len(rsp):
            raise InputError(f"references has {len(refs)} items but responses has {len(rsp)}; they must match")
    items: list[ScoringItem | SkippedItem] = []
    for i, (c, r) in enumerate(zip(ctx, rsp)):
        empty = _collector(empty_turns)
        item = ScoringItem(
            context=_turns(c, "contexts", i, empty),
            response=_text(r, _where("responses", i), empty),
            references=_references(refs[i], i, empty) if refs is not None else (),
        )
        items.append(_skipped(i, empty) if empty else item)
    return items


def normalize_dialogues(
    dialogues: object, min_turns: int = 1, *, empty_turns: str = "error"
) -> list[Dialogue | SkippedItem]:
    """Validate and normalise a list of dialogues (each a list of turns or messages).

    ``empty_turns`` as in :func:`normalize_items`: under ``"skip"`` a dialogue with an empty turn is a
    :class:`SkippedItem` at its own position (it must still have ``min_turns`` turns).
    """
    out: list[Dialogue | SkippedItem] = []
    for i, d in enumerate(_as_list(dialogues, "dialogues")):
        if isinstance(d, str):
            raise InputError(f"dialogues[{i}] is a string; expected a list of turns or messages")
        empty = _collector(empty_turns)
        turns = _turns(d, "dialogues", i, empty)
        if len(turns) < min_turns:
            raise InputError(f"dialogues[{i}] has {len(turns)} turn(s); this metric needs at least {min_turns}")
        out.append(_skipped(i, empty) if empty else Dialogue(turns))
    return out
