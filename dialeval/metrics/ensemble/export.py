"""The ensemble's checkpoint as ``dialeval export`` and its model card see it: the members it pins
(:class:`~dialeval.scoring.spec.CombinationExportSpec` of the ensemble's spec names :func:`exported_members`).

The exported folder is the checkpoint's ``config.json`` as it is and the model card; the card lists each member with
its pinned checkpoint sha256. An export is refused when the installed dialeval could not load it: the config must
read as :class:`~.checkpoint.EnsembleConfig` reads it, and every member pinned by a checkpoint must find that
checkpoint installed (same sha256), as loading checks it. Loading also compares the rest of a member's identity
(encoder hash, settings); that needs the member loaded, which an export does not do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...scoring.checkpoints import checkpoint_fingerprint, resolve_checkpoint
from ...scoring.registry import scorer_class
from ...scoring.spec import CombinationMember
from .checkpoint import EnsembleConfig
from .scorer import EnsembleScorer, MemberChanged

__all__ = ["exported_members"]


def exported_members(config: Mapping[str, Any], where: str) -> list[CombinationMember]:
    """Every member of the ensemble ``config`` (a ``config.json`` as a dict; ``where`` names it in errors), in the
    config's order, with the member sets that use it; :class:`~.checkpoint.CheckpointError` for a config that
    loading refuses, :class:`~.scorer.MemberChanged` for a member whose installed checkpoint is not the pinned one."""
    parsed = EnsembleConfig.from_json(config, where=where)
    out = []
    for name, member in parsed.members.items():
        pinned = parsed.identities[name]
        if "checkpoint_sha256" in pinned:
            scorer = scorer_class(member.metric)
            path = resolve_checkpoint(member.options.get("checkpoint"), scorer.checkpoint_dir, scorer.train_command)
            installed = checkpoint_fingerprint(path)
            if installed != pinned["checkpoint_sha256"]:
                raise MemberChanged(
                    f"{where}: member {name} pins {member.metric} checkpoint sha256 {pinned['checkpoint_sha256']}, "
                    f"but the installed one ({path}) is {installed}: loading this ensemble would refuse it; refit it "
                    f"(`{EnsembleScorer.train_command} --output-dir runs/ensemble`) and export runs/ensemble")
        sets = tuple(s for s, chosen in parsed.member_sets.items()
                     if name in chosen.members or name in chosen.dialogue_members)
        out.append(CombinationMember(name=name, metric=member.metric, identity=dict(pinned), sets=sets))
    return out
