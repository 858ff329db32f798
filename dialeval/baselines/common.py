"""Pieces shared by the baseline metrics: the encoder-owning base class and small helpers."""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import torch

from ..backbone import Encoder, default_encoder_path, resolve_device
from ..scoring import Scorer

__all__ = ["EncoderScorer", "dist_version", "encoder_label"]

DEFAULT_ENCODER_LABEL = "all-MiniLM-L6-v2"


def dist_version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "none"


def encoder_label(encoder: Encoder) -> str:
    """A readable name for an encoder: the bundled default is named after its model, not its folder."""
    try:
        if os.path.samefile(encoder.name_or_path, default_encoder_path()):
            return DEFAULT_ENCODER_LABEL
    except (OSError, ImportError):
        pass
    return encoder.display_name


class EncoderScorer(Scorer):
    """A scorer that lazily owns one :class:`~dialeval.backbone.Encoder`.

    ``encoder`` is a local path, a Hub id, ``"minilm"``/``None`` (the bundled all-MiniLM-L6-v2, offline) or an
    already loaded :class:`Encoder` (to share one model and its embedding cache between scorers). The encoder is
    loaded on first use, on :attr:`device`: ``device`` resolved at construction (``None``: Accelerate's choice, or
    where an already loaded encoder is; one this machine lacks raises
    :class:`~dialeval.backbone.device.DeviceUnavailable`). A shared encoder another scorer moved elsewhere is moved
    back to this scorer's device before it computes. ``max_length`` caps the encoder input length (default: the
    encoder's own limit, 512 tokens for MiniLM).

    ``fingerprint()`` (and therefore the signature) names the encoder, the sha256 of its weight files and the
    effective maximum length; it loads the encoder if needed. ``_metadata()`` reports, for the last call, how
    many distinct input texts were longer than ``max_length`` and therefore truncated (``truncated_texts``).
    """

    def __init__(
        self,
        encoder: str | os.PathLike | Encoder | None = None,
        *,
        device: str | torch.device | None = None,
        max_length: int | None = None,
    ) -> None:
        super().__init__()
        if isinstance(encoder, Encoder):
            if max_length is not None and max_length != encoder.max_length:
                raise ValueError("max_length cannot be changed on an already loaded Encoder; build a new one")
            self._encoder: Encoder | None = encoder
            if device is not None:
                encoder.to(device)
            self.device = encoder.device
        else:
            self._encoder = None
            self.device = resolve_device(device)
        self._encoder_spec = encoder
        self._max_length = max_length
        self._call_meta: dict[str, Any] = {}

    @property
    def encoder(self) -> Encoder:
        """The encoder on this scorer's :attr:`device`: loaded on first use, moved back if shared and moved."""
        if self._encoder is None:
            self._encoder = Encoder(self._encoder_spec, device=self.device, max_length=self._max_length)
        elif self._encoder.device != self.device:
            self._encoder.to(self.device)
        return self._encoder

    def to(self, device: str | torch.device | None) -> "EncoderScorer":
        """Compute on ``device`` from now on (``None``: Accelerate's choice); a device this machine lacks raises
        :class:`~dialeval.backbone.device.DeviceUnavailable` and changes nothing."""
        self.device = resolve_device(device)
        if self._encoder is not None:
            self._encoder.to(self.device)
        return self

    def fingerprint(self) -> dict[str, str]:
        enc = self.encoder
        return {"encoder": encoder_label(enc), "encoder_sha256": enc.fingerprint, "max_length": str(enc.max_length)}

    def truncation_rule(self) -> str:
        return f"the encoder's {self.encoder.max_length} tokens per text, each keeping its first"

    def count_truncated(self, texts: list[str]) -> int:
        """Distinct texts whose token count (special tokens included) exceeds the encoder's ``max_length``."""
        return self.encoder.count_truncated(texts)

    def _metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {}
        if self._encoder is not None:
            meta.update(encoder=encoder_label(self._encoder), max_length=self._encoder.max_length)
        meta.update(self._call_meta)
        return meta
