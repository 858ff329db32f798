"""The member score cache: each member's raw scores of each item set, on disk, so that fitting and the leave-one-out
run in seconds once the members have scored the sets.

Layout: ``<root>/<member>/<key>/<set>-<content>.json`` where ``key`` is a short sha256 of the member's signature
without its CPU thread count (another checkpoint, setting or package version gives another key, so a new member is
scored again; another thread count changes only the last float bits and reuses the scores), ``set`` the set's key
(``/`` as ``__``) and ``content`` the set's content hash (:class:`~.sets.ItemSet`: another text, another file). A file
holds the full signature, the set's item ids, the scores in item order and the seconds the member took. Files are
written whole (a temporary file renamed), so a stopped run leaves complete files only; a file whose ids do not match
the set is an error naming the file.

Default root: :func:`default_cache_dir` (``~/.cache/dialeval/ensemble``, see :func:`dialeval.paths.cache_dir`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import InputFileError
from .sets import ItemSet

__all__ = ["CachedScores", "MemberScoreCache", "default_cache_dir", "signature_key"]

_THREADS = re.compile(r"\|cpu_threads:\d+")


def default_cache_dir() -> Path:
    from ...paths import cache_dir

    return cache_dir("ensemble")


def signature_key(signature: str) -> str:
    """The cache key of a member signature: sha256 of it without ``|cpu_threads:N``, 12 hex digits."""
    return hashlib.sha256(_THREADS.sub("", signature).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class CachedScores:
    scores: np.ndarray
    seconds: float
    signature: str
    path: Path


class MemberScoreCache:
    """Raw member scores per (member signature, item set) under ``root`` (module docstring)."""

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_dir()

    def path(self, member: str, signature: str, item_set: ItemSet) -> Path:
        name = f"{item_set.key.replace('/', '__')}-{item_set.content}.json"
        return self.root / member / signature_key(signature) / name

    def get(self, member: str, signature: str, item_set: ItemSet) -> CachedScores | None:
        path = self.path(member, signature, item_set)
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise InputFileError(f"{path}: not a member score file ({err}); delete it to score again") from None
        if data.get("ids") != list(item_set.ids) or len(data.get("scores", ())) != len(item_set):
            raise InputFileError(f"{path}: its item ids or score count do not match set {item_set.key}; delete it to "
                                 "score again")
        scores = np.asarray(data["scores"], dtype=np.float64)
        if not np.all(np.isfinite(scores)):
            raise InputFileError(f"{path}: a score is not finite; delete it to score again")
        return CachedScores(scores, float(data["seconds"]), data["signature"], path)

    def put(self, member: str, signature: str, item_set: ItemSet, scores: np.ndarray, seconds: float) -> Path:
        path = self.path(member, signature, item_set)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"member": member, "signature": signature, "set": item_set.key, "content": item_set.content,
                "n": len(item_set), "seconds": round(float(seconds), 3), "ids": list(item_set.ids),
                "scores": [float(v) for v in scores]}
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)
        return path
