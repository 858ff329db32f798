"""Augmented positives of a training run: ``k`` new responses per training pair, made once, in the run folder.

Part of PONE's preparation (the augmenters need GloVe and spaCy's stop words, or a generator model). While it runs,
``augmented.jsonl`` holds one line per finished training pair, in order: ``{"pair": i, "texts": [...]}`` (possibly
fewer than ``k`` texts: an EDA edit that leaves the text unchanged or a generation that is empty is not kept; the
counts are in the summary). Lines are written as they are made, so an interrupted preparation resumes after the last
finished pair. Once every pair is done the lines move to ``augmented.jsonl.gz`` (compact, for carrying the prepared
folder to another machine), which training reads with :func:`read_augmented`, without any augmenter.
``augmented_meta.json`` describes the augmenter, and a folder made with other settings is an error.
"""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ...backbone.batching import progress
from ..bert_ruber.data import Pair

AUGMENTED_FILE, DONE_FILE, META_FILE = "augmented.jsonl", "augmented.jsonl.gz", "augmented_meta.json"

Augment = Callable[[Pair, int, int], list[str]]  # (pair, k, key) -> texts


def eda_augment(augmenter) -> Augment:
    """EDA edits of the pair's response (:class:`~.eda.EdaAugmenter`)."""
    return lambda pair, k, key: augmenter.augment(pair.response, k, key)


def generation_augment(augmenter) -> Augment:
    """Generated responses to the pair's context (:class:`~.generation.GenerationAugmenter`)."""
    return lambda pair, k, key: augmenter.augment(list(pair.context), pair.response, k, key)


def _line(i: int, texts: list[str]) -> str:
    return json.dumps({"pair": i, "texts": texts}, ensure_ascii=False) + "\n"


def _results(done: list[list[str]], k: int, seconds: float) -> tuple[np.ndarray, list[str], dict]:
    owners = np.fromiter((i for i, texts in enumerate(done) for _ in texts), dtype=np.int64)
    flat = [t for texts in done for t in texts]
    counts = np.bincount([len(t) for t in done], minlength=k + 1)
    stats = {"augmented": len(flat), "per_pair_histogram": counts.tolist(), "seconds_this_run": round(seconds, 1)}
    return owners, flat, stats


def _read_done(path: Path) -> list[list[str]]:
    done = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            if record.get("pair") != len(done):
                raise ValueError(f"{path} line {len(done) + 1} is for pair {record.get('pair')}, expected {len(done)}")
            done.append(record["texts"])
    return done


def read_augmented(folder: Path) -> tuple[np.ndarray, list[str], dict]:
    """(owner pair index of each augmented response, the responses, stats) of a finished augmentation."""
    meta_path, done_path = folder / META_FILE, folder / DONE_FILE
    if not (meta_path.exists() and done_path.exists()):
        raise FileNotFoundError(f"{folder} holds no finished augmentation ({DONE_FILE} and {META_FILE})")
    meta = json.loads(meta_path.read_text())
    done = _read_done(done_path)
    if len(done) != meta["pairs"]:
        raise ValueError(f"{done_path} has {len(done)} pairs, {META_FILE} says {meta['pairs']}")
    return _results(done, meta["k"], 0.0)


def augment_pairs(pairs: Sequence[Pair], augment: Augment, *, k: int, folder: Path, meta: dict,
                  progress_bar: bool | None = None) -> tuple[np.ndarray, list[str], dict]:
    """(owner pair index of each augmented response, the responses, stats); resumes from ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = {**meta, "k": k, "pairs": len(pairs)}
    meta_path, data_path, done_path = folder / META_FILE, folder / AUGMENTED_FILE, folder / DONE_FILE
    if meta_path.exists():
        saved = json.loads(meta_path.read_text())
        if saved != meta:
            raise ValueError(f"{data_path} was made with other augmentation settings ({saved} vs {meta}); "
                             "use a new output directory")
    else:
        meta_path.write_text(json.dumps(meta, indent=1))
    start = time.perf_counter()
    if done_path.exists():
        return _results(_read_done(done_path), k, time.perf_counter() - start)
    done: list[list[str]] = []
    if data_path.exists():
        with open(data_path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    break  # a line cut by an interruption: redo from here
                if record.get("pair") != len(done):
                    raise ValueError(f"{data_path} line {len(done) + 1} is for pair {record.get('pair')}, "
                                     f"expected {len(done)}")
                done.append(record["texts"])
        with open(data_path, "w", encoding="utf-8") as fh:  # drop a partial last line, if any
            fh.writelines(_line(i, t) for i, t in enumerate(done))
    todo = range(len(done), len(pairs))
    with open(data_path, "a", encoding="utf-8") as fh:
        for i in progress(todo, total=len(todo), enabled=progress_bar, desc="augmenting"):
            texts = augment(pairs[i], k, i)
            fh.write(_line(i, texts))
            done.append(texts)
    tmp = done_path.with_name(DONE_FILE + ".tmp")
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        gz.write("".join(_line(i, t) for i, t in enumerate(done)).encode("utf-8"))
    tmp.replace(done_path)
    data_path.unlink()
    return _results(done, k, time.perf_counter() - start)
