"""The ensemble's members at work: loaded once through the registry, scoring items and dialogues, and the
dialogue-level weights carried over from the turn level. Who they are is :mod:`.roster`.

A member is a metric of the registry (``load_scorer(metric, **options)``), so the members are whatever is shipped
when the ensemble is fitted; ``turn_count`` (:class:`TurnCountScorer`, the number of turns) is built in here.

At dialogue level every member gives its own dialogue score (DynaEval's native one; the mean of a turn member's
scores over turns 2..n; ``utterance_length``'s mean words per turn) and, beside length, ``turn_count`` joins. With no
dialogue-level human set to fit on, the dialogue weights are the turn-level ones (:func:`dialogue_combiner`):
``turn_count`` and ``utterance_length`` share the length weight equally (both say how much was said), so the number
of turns is in a combination exactly where length is: only in a member set that names that control. RADE has no
dialogue form.

Members that run the same text encoder share one :class:`~dialeval.backbone.Encoder` (and its embedding cache) when
the encoder is the same model at the same maximum length (:func:`load_members`): PONE, BERT-RUBER and
``context_cosine`` then encode a response once. Embeddings are batch-invariant, so sharing changes no score.

A member's ``identity`` (:func:`identity`) is its metric name and fingerprint (checkpoint hash, encoder hash,
settings), without the CPU thread count and the package versions: the ensemble checkpoint stores it, and loading
refuses a member whose identity changed (a retrained checkpoint needs a refitted ensemble).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from ...backbone import Encoder
from ...errors import InputError
from ...schema import Dialogue, ScoringItem
from ...scoring.base import Scorer
from ...scoring.registry import load_scorer, scorer_class
from .combiners import Combiner
from .roster import DIALOGUE_SHARES, MEMBERS, MemberSpec

__all__ = ["BUILT_IN", "TurnCountScorer", "changed_fields", "dialogue_combiner", "identity", "identity_text",
           "load_members", "member_dialogue_scores", "member_turn_scores"]


class TurnCountScorer(Scorer):
    """The number of turns of a dialogue (dialogue level only): a length signal of whole conversations."""

    name = "turn_count"
    level = "dialogue"

    def _score_items(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        raise InputError("turn_count scores whole dialogues (score_dialogues), not context-response pairs")

    def _score_dialogues(self, dialogues: list[Dialogue], *, batch_size: int, progress_bar: bool | None
                         ) -> tuple[np.ndarray, dict[str, Any]]:
        return np.asarray([len(d.turns) for d in dialogues], dtype=np.float64), {}

    def fingerprint(self) -> dict[str, str]:
        return {"definition": "number_of_turns"}


BUILT_IN: dict[str, type[Scorer]] = {"turn_count": TurnCountScorer}


def dialogue_combiner(turn: Combiner, specs: Mapping[str, MemberSpec] = MEMBERS) -> Combiner:
    """The turn-level combiner's weights carried to the dialogue members (see the module docstring); a member
    without a dialogue form is an error (its weight has nowhere to go)."""
    weights: dict[str, float] = {}
    for name, w in turn.weights.items():
        if "dialogue" not in specs[name].levels:
            raise InputError(f"member {name} has no dialogue-level score: the member set cannot score dialogues")
        targets = DIALOGUE_SHARES.get(name, (name,))
        for target in targets:
            weights[target] = weights.get(target, 0.0) + w / len(targets)
    return Combiner(turn.kind, weights, turn.intercept, turn.setting, turn.selection)


# -- loading ------------------------------------------------------------------------------------------------------
def identity(scorer: Scorer) -> dict[str, str]:
    """The metric's name and fingerprint (see the module docstring): ``{"metric": ..., key: value, ...}``."""
    return {"metric": scorer.name, **{k: str(v) for k, v in scorer.fingerprint().items()}}


def identity_text(name: str, ident: Mapping[str, str]) -> str:
    """``name(key=value;...)``: a member's identity in one signature field."""
    return f"{name}(" + ";".join(f"{k}={v}" for k, v in ident.items()) + ")"


def changed_fields(stored: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """The fields of a stored identity that the current one lacks or holds another value of (a field the current
    one adds, such as a setting the user asked for, is not a change)."""
    return [k for k, v in stored.items() if current.get(k) != v]


def _takes(metric: str, parameter: str) -> bool:
    return parameter in inspect.signature(scorer_class(metric).__init__).parameters


def load_members(specs: Sequence[MemberSpec], *, device: str | torch.device | None = None,
                 extra_options: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Scorer]:
    """Each member loaded once (``load_scorer(metric, device=device, **options)``; ``extra_options[name]`` adds
    settings, e.g. RADE's pseudo-references), in the given order, encoders shared where they are the same model at
    the same maximum length (module docstring)."""
    shared: dict[tuple[str, int], Encoder] = {}
    out: dict[str, Scorer] = {}
    for spec in specs:
        options = {**spec.options, **(extra_options or {}).get(spec.name, {})}
        if spec.metric is None:
            out[spec.name] = BUILT_IN[spec.name]()
            continue
        scorer = load_scorer(spec.metric, device=device, **options)
        encoder = vars(scorer).get("encoder")
        if encoder is None and _takes(spec.metric, "encoder") and "encoder" not in options:
            encoder = scorer.encoder  # an encoder baseline: loads its encoder now
            key = (encoder.name_or_path, encoder.max_length)
            if key in shared:  # the same model: load the scorer again on the shared one
                scorer = load_scorer(spec.metric, device=device, encoder=shared[key], **options)
            else:
                shared[key] = encoder
        elif isinstance(encoder, Encoder):
            key = (encoder.name_or_path, encoder.max_length)
            if key in shared:
                scorer.encoder = shared[key]
            else:
                shared[key] = encoder
        out[spec.name] = scorer
    return out


def _finite(member: str, scores: np.ndarray, n: int) -> np.ndarray:
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != (n,):
        raise RuntimeError(f"member {member} returned {scores.shape} scores for {n} items")
    bad = np.flatnonzero(~np.isfinite(scores))
    if bad.size:
        raise RuntimeError(f"member {member} gave a non-finite score to item {int(bad[0])}")
    return scores


def _turns(turns) -> list[dict[str, str | None]]:
    return [{"speaker": t.speaker, "text": t.text} for t in turns]


def member_turn_scores(spec: MemberSpec, scorer: Scorer, items: Sequence[ScoringItem], *, batch_size: int = 32,
                       progress_bar: bool | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """The member's raw scores of ``items`` (its own ``score``; references passed to a member that reads them) and
    the call's metadata. A member that reads references needs one on every item: a missing one is an error naming
    the item."""
    if "turn" not in spec.levels:
        raise InputError(f"member {spec.name} scores whole dialogues only")
    references = None
    if spec.reads_references:
        missing = [i for i, it in enumerate(items) if not it.references]
        if not missing:
            references = [list(it.references) for it in items]
        elif scorer.requires_references:
            raise InputError(f"references[{missing[0]}] is missing: member {spec.name} reads a reference per reply "
                             "(pass references, or ask for pseudo-references)")
        elif len(missing) != len(items):
            raise InputError(f"references[{missing[0]}] is missing while other items have references: give every "
                             f"item its references (member {spec.name})")
        # else: no item has one and the member finds its own (pseudo-references)
    out = scorer.score(contexts=[_turns(it.context) for it in items], responses=[it.response for it in items],
                       references=references, batch_size=batch_size, progress_bar=progress_bar)
    return _finite(spec.name, out.scores, len(items)), out.metadata


def member_dialogue_scores(spec: MemberSpec, scorer: Scorer, dialogues: Sequence[Dialogue], *, batch_size: int = 32,
                           progress_bar: bool | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """The member's own dialogue-level scores of ``dialogues`` and the call's metadata."""
    if "dialogue" not in spec.levels:
        raise InputError(f"member {spec.name} has no dialogue-level score")
    out = scorer.score_dialogues(dialogues=[_turns(d.turns) for d in dialogues], batch_size=batch_size,
                                 progress_bar=progress_bar)
    return _finite(spec.name, out.scores, len(dialogues)), out.metadata
