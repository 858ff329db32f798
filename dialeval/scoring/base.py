"""The scoring API shared by every metric.

``scorer.score(contexts=..., responses=..., references=None, batch_size=..., progress_bar=None, device=None)``
and ``scorer.score_dialogues(dialogues=..., ...)`` return a :class:`ScoreOutput`: per-item scores in input order,
a system score (their mean), metadata and a signature string that names the metric, a hash of the weights that
produced the score, the CPU thread count where a torch model ran on the CPU (it changes the last float32 bits) and
the versions of the packages involved.

A metric subclasses :class:`Scorer` and implements ``_score_items`` (turn level). Dialogue level defaults to the
mean of the turn-level scores of every turn after the first, each scored against the turns before it; metrics
with a native dialogue-level model override ``_score_dialogues``.

**Truncation**: an input longer than the metric's model reads is cut, never refused. A call that cut any item warns
once (a :class:`TruncationWarning` on stderr: how many items, the limit and which side was cut, from the scorer's
:meth:`Scorer.truncation_rule`); ``metadata["truncated_items"]`` lists them and the metric's own counts
(``truncated_texts``) stay beside it.

``scale="calibrated"`` (on both calls) reports each score as its percentile among human replies instead of the
metric's raw number (:mod:`dialeval.scoring.scales`); the raw scores stay in ``metadata["raw_scores"]``.
"""

from __future__ import annotations

import abc
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any, ClassVar

import numpy as np
import torch

from ..backbone.batching import progress_scope
from ..backbone.device import cpu_threads_label
from .calibration import EmpiricalCdf
from .scales import DEFAULT_SCALE, check_scale, scale_map, with_scale
from ..schema import (
    Dialogue,
    InputError,
    ScoringItem,
    SkippedItem,
    normalize_dialogues,
    normalize_items,
)

__all__ = ["ScoreOutput", "Scorer", "TruncationWarning", "package_versions", "quiet_truncation", "truncation_message"]


class TruncationWarning(UserWarning):
    """A scoring call cut inputs longer than its model reads (the message says how many, the limit and the side)."""


@contextmanager
def quiet_truncation() -> Iterator[None]:
    """Scoring calls inside do not warn about what they cut: their caller says it once for all of them (a
    combination of metrics, a ``dialeval score`` or ``benchmark`` run), from ``metadata["truncated_items"]``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncationWarning)
        yield


def truncation_message(metric: str, n_cut: int, n_items: int, rule: str | None) -> str:
    """The one message about what a call (or a whole ``dialeval score`` run) cut."""
    verb = "was" if n_cut == 1 else "were"
    return (f"{metric}: {n_cut} of {n_items} item{'' if n_items == 1 else 's'} {verb} cut to fit "
            f"{rule or 'the input limit of its model'}")


def _version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "none"


def package_versions() -> dict[str, str]:
    return {name: _version(name) for name in ("dialeval", "torch", "transformers")}


@dataclass
class ScoreOutput:
    """Per-item ``scores`` in input order (``None`` for an item skipped under ``empty_turns="skip"``), the
    ``system_score`` (mean over the scored items), the ``signature`` and ``metadata`` (``n_items``, ``device``,
    ``seconds``, ``scale``, the metric's own counts such as ``truncated_texts``, ``skipped`` under ``"skip"``, and
    ``raw_scores`` on the calibrated scale)."""

    scores: list[float | None]
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
    #: How the metric scores an item without references, where it can (a setting that finds one), named in the
    #: error a call without them gets (:meth:`missing_references`); empty where it cannot.
    without_references: ClassVar[str] = ""
    #: Level the metric was designed for; dialogue-level metrics still score turns within their dialogue.
    level: ClassVar[str] = "turn"

    #: Where this scorer's torch model computes: a resolved ``torch.device`` for a scorer that runs one (set by
    #: :class:`~dialeval.scoring.learned.LearnedScorer` and the encoder baselines, and kept current by :meth:`to`),
    #: ``None`` for one that computes without torch (overlap, GloVe, length).
    device: torch.device | None

    def __init__(self, *, device: str | torch.device | None = None) -> None:
        """``device`` is accepted by every scorer so that ``load_scorer(name, device=...)`` works for all of them;
        a scorer without a torch model ignores it. Subclasses that run a model resolve it (and check it is present
        on this machine) with :func:`~dialeval.backbone.device.resolve_device`."""
        self.device = None

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
        extra: dict[str, Any] = {"dialogue_aggregation": "mean of turn scores (turns 2..n)",
                                 "turn_scores": per_dialogue}
        cut_turns = self._metadata().get("truncated_items")
        if cut_turns is not None:  # the turns' places -> their dialogues'
            extra["truncated_items"] = sorted({owner[k] for k in cut_turns})
        return scores, extra

    def fingerprint(self) -> dict[str, str]:
        """Components that identify what produced a score (weights hashes, settings)."""
        return {}

    def truncation_rule(self) -> str | None:
        """What the metric's model reads at most and which side of a longer input is cut, for the truncation
        message (None for a metric that never cuts)."""
        return None

    def compute_device(self) -> torch.device | None:
        """The device this scorer's torch model runs on, i.e. :attr:`device`; ``None`` for a scorer without one
        (overlap, GloVe). The signature's ``cpu_threads`` field is derived from it."""
        return self.device

    def to(self, device: str | torch.device | None) -> Scorer:
        """Move the metric's models to ``device`` (a scorer with a model raises
        :class:`~dialeval.backbone.device.DeviceUnavailable` for one this machine lacks); metrics without a model
        ignore it."""
        return self

    def missing_references(self, detail: str = "") -> str:
        """The message of an error for items without the references the metric needs: it names the metric, then
        ``detail`` (what to pass), then :attr:`without_references`."""
        return (f"metric '{self.name}' needs references{detail}"
                + (f"; or {self.without_references}" if self.without_references else ""))

    # -- public API -----------------------------------------------------------------------------------------------
    @property
    def signature(self) -> str:
        parts = [f"metric:{self.name}"]
        parts += [f"{k}:{v}" for k, v in self.fingerprint().items()]
        # the CPU thread count changes the last bits of a torch model's scores (dialeval.backbone.device)
        parts += [f"{k}:{v}" for k, v in cpu_threads_label(self.compute_device()).items()]
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
        empty_turns: str = "error",
        scale: str = DEFAULT_SCALE,
    ) -> ScoreOutput:
        """Score context-response pairs; see :mod:`dialeval.schema` for the accepted input forms.

        ``empty_turns="skip"`` scores the items without an empty turn, response or reference and gives the others
        the score ``None`` (their index and reason are in ``metadata["skipped"]``); the system score is the mean
        over the scored items. The default, ``"error"``, raises :class:`~dialeval.errors.EmptyTurnError`.
        ``scale="calibrated"`` reports percentiles among human replies (module docstring); a metric without a
        fitted map refuses it before scoring, naming the command that fits one.
        """
        items = normalize_items(contexts, responses, references, empty_turns=empty_turns)
        if self.requires_references and references is None:
            raise InputError(self.missing_references("; pass references=[...] (one per item)"))
        self._check_batch_size(batch_size)
        cdf = self.scale_map(scale, "turn")
        if device is not None:
            self.to(device)
        kept = [i for i, item in enumerate(items) if isinstance(item, ScoringItem)]
        start = time.perf_counter()
        with progress_scope(self.name, progress_bar):
            scores = self._score_items([items[i] for i in kept], batch_size=batch_size, progress_bar=progress_bar)
        return self._output(self._finite(scores, kept), items, kept, start, batch_size, level="turn",
                            empty_turns=empty_turns, scale=scale, cdf=cdf)

    def score_dialogues(
        self,
        *,
        dialogues: Sequence,
        batch_size: int = 32,
        progress_bar: bool | None = None,
        device: str | torch.device | None = None,
        empty_turns: str = "error",
        scale: str = DEFAULT_SCALE,
    ) -> ScoreOutput:
        """Score whole dialogues (each a list of turns or ``{"role", "content"}`` messages).

        ``empty_turns`` and ``scale`` as in :meth:`score`: under ``"skip"`` a dialogue with an empty turn gets the
        score ``None``; the calibrated scale of dialogue scores has its own map, fitted on whole dialogues.
        """
        if self.requires_references:
            raise InputError(self.missing_references(" and cannot score dialogues on their own"))
        normalized = normalize_dialogues(dialogues, min_turns=2, empty_turns=empty_turns)
        self._check_batch_size(batch_size)
        cdf = self.scale_map(scale, "dialogue")
        if device is not None:
            self.to(device)
        kept = [i for i, d in enumerate(normalized) if isinstance(d, Dialogue)]
        start = time.perf_counter()
        with progress_scope(self.name, progress_bar):
            scores, extra = self._score_dialogues([normalized[i] for i in kept], batch_size=batch_size,
                                                  progress_bar=progress_bar)
        return self._output(self._finite(scores, kept), normalized, kept, start, batch_size, level="dialogue",
                            extra=extra, empty_turns=empty_turns, scale=scale, cdf=cdf)

    def score_batch(self, batch: Mapping[str, list], *, empty_turns: str = "error") -> dict[str, Any]:
        """Pure batch function for ``datasets.map(batched=True)`` / Ray ``map_batches``.

        ``batch`` holds ``contexts`` and ``responses`` (and ``references`` for referenced metrics), or
        ``dialogues``; returns ``{"score": array}``. With ``empty_turns="skip"`` (pass it through ``fn_kwargs``)
        it returns ``{"score": [float | None], "skipped_reason": [str | None]}``, one entry per row.
        """
        if "dialogues" in batch:
            out = self.score_dialogues(dialogues=batch["dialogues"], batch_size=len(batch["dialogues"]) or 1,
                                       progress_bar=False, empty_turns=empty_turns)
        else:
            out = self.score(
                contexts=batch["contexts"],
                responses=batch["responses"],
                references=batch.get("references"),
                batch_size=max(1, len(batch["responses"])),
                progress_bar=False,
                empty_turns=empty_turns,
            )
        if empty_turns == "error":
            return {"score": np.asarray(out.scores, dtype=np.float64)}
        reasons = {s["index"]: s["reason"] for s in out.metadata["skipped"]}
        return {"score": out.scores, "skipped_reason": [reasons.get(i) for i in range(len(out.scores))]}

    def scale_map(self, scale: str, level: str) -> EmpiricalCdf | None:
        """The map of this scorer's ``level`` scores onto ``scale`` (None for the raw scale); a
        :class:`~dialeval.scoring.calibration.CalibrationError` naming the metric and the command that fits one
        when it has none."""
        check_scale(scale)
        return None if scale == DEFAULT_SCALE else scale_map(self.name, self.fingerprint(), level)

    # -- helpers --------------------------------------------------------------------------------------------------
    @staticmethod
    def _check_batch_size(batch_size: int) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise InputError(f"batch_size must be a positive integer, got {batch_size!r}")

    def _finite(self, scores: np.ndarray, kept: list[int]) -> np.ndarray:
        """``scores`` of the ``kept`` items as float64; a non-finite one is a bug, named by its input index."""
        scores = np.asarray(scores, dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(scores))
        if bad.size:
            where = [kept[i] for i in bad[:10].tolist()]
            raise RuntimeError(f"metric '{self.name}' produced non-finite scores at items {where}")
        return scores

    def _metadata(self) -> dict[str, Any]:
        """Extra metadata a metric reports (e.g. truncation counts); merged into every output."""
        return {}

    def _output(
        self, scores: np.ndarray, items: Sequence, kept: list[int], start: float, batch_size: int, *, level: str,
        extra: dict | None = None, empty_turns: str, scale: str = DEFAULT_SCALE, cdf: EmpiricalCdf | None = None,
    ) -> ScoreOutput:
        """The output for ``items`` (normalised, skipped ones included) from the ``scores`` of the ``kept`` ones,
        mapped by ``cdf`` onto ``scale`` when one is given."""
        seconds = round(time.perf_counter() - start, 4)
        meta = {
            "metric": self.name,
            "level": level,
            "n_items": len(items),
            "batch_size": batch_size,
            # where the torch model ran; a scorer without one (overlap, GloVe) computes on the CPU
            "device": "cpu" if self.device is None else str(self.device),
            "seconds": seconds,
            "scale": scale,
            **self._metadata(),
            **(extra or {}),
        }
        if cdf is not None:
            meta["raw_scores"] = scores.tolist()
            scores = cdf(scores)
        per_item: list[float | None] = [None] * len(items)
        for i, value in zip(kept, scores.tolist()):
            per_item[i] = value
        if empty_turns == "skip":
            meta = _to_input_positions(meta, kept, len(items))
            meta["n_scored"] = len(kept)
            meta["skipped"] = [{"index": s.index, "reason": s.reason} for s in items if isinstance(s, SkippedItem)]
        if meta.get("truncated_items"):
            warnings.warn(TruncationWarning(truncation_message(self.name, len(meta["truncated_items"]), len(items),
                                                               self.truncation_rule())), stacklevel=3)
        system = float(scores.mean()) if scores.size else float("nan")
        return ScoreOutput(scores=per_item, system_score=system, signature=with_scale(self.signature, scale),
                           metadata=meta)


def _to_input_positions(meta: dict[str, Any], kept: list[int], n_items: int) -> dict[str, Any]:
    """Metadata that names items by position, moved from positions among the scored items to input positions.

    The metric saw only the ``kept`` items: lists of item indices (keys ending in ``_items``, or a mapping of such
    lists, e.g. each member's) are mapped back,
    and per-item lists (keys ending in ``_scores``, one entry per scored item or dialogue, e.g. ``turn_scores``)
    get ``None`` at the skipped ones.
    """
    out = dict(meta)
    for key, value in meta.items():
        if key.endswith("_items") and isinstance(value, list):
            out[key] = [kept[i] for i in value]
        elif key.endswith("_items") and isinstance(value, dict):
            out[key] = {k: [kept[i] for i in v] for k, v in value.items()}
        elif key.endswith("_scores") and isinstance(value, list) and len(value) == len(kept):
            per_item: list = [None] * n_items
            for i, entry in zip(kept, value):
                per_item[i] = entry
            out[key] = per_item
    return out
