"""The base class of every learned metric: what the six learned metrics (grade, dynaeval, bert_ruber, pone, rade,
amr_eval; each declared by a ``MetricSpec`` in ``dialeval/metrics/<name>/spec.py``) share, written once.

A :class:`LearnedScorer` subclass names its checkpoint folder and training command, says how to load its model from
a checkpoint folder, and implements ``_score_items`` (and ``_score_dialogues`` where it has a native dialogue
score). The base class does the rest:

* **checkpoint**: a shipped checkpoint's name (``None``/``"default"``, ``"base"`` where the metric ships one), a
  folder with ``config.json``, or a training run folder, which stands for its ``best/``
  (:mod:`dialeval.scoring.checkpoints`);
* **device**: one ``device`` argument (``None``: Accelerate's choice; one this machine lacks raises
  :class:`~dialeval.backbone.device.DeviceUnavailable` at load time), kept resolved in one attribute,
  :attr:`device`; :meth:`to` (and ``score(device=...)``) checks and moves the model and every encoder the scorer
  owns, and the metadata reports the device that was really used;
* **signature**: the checkpoint's name (a shipped one's: ``checkpoint:default``, ``checkpoint:base``; see
  :func:`~dialeval.scoring.checkpoints.checkpoint_label`) and content hash plus the scorer's settings
  (:meth:`settings`);
* **batch-invariant forward passes**: :meth:`fixed_row_forward` runs a model over chunks of exactly
  :data:`~dialeval.backbone.batching.FORWARD_ROWS` rows, so an item's score never depends on its batch-mates.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch

from ..backbone.batching import fixed_row_chunks, progress
from ..backbone.device import resolve_device
from ..backbone.encoder import Encoder, check_encoder
from .base import Scorer
from .checkpoints import checkpoint_fingerprint, checkpoint_label, resolve_checkpoint


def load_pretrained(model_class, path: Path, **kwargs):
    """``model_class.from_pretrained(path)`` in eval mode, without transformers' weight-loading progress bar."""
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return model_class.from_pretrained(path, **kwargs).eval()
    finally:
        if bars:
            hf_logging.enable_progress_bar()


class LearnedScorer(Scorer):
    """A metric backed by a trained checkpoint (see the module docstring)."""

    #: folder name under ``dialeval/checkpoints`` (the shipped checkpoints) and in error messages
    checkpoint_dir: ClassVar[str]
    #: the command that trains a checkpoint, quoted in the error for a missing one
    train_command: ClassVar[str]
    #: the files and folders the scorer reads from its checkpoint beside the model (GRADE: keywords.json, graph/),
    #: each found by :func:`~dialeval.scoring.shared_files.checkpoint_path`: a checkpoint may take them from the one
    #: beside it (``dialeval checkpoint share``)
    table_files: ClassVar[tuple[str, ...]] = ()

    def __init__(self, checkpoint: str | os.PathLike | None = None, *, device: str | torch.device | None = None
                 ) -> None:
        super().__init__()
        # first: a device this machine lacks fails (DeviceUnavailable) before any weights are read
        self.device = resolve_device(device)
        self.checkpoint = resolve_checkpoint(checkpoint, self.checkpoint_dir, self.train_command)
        self.model = self.load_model(self.checkpoint).to(self.device)
        self._checkpoint_sha256 = checkpoint_fingerprint(self.checkpoint)

    # -- what subclasses provide ------------------------------------------------------------------------------
    def load_model(self, path: Path) -> torch.nn.Module:
        """The checkpoint's model, in eval mode (on CPU; the base class moves it)."""
        raise NotImplementedError

    def settings(self) -> dict[str, str]:
        """Scorer settings that change scores (they go into the signature)."""
        return {}

    # -- shared behaviour -------------------------------------------------------------------------------------
    def checkpoint_encoder(self, recorded: str, recorded_sha256: str, requested: str | os.PathLike | None = None,
                           **kwargs) -> Encoder:
        """The text encoder the checkpoint was trained on, on the scorer's device: ``recorded`` (its name as the
        config records it), or ``requested`` (a name or folder the user gave), which must be that encoder: one whose
        weights differ from ``recorded_sha256`` is refused with an error naming both
        (:func:`~dialeval.backbone.encoder.check_encoder`). ``kwargs`` go to :class:`Encoder`."""
        check_encoder(self.checkpoint, recorded, recorded_sha256, requested)
        return Encoder(recorded if requested is None else requested, device=self.device, **kwargs)

    def base_encoder_tokenizer(self):
        """The tokenizer of the encoder a fine-tuned model (GRADE, RADE, the AMR evaluator) was built on, its
        config's ``base_encoder``, after refusing an installed base encoder whose weights differ from those it was
        trained on (``base_encoder_sha256``; :func:`~dialeval.backbone.encoder.check_encoder`): the model's frozen
        layers come from it."""
        from ..backbone.encoder import base_tokenizer

        cfg = self.model.config
        check_encoder(self.checkpoint, cfg.base_encoder, getattr(cfg, "base_encoder_sha256", ""), None)
        return base_tokenizer(cfg.base_encoder)

    @property
    def encoders(self) -> list[Encoder]:
        """The encoders this scorer owns (moved with :meth:`to`)."""
        return [v for v in vars(self).values() if isinstance(v, Encoder)]

    def fingerprint(self) -> dict[str, str]:
        return {"checkpoint": checkpoint_label(self.checkpoint), "checkpoint_sha256": self._checkpoint_sha256,
                **self.settings()}

    def to(self, device: str | torch.device | None) -> "LearnedScorer":
        """Move the model and every encoder this scorer owns to ``device`` (``None``: Accelerate's choice); a device
        this machine lacks raises :class:`~dialeval.backbone.device.DeviceUnavailable` and moves nothing."""
        self.device = resolve_device(device)
        self.model.to(self.device)
        for encoder in self.encoders:
            encoder.to(self.device)
        return self

    def fixed_row_forward(self, n_items: int, batches: Sequence[Sequence[int]],
                          forward: Callable[[list[int]], torch.Tensor], *, progress_bar: bool | None = None,
                          desc: str | None = None) -> np.ndarray:
        """Scores of ``n_items`` items, in input order, from ``forward(rows) -> tensor[len(rows)]``.

        ``batches`` are lists of item indices (e.g. length-sorted); each is cut into chunks of exactly
        ``FORWARD_ROWS`` indices (the last topped up with copies whose outputs are dropped), so every forward pass
        has the same shape whatever the batch size.
        """
        scores = np.zeros(n_items, dtype=np.float64)
        with torch.inference_mode():
            for batch in progress(batches, total=len(batches), enabled=progress_bar, desc=desc or "scoring"):
                for rows, n_real in fixed_row_chunks(batch):
                    scores[rows[:n_real]] = forward(rows)[:n_real].double().cpu().numpy()
        return scores
