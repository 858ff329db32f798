"""The outputs of an encoder's frozen lower layers, computed once per text and reused: ``--frozen-cache``.

A recipe that trains only the top layers of its encoder (RADE's default trains the top two of MiniLM's six) runs the
lower layers forward on every step, though their weights never change: over ten epochs each text goes through them
ten times. With the cache, a token row's states after the frozen layers are computed the first time a batch holds
the row and kept (unpadded, on the CPU), keyed by the row's tokens; a batch that holds the row again gathers them
and runs only the trained layers.

The frozen layers then run without dropout (the model's ``frozen_states`` computes them in eval mode, so that a
text always gets the same states), where a run without the cache draws dropout in them on every step: that is the
recipe change the option makes, and why it is an option, measured on validation (docs/training.md), not a
default. Validation and
scoring run the whole encoder in eval mode, as before.

Where the rows live (:class:`MemoryRows`, :class:`DiskRows`):

- in memory (the default): one vector of the hidden size per token kept, 1.5 KB in float32 for MiniLM's 384
  (RADE's stage 1 on every DailyDialog++ context: about 3M evaluator tokens, 4.6 GB, and the distinct contexts'
  tokens). Nothing is saved with the run: a resumed run fills the cache again as its batches come.
- on disk, ``--frozen-cache-dir DIR``: the rows are appended to one file, ``DIR/rows.bin``, and the process holds
  only an index (row key -> offset, tokens, width), rebuilt by reading the records' headers when the store opens; a
  batch's rows are read back with ``os.pread``. The folder outlives the process: a resumed run, or a later run with
  the same frozen part, finds the rows there. A process killed mid-write leaves a partial last record, which
  opening cuts off (the file is truncated to its last whole record), so it is computed again, never read. The
  folder's ``manifest.json`` records what the states depend on (:func:`frozen_manifest`); opening a folder whose
  manifest differs is an error naming the field and both values. One process at a time (an exclusive lock). The
  manifest does not record the device the states were computed on (CPU and GPU kernels round differently).

``--frozen-cache-dtype bfloat16`` stores each state rounded to bfloat16 (half the bytes: 1.5 KB a token for MPNet's
768), in either place; the trained layers then run from the rounded states (as float32 numbers), a second change to
the recipe beside the missing dropout. float32 (the default) keeps the states as computed, to the bit.

The states of a row are a function of its tokens, the frozen weights and the arithmetic that computed them, not of
``--max-seq-length``: a row cut shorter is another key.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from ..errors import DialevalError

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
MANIFEST_FILE = "manifest.json"
ROWS_FILE = "rows.bin"
#: A record of ``rows.bin``: this header (magic, key bytes, tokens, width), the key, then tokens x width states.
RECORD = struct.Struct("<4sIII")
MAGIC = b"DFS1"


class FrozenCacheError(DialevalError, ValueError):
    """A frozen-cache folder or option that cannot be used (the message names the folder and the field)."""


def frozen_weights_sha256(encoder: torch.nn.Module, frozen_layers: int) -> str:
    """sha256 of the weights that compute the frozen states: the encoder's embeddings and its lower
    ``frozen_layers`` layers (each tensor's name, dtype, shape and bytes, in the modules' order)."""
    digest = hashlib.sha256()
    for prefix, module in [("embeddings", encoder.embeddings),
                           *((f"layer.{i}", layer) for i, layer in enumerate(encoder.encoder.layer[:frozen_layers]))]:
        for name, tensor in module.state_dict().items():
            t = tensor.detach().to("cpu").contiguous()
            digest.update(f"{prefix}.{name}|{t.dtype}|{tuple(t.shape)}".encode())
            digest.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return digest.hexdigest()


def frozen_manifest(model: Any, *, precision: str, dtype: str) -> dict[str, Any]:
    """What a model's frozen states depend on, as a disk store's ``manifest.json`` records it: the model type, its
    encoder (name and weights sha256, from the model's config), the frozen layers (how many: the states are the
    output of the last of them) and the sha256 of their weights and the embeddings' as the model holds them (a run
    initialised from another run's checkpoint may hold other weights there), the autocast precision that computes
    them (the recipe's ``--precision``) and the storage dtype."""
    frozen = model.frozen_layers()
    cfg = model.config
    return {"model_type": cfg.model_type, "encoder": cfg.base_encoder,
            "encoder_sha256": cfg.base_encoder_sha256, "frozen_layers": frozen,
            "frozen_weights_sha256": frozen_weights_sha256(model.encoder, frozen), "precision": precision,
            "dtype": dtype}


def frozen_state_cache(model: Any, opts: Any) -> FrozenStateCache | None:
    """The cache a recipe's options ask for (None without ``--frozen-cache``), computing with
    ``model.frozen_states``: in memory, or in ``opts.frozen_cache_dir`` with the manifest of ``model``."""
    if not opts.frozen_cache:
        return None
    if opts.frozen_cache_dir is None:
        store: MemoryRows | DiskRows = MemoryRows(opts.frozen_cache_dtype)
    else:
        store = DiskRows(opts.frozen_cache_dir, frozen_manifest(model, precision=opts.precision,
                                                               dtype=opts.frozen_cache_dtype))
    return FrozenStateCache(model.frozen_states, store)


def _dtype(name: str) -> torch.dtype:
    if name not in DTYPES:
        raise FrozenCacheError(f"frozen-cache dtype must be one of {', '.join(DTYPES)}, got {name!r}")
    return DTYPES[name]


class MemoryRows:
    """Rows kept in this process's memory, as ``dtype`` tensors."""

    def __init__(self, dtype: str = "float32") -> None:
        self.dtype_name, self.dtype = dtype, _dtype(dtype)
        self.rows: dict[bytes, torch.Tensor] = {}
        self.tokens = self.bytes = 0
        self.rows_at_start = 0

    def __contains__(self, key: bytes) -> bool:
        return key in self.rows

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, rows: dict[bytes, torch.Tensor]) -> None:
        """Keep ``rows`` (key -> [tokens, width] tensor of ``dtype``, on the CPU, owning its memory)."""
        for key, states in rows.items():
            self.rows[key] = states
            self.tokens += len(states)
            self.bytes += states.numel() * states.element_size()

    def get(self, key: bytes) -> torch.Tensor:
        return self.rows[key]

    def report(self) -> dict[str, Any]:
        return {"store": "memory"}

    def close(self) -> None:
        """Nothing to release."""


class DiskRows:
    """Rows appended to ``directory/rows.bin`` (see the module doc), for the states described by ``manifest``
    (:func:`frozen_manifest`; its ``dtype`` is the storage dtype); the folder is created if missing."""

    def __init__(self, directory: str | os.PathLike, manifest: dict[str, Any]) -> None:
        self.directory = Path(directory)
        self.dtype_name, self.dtype = manifest["dtype"], _dtype(manifest["dtype"])
        self.itemsize = torch.tensor([], dtype=self.dtype).element_size()
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / ROWS_FILE
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.close()
            raise FrozenCacheError(f"frozen-cache folder {self.directory} is in use by another process (its "
                                   f"{ROWS_FILE} is locked)") from None
        try:
            self._check_manifest(manifest, has_rows=os.fstat(self.fd).st_size > 0)
            self.index: dict[bytes, tuple[int, int, int]] = {}  # key -> (offset of its states, tokens, width)
            self.tokens = self.bytes = 0
            self.discarded_bytes = self._read_index(path)
        except BaseException:
            self.close()
            raise
        self.rows_at_start = len(self.index)

    def _check_manifest(self, manifest: dict[str, Any], *, has_rows: bool) -> None:
        path = self.directory / MANIFEST_FILE
        if not path.exists():
            if has_rows:
                raise FrozenCacheError(f"frozen-cache folder {self.directory} holds {ROWS_FILE} but no "
                                       f"{MANIFEST_FILE}: what its states were computed from is unknown")
            temporary = path.with_suffix(".tmp")
            temporary.write_text(json.dumps(manifest, indent=1) + "\n")
            os.replace(temporary, path)
            return
        stored = json.loads(path.read_text())
        for field in sorted(set(stored) | set(manifest)):
            if stored.get(field) != manifest.get(field):
                raise FrozenCacheError(f"frozen-cache folder {self.directory}: its {MANIFEST_FILE} has {field} "
                                       f"{stored.get(field)!r}, this run's states have {manifest.get(field)!r} "
                                       "(another folder, or delete this one)")

    def _read_index(self, path: Path) -> int:
        """Index the whole records of ``rows.bin``; cut off a partial last one (a process killed mid-write).
        Returns the bytes cut off."""
        size = os.fstat(self.fd).st_size
        offset = 0
        while offset + RECORD.size <= size:
            magic, key_bytes, tokens, width = RECORD.unpack(os.pread(self.fd, RECORD.size, offset))
            if magic != MAGIC:
                raise FrozenCacheError(f"frozen-cache file {path}: no record at byte {offset} (the file is damaged: "
                                       "delete the folder)")
            start = offset + RECORD.size + key_bytes
            end = start + tokens * width * self.itemsize
            if end > size:
                break
            key = os.pread(self.fd, key_bytes, offset + RECORD.size)
            self.index[key] = (start, tokens, width)
            self.tokens += tokens
            self.bytes += end - start
            offset = end
        if offset < size:
            os.ftruncate(self.fd, offset)
        return size - offset

    def __contains__(self, key: bytes) -> bool:
        return key in self.index

    def __len__(self) -> int:
        return len(self.index)

    def add(self, rows: dict[bytes, torch.Tensor]) -> None:
        """Append ``rows`` (key -> [tokens, width] tensor of the storage dtype, on the CPU) in one write, then index
        them."""
        offset = os.fstat(self.fd).st_size
        parts, placed = [], {}
        for key, states in rows.items():
            tokens, width = states.shape
            parts += [RECORD.pack(MAGIC, len(key), tokens, width), key,
                      states.contiguous().view(torch.uint8).numpy().tobytes()]
            placed[key] = (offset + RECORD.size + len(key), tokens, width)
            offset = placed[key][0] + tokens * width * self.itemsize
        data = memoryview(b"".join(parts))
        while data:
            data = data[os.write(self.fd, data):]
        self.index.update(placed)
        self.tokens += sum(tokens for _, tokens, _ in placed.values())
        self.bytes += sum(tokens * width for _, tokens, width in placed.values()) * self.itemsize

    def get(self, key: bytes) -> torch.Tensor:
        start, tokens, width = self.index[key]
        data = bytearray(os.pread(self.fd, tokens * width * self.itemsize, start))
        return torch.frombuffer(data, dtype=self.dtype).view(tokens, width)

    def report(self) -> dict[str, Any]:
        return {"store": "disk", "directory": str(self.directory),
                "file_bytes": (self.directory / ROWS_FILE).stat().st_size,
                "discarded_bytes_at_start": self.discarded_bytes}

    def close(self) -> None:
        """Release the file (and its lock)."""
        if getattr(self, "fd", -1) >= 0:
            os.close(self.fd)
            self.fd = -1

    __del__ = close


class FrozenStateCache:
    """Per-row states of a model's frozen lower layers, keyed by the row's tokens (its ids and the other integer
    inputs given, e.g. token types, without padding): the states are a function of them alone, so a row seen
    again, in any batch, at any position, gets the states computed the first time. ``compute(input_ids,
    attention_mask, **inputs)`` returns the states [b, L, H] of a padded batch of rows (e.g.
    ``RadeModel.frozen_states``); ``store`` keeps them (default: in memory, float32)."""

    def __init__(self, compute: Callable[..., torch.Tensor], store: MemoryRows | DiskRows | None = None) -> None:
        self.compute = compute
        self.store = MemoryRows() if store is None else store
        self.hits = 0
        self.misses = 0

    @property
    def tokens(self) -> int:
        """Token states kept."""
        return self.store.tokens

    def report(self) -> dict[str, Any]:
        """Where the rows live, their dtype, what the cache holds (rows, tokens, the states' bytes), the rows it
        found at start (a disk store opened again) and how often a row asked for was kept (a run's
        ``summary.json``: ``frozen_cache``)."""
        store = self.store
        return {**store.report(), "dtype": store.dtype_name, "rows": len(store), "tokens": store.tokens,
                "bytes": store.bytes,
                "rows_at_start": store.rows_at_start, "hits": self.hits, "misses": self.misses}

    def close(self) -> None:
        """Release the store (a disk store's file and lock); the report stays readable."""
        self.store.close()

    def states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **inputs: torch.Tensor | None
               ) -> torch.Tensor:
        """The states [B, L, H] of the batch ``input_ids`` [B, L] (right-padded: ``attention_mask`` is 1 on a
        row's first tokens, 0 after), float32: the rows not kept yet are computed once each (with the batch's
        other inputs, e.g. ``token_type_ids``, cut to them) and kept; padding positions are zeros. On
        ``input_ids``' device."""
        counts = attention_mask.sum(1, keepdim=True)
        if not torch.equal(attention_mask.bool(), torch.arange(input_ids.shape[1], device=attention_mask.device)
                           < counts):
            raise ValueError("the frozen-state cache needs right-padded rows (attention_mask 1s, then 0s)")
        lengths = counts.squeeze(1).tolist()
        host = [t.cpu().numpy() for t in (input_ids, *(v for v in inputs.values() if v is not None))]  # one copy
        keys = [b"|".join(t[i, :lengths[i]].tobytes() for t in host) for i in range(len(lengths))]
        firsts: dict[bytes, int] = {}  # each row not kept yet -> its first place in the batch (computed once)
        for i, key in enumerate(keys):
            if key not in self.store:
                firsts.setdefault(key, i)
        missing = list(firsts.values())
        fresh: dict[bytes, torch.Tensor] = {}
        if missing:
            width = max(lengths[i] for i in missing)
            pick = torch.tensor(missing, device=input_ids.device)
            computed = self.compute(input_ids[pick, :width], attention_mask[pick, :width],
                                    **{k: None if v is None else v[pick, :width] for k, v in inputs.items()})
            for j, i in enumerate(missing):
                fresh[keys[i]] = computed[j, :lengths[i]].detach().to("cpu", self.store.dtype).clone()
            self.store.add(fresh)
        self.hits += len(keys) - len(missing)  # a row twice in a batch: computed once, the second a hit
        self.misses += len(missing)
        rows = [fresh[key] if key in fresh else self.store.get(key) for key in keys]
        out = torch.zeros((len(keys), input_ids.shape[1], rows[0].shape[-1]), dtype=torch.float32)
        for i, row in enumerate(rows):
            out[i, :lengths[i]] = row
        return out.to(input_ids.device)


__all__ = ["DTYPES", "DiskRows", "FrozenCacheError", "FrozenStateCache", "MemoryRows", "frozen_manifest",
           "frozen_state_cache", "frozen_weights_sha256"]
