"""The ensemble on the shared scoring API: ``dialeval.load_scorer("ensemble")``.

The score of an item is a fitted combination of its members' calibrated scores: each member scores the item
(through its own scorer, loaded from the registry), its raw score is mapped to [0, 1] by the member's fixed
calibration (:mod:`dialeval.scoring.calibration`), and the member set's combiner (:mod:`.combiners`) adds them up with its weights.
What the number means depends on the combiner the checkpoint holds: ``mean`` and ``mme_crs`` give a weighted mean
of calibrated scores and the power means (``power_<p>``) an unweighted power mean of them, all in [0, 1]; ``ridge``
a predicted standardised human rating (0 is the training items' mean).

Settings:

* ``member_set`` -- one of the checkpoint's fitted sets (it lists them); each holds the members the member rule
  admitted on the training sets (:mod:`.combiners`) with its own fitted weights, which may be fewer than
  :data:`~.roster.MEMBER_SETS` lets it use. The shipped checkpoint's: ``"full"`` (default: GRADE, PONE,
  BERT-RUBER unreferenced, ``context_cosine``; the rule left DynaEval out), ``"fast"`` (the encoder-only members
  PONE, BERT-RUBER unreferenced and ``context_cosine``, one shared MiniLM pass), ``"base"`` (``full`` with
  BERT-RUBER's and PONE's all-mpnet-base-v2 heads, ``checkpoint="base"``, in place of their MiniLM ones) and
  ``"full+length"`` (``full`` and the reply's length, a control whose agreement with humans changes sign from
  corpus to corpus: for a user who knows their raters reward long replies);
* ``use_references=True`` -- the member set's counterpart with the members that read a reference per reply (RADE),
  where the checkpoint holds one: every item then needs references (a call without them is an error), unless
  ``pseudo_references=`` (``"dailydialog"`` or a JSONL corpus, RADE's BM25 retrieval;
  :mod:`dialeval.metrics.rade.retrieval`) lets RADE find one for a call without references. Never a default. A
  counterpart whose fit admitted no such member would score exactly as its base set and is not shipped (the
  shipped checkpoint's ``full+rade``: the rule left RADE out); asking for it is an error that names the member and
  the rule's reason.

Dialogue level (``score_dialogues``): each member's own dialogue score (the mean of a turn member's turn scores;
DynaEval's native one where a set admits it; in ``full+length`` mean words per turn and the number of turns, which
share length's weight), each with its dialogue-level calibration, with the turn-level weights (no dialogue-level
human set exists to fit on; see :mod:`.members`). A member set with RADE has no dialogue level.

Loading checks every member against the identity it had when the ensemble was fitted (metric, checkpoint hash,
encoder hash, settings): a retrained member is an error that says to refit (``dialeval train ensemble``), never a
silent mix. The signature names the members and the sha256 of their identities (their own signatures without the
CPU thread count and package versions, which the ensemble's signature gives once; ``scorer.identities`` holds them),
so that it stays one short line.

Per call, the metadata holds every member's raw and calibrated scores (``<member>_scores``,
``<member>_calibrated_scores``), ``truncated_items``: the items at least one member cut (``member_truncated_items``
has each member's), and ``truncated_texts``: the sum of the members' own counts (a text two members cut counts twice;
``member_truncated_texts`` has each).

Each member's score of an item does not depend on its batch-mates (each member guarantees it), the calibration
and the combination are computed item by item: an item's ensemble score is the same, bit for bit, alone or in any
batch.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, ClassVar

import numpy as np
import torch

from ...backbone.device import resolve_device
from ...errors import InputError, UnknownNameError
from ...schema import Dialogue, ScoringItem
from ...scoring.base import Scorer, quiet_truncation
from ...scoring.checkpoints import checkpoint_fingerprint, checkpoint_label, resolve_checkpoint
from .checkpoint import EnsembleConfig, MemberSetConfig
from .members import (
    changed_fields,
    identity,
    identity_text,
    load_members,
    member_dialogue_scores,
    member_turn_scores,
)

__all__ = ["EnsembleScorer", "MemberChanged"]


class MemberChanged(InputError):
    """A member's checkpoint or settings differ from those the ensemble was fitted with."""


class EnsembleScorer(Scorer):
    """A fitted combination of the shipped metrics' calibrated scores (see the module docstring)."""

    name: ClassVar[str] = "ensemble"
    checkpoint_dir: ClassVar[str] = "ensemble"
    train_command: ClassVar[str] = "dialeval train ensemble"

    def __init__(self, checkpoint: str | os.PathLike | None = None, *, member_set: str | None = None,
                 use_references: bool = False, pseudo_references: str | None = None,
                 data_dir: str | os.PathLike | None = None, device: str | torch.device | None = None) -> None:
        super().__init__()
        self.device = resolve_device(device)
        self.checkpoint = resolve_checkpoint(checkpoint, self.checkpoint_dir, self.train_command)
        self.config = EnsembleConfig.load(self.checkpoint)
        self._checkpoint_sha256 = checkpoint_fingerprint(self.checkpoint)
        self.member_set = self._choose(member_set, use_references, pseudo_references)
        self.pseudo_references = pseudo_references
        chosen = self.config.member_sets[self.member_set]
        names = list(dict.fromkeys([*chosen.members, *chosen.dialogue_members]))
        extra = ({m: {"pseudo_references": pseudo_references, "data_dir": data_dir} for m in chosen.members
                  if self.config.members[m].reads_references} if pseudo_references is not None else {})
        self.members = load_members([self.config.members[m] for m in names], device=self.device, extra_options=extra)
        self.identities = {m: identity(s) for m, s in self.members.items()}
        for m, current in self.identities.items():
            changed = changed_fields(self.config.identities[m], current)
            if changed:
                was = {k: self.config.identities[m].get(k) for k in changed}
                now = {k: current.get(k) for k in changed}
                raise MemberChanged(f"member {m} of ensemble checkpoint {self.checkpoint} has changed since the "
                                    f"ensemble was fitted ({was} then, {now} now): refit it with `{self.train_command} "
                                    "--output-dir runs/ensemble` and pass checkpoint='runs/ensemble'")
        # an instance value: the base class and the benchmark runner read it
        self.requires_references = chosen.reads_references and pseudo_references is None
        self._call_meta: dict[str, Any] = {}

    def _choose(self, member_set: str | None, use_references: bool, pseudo_references: str | None) -> str:
        """The fitted member set for these settings (see the module docstring)."""
        sets = self.config.member_sets
        if pseudo_references is not None and not use_references:
            raise InputError("pseudo_references feeds RADE, which joins only with use_references=True")
        name = member_set or self.config.default_member_set
        if name not in sets:
            raise UnknownNameError("ensemble member set", name, [n for n, s in sets.items()
                                                                 if not s.reads_references])
        if sets[name].reads_references:
            raise InputError(f"member set {name!r} reads references: choose its base set and pass "
                             "use_references=True")
        if not use_references:
            return name
        counterpart = sets[name].extra.get("with_references")
        if counterpart not in sets:
            left_out = sets[name].extra.get("references_left_out")
            why = ("" if not left_out else f": the member rule left {', '.join(left_out['members'])} out of its fit "
                   f"({'; '.join(f'{m}: {w}' for m, w in left_out['members'].items())}), so references would change "
                   "no score; use use_references=False")
            raise InputError(f"member set {name!r} has no fitted counterpart with references in "
                             f"{self.checkpoint}{why}")
        return counterpart

    @property
    def chosen(self) -> MemberSetConfig:
        return self.config.member_sets[self.member_set]

    # -- Scorer -------------------------------------------------------------------------------------------------
    def fingerprint(self) -> dict[str, str]:
        out = {"checkpoint": checkpoint_label(self.checkpoint), "checkpoint_sha256": self._checkpoint_sha256,
               "member_set": self.member_set}
        if self.pseudo_references is not None:
            out["pseudo_references"] = str(self.pseudo_references)
        # the names, and a hash of the identities in full (self.identities): the signature stays one short line
        out["members"] = ",".join(self.members)
        identities = ",".join(identity_text(m, self.identities[m]) for m in self.members)
        out["members_sha256"] = hashlib.sha256(identities.encode("utf-8")).hexdigest()[:12]
        return out

    def to(self, device: str | torch.device | None) -> EnsembleScorer:
        """Move every member to ``device`` (a device this machine lacks raises
        :class:`~dialeval.backbone.device.DeviceUnavailable` before anything moves)."""
        resolved = resolve_device(device)
        for scorer in self.members.values():
            scorer.to(resolved)
        self.device = resolved
        return self

    def _score_items(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        chosen = self.chosen
        return self._combine(chosen.members, chosen.turn, self.config.turn_calibration, member_turn_scores, items,
                             batch_size=batch_size, progress_bar=progress_bar)

    def _score_dialogues(self, dialogues: list[Dialogue], *, batch_size: int, progress_bar: bool | None
                         ) -> tuple[np.ndarray, dict[str, Any]]:
        chosen = self.chosen
        if chosen.dialogue is None:
            raise InputError(f"member set {self.member_set!r} has no dialogue level (RADE scores replies against a "
                             "reference); score dialogues with use_references=False")
        scores = self._combine(chosen.dialogue_members, chosen.dialogue, self.config.dialogue_calibration,
                               member_dialogue_scores, dialogues, batch_size=batch_size, progress_bar=progress_bar)
        return scores, {"dialogue_aggregation": "ensemble of the members' dialogue scores"}

    def _combine(self, members, combiner, calibration, member_scores, inputs: list, *, batch_size: int,
                 progress_bar: bool | None) -> np.ndarray:
        """Each member's raw scores of ``inputs`` (``member_scores``: the turn or dialogue form), calibrated by
        ``calibration`` and combined by ``combiner``; the call's metadata describes them."""
        raw, calibrated, truncated, cut_items = {}, {}, {}, {}
        for m in members:
            if inputs:
                with quiet_truncation():  # the ensemble says once what its members cut, counted per item
                    raw[m], meta = member_scores(self.config.members[m], self.members[m], inputs,
                                                 batch_size=batch_size, progress_bar=progress_bar)
            else:
                raw[m], meta = np.zeros(0), {}
            calibrated[m] = calibration[m](raw[m])
            if "truncated_texts" in meta:
                truncated[m] = int(meta["truncated_texts"])
            if "truncated_items" in meta:
                cut_items[m] = list(meta["truncated_items"])
        self._call_meta = self._describe(combiner.kind, raw, calibrated, truncated, cut_items)
        return combiner.apply(calibrated)

    def _describe(self, combiner: str, raw: dict, calibrated: dict, truncated: dict, cut_items: dict
                  ) -> dict[str, Any]:
        meta: dict[str, Any] = {"member_set": self.member_set, "combiner": combiner, "members": list(raw)}
        for m in raw:
            meta[f"{m}_scores"] = raw[m].tolist()
            meta[f"{m}_calibrated_scores"] = calibrated[m].tolist()
        meta["member_truncated_texts"] = truncated
        meta["truncated_texts"] = sum(truncated.values())
        meta["member_truncated_items"] = cut_items
        meta["truncated_items"] = sorted({k for items in cut_items.values() for k in items})
        return meta

    def truncation_rule(self) -> str:
        return "each member's own input limit (metadata['member_truncated_items'] says which member cut which item)"

    def _metadata(self) -> dict[str, Any]:
        return dict(self._call_meta)

