"""Speakers of the dialogues DynaEval scores.

DynaEval's graph types its edges by who said what, so every utterance needs a speaker id in
``[0, max_speakers)``:

* turns given with a speaker (``{"role": ..., "content": ...}`` or ``{"speaker": ..., "text": ...}``): ids by order
  of first appearance within the dialogue (the first speaker is 0). A dialogue with more distinct speakers than the
  checkpoint's ``max_speakers`` (2 for the trained model: DailyDialog has two) is rejected with an
  :class:`~dialeval.schema.InputError` naming the item and the turn.
* turns given without speakers (plain strings, or an empty role): speakers alternate 0, 1, 0, ... by position, the
  original DynaEval's convention.
* a mix of the two in one dialogue is ambiguous and rejected.

Turn level (a context and a response): the response is a new turn by the most recent context speaker other than
the speaker of the last context turn; if the context has a single speaker (or a single turn), by a new speaker.
Without speakers it simply continues the alternation.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...schema import InputError, Turn

RESPONSE_SPEAKER = "\x00response"  # placeholder name for a response by a speaker not seen in the context


def _given(turn: Turn) -> bool:
    return turn.speaker is not None and turn.speaker.strip() != ""


def speaker_ids(turns: Sequence[Turn], max_speakers: int, *, field: str, index: int,
                last_is_response: bool = False) -> list[int]:
    """Speaker ids of one dialogue (see the module docstring); ``field[index]`` names it in errors (with
    ``last_is_response`` the last turn is ``responses[index]``)."""

    def where(j: int) -> str:
        if last_is_response and j == len(turns) - 1:
            return f"responses[{index}]"
        return f"{field}[{index}][{j}]"

    given = [_given(t) for t in turns]
    if not any(given):
        return [i % 2 for i in range(len(turns))] if max_speakers >= 2 else [0] * len(turns)
    if not all(given):
        j = given.index(False)
        k = given.index(True)
        raise InputError(
            f"{where(j)} has no speaker while {where(k)} has one; give every turn of a "
            "dialogue a role/speaker, or none (then speakers alternate by position)"
        )
    ids: dict[str, int] = {}
    out = []
    for j, turn in enumerate(turns):
        name = turn.speaker.strip()  # type: ignore[union-attr]
        if name not in ids:
            if len(ids) == max_speakers:
                shown = "the response" if name == RESPONSE_SPEAKER else f"speaker {name!r}"
                raise InputError(
                    f"{where(j)}: {shown} is speaker number {len(ids) + 1} of this dialogue; the DynaEval "
                    f"checkpoint models at most {max_speakers} speakers (config.max_speakers; speakers so far: "
                    f"{', '.join(repr(s) for s in ids)})"
                )
            ids[name] = len(ids)
        out.append(ids[name])
    return out


def response_turn(context: Sequence[Turn], response: str) -> Turn:
    """The response as a turn, with the speaker rule of the module docstring."""
    if not any(_given(t) for t in context):
        return Turn(response)
    last = context[-1].speaker.strip() if _given(context[-1]) else None
    for turn in reversed(context):
        if _given(turn) and turn.speaker.strip() != last:  # type: ignore[union-attr]
            return Turn(response, turn.speaker.strip())  # type: ignore[union-attr]
    return Turn(response, RESPONSE_SPEAKER)
