"""The scoring API shared by every metric.

``scorer.score(contexts=..., responses=..., references=None, batch_size=..., progress_bar=None, device=None)``
and ``scorer.score_dialogues(dialogues=..., ...)`` return a :class:`ScoreOutput`: per-item scores in input order,
a system score (their mean), metadata and a signature string that names the metric, a hash of the weights that
produced the score and the versions of the packages involved.

A metric subclasses :class:`Scorer` and implements ``_score_items`` (turn level). Dialogue level defaults to the
mean of the turn-level scores of every turn after the first, each scored against the turns before it; metrics
with a native dialogue-level model override ``_score_dialogues``.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any, ClassVar

import numpy as np
import torch

from ..schema import Dialogue, InputError, ScoringItem, normalize_dialogues, normalize_items

__all__ = ["ScoreOutput", "Scorer", "package_versions"]


def _version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "none"


def package_versions() -> dict[str, str]:
    return {name: _version(name) for name in ("dialeval", "torch", "transformers")}


@dataclass
class ScoreOutput:
    scores: list[float]
    system_score: float
    signature: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.scores)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Scorer(abc.ABC):
    """Base class of every metric. Subclasses set ``name`` and implement ``_score_items``."""

    name: ClassVar[str]
    requires_references: ClassVar[bool] = False
    #: Level the metric was designed for; dialogue-level metrics still score turns within their dialogue.
    level: ClassVar[str] = "turn"

    def __init__(self, *, device: str | torch.device | None = None) -> None:
        self.device = device

    # -- what subclasses provide ------------------------------------------------------------------------------
    @abc.abstractmethod
    def _score_items(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        """Scores for normalised items, float array in input order."""

    def _score_dialogues(
        self, dialogues: list[Dialogue], *, batch_size: int, progress_bar: bool | None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        items, owner = [], []
        for d, dialogue in enumerate(dialogues):
            for t in range(1, len(dialogue.turns)):
                items.append(ScoringItem(context=dialogue.turns[:t], response=dialogue.turns[t].text))
                owner.append(d)
        turn_scores = self._score_items(items, batch_size=batch_size, progress_bar=progress_bar)
        owner_arr = np.asarray(owner)
        scores = np.array([turn_scores[owner_arr == d].mean() for d in range(len(dialogues))], dtype=np.float64)
        per_dialogue = [turn_scores[owner_arr == d].tolist() for d in range(len(dialogues))]
        return scores, {"dialogue_aggregation": "mean of turn scores (turns 2..n)", "turn_scores": per_dialogue}

    def fingerprint(self) -> dict[str, str]:
        """Components that identify what produced a score (weights hashes, settings)."""
        return {}

    def to(self, device: str | torch.device | None) -> "Scorer":
        """Move the metric's models to ``device``; metrics without a model ignore it."""
        self.device = device
        return self

    # -- public API -----------------------------------------------------------------------------------------------
    @property
    def signature(self) -> str:
        parts = [f"metric:{self.name}"]
        parts += [f"{k}:{v}" for k, v in self.fingerprint().items()]
        parts += [f"{k}:{v}" for k, v in package_versions().items()]
        return "|".join(parts)

    def score(
        self,
        *,
        contexts: Sequence,
        responses: Sequence,
        references: Sequence | None = None,
        batch_size: int = 32,
        progress_bar: bool | None = None,
        device: str | torch.device | None = None,
    ) -> ScoreOutput:
        """Score context-response pairs; see :mod:`dialeval.schema` for the accepted input forms."""
        items = normalize_items(contexts, responses, references)
        if self.requires_references and references is None:
            raise InputError(f"metric '{self.name}' needs references; pass references=[...] (one per item)")
        self._check_batch_size(batch_size)
        if device is not None:
            self.to(device)
        start = time.perf_counter()
        scores = self._finite(self._score_items(items, batch_size=batch_size, progress_bar=progress_bar))
        return self._output(scores, start, batch_size, level="turn")

    def score_dialogues(
        self,
        *,
        dialogues: Sequence,
        batch_size: int = 32,
        progress_bar: bool | None = None,
        device: str | torch.device | None = None,
    ) -> ScoreOutput:
        """Score whole dialogues (each a list of turns or ``{"role", "content"}`` messages)."""
        if self.requires_references:
            raise InputError(f"metric '{self.name}' needs references and cannot score dialogues on their own")
        normalized = normalize_dialogues(dialogues, min_turns=2)
        self._check_batch_size(batch_size)
        if device is not None:
            self.to(device)
        start = time.perf_counter()
        scores, extra = self._score_dialogues(normalized, batch_size=batch_size, progress_bar=progress_bar)
        return self._output(self._finite(scores), start, batch_size, level="dialogue", extra=extra)

    def score_batch(self, batch: Mapping[str, list]) -> dict[str, np.ndarray]:
        """Pure batch function for ``datasets.map(batched=True)`` / Ray ``map_batches``.

        ``batch`` holds ``contexts`` and ``responses`` (and ``references`` for referenced metrics), or
        ``dialogues``; returns ``{"score": array}``.
        """
        if "dialogues" in batch:
            out = self.score_dialogues(dialogues=batch["dialogues"], batch_size=len(batch["dialogues"]) or 1)
        else:
            out = self.score(
                contexts=batch["contexts"],
                responses=batch["responses"],
                references=batch.get("references"),
                batch_size=max(1, len(batch["responses"])),
                progress_bar=False,
            )
        return {"score": np.asarray(out.scores, dtype=np.float64)}

    # -- helpers --------------------------------------------------------------------------------------------------
    @staticmethod
    def _check_batch_size(batch_size: int) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise InputError(f"batch_size must be a positive integer, got {batch_size!r}")

    def _finite(self, scores: np.ndarray) -> np.ndarray:
        scores = np.asarray(scores, dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(scores))
        if bad.size:
            raise RuntimeError(f"metric '{self.name}' produced non-finite scores at items {bad[:10].tolist()}")
        return scores

    def _metadata(self) -> dict[str, Any]:
        """Extra metadata a metric reports (e.g. truncation counts); merged into every output."""
        return {}

    def _output(
        self, scores: np.ndarray, start: float, batch_size: int, *, level: str, extra: dict | None = None
    ) -> ScoreOutput:
        meta = {
            "metric": self.name,
            "level": level,
            "n_items": int(scores.size),
            "batch_size": batch_size,
            "device": str(self.device or "cpu"),
            "seconds": round(time.perf_counter() - start, 4),
            **self._metadata(),
            **(extra or {}),
        }
        system = float(scores.mean()) if scores.size else float("nan")
        return ScoreOutput(scores=scores.tolist(), system_score=system, signature=self.signature, metadata=meta)
