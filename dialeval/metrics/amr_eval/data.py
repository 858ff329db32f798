"""The AMR evaluator's training and test examples: DailyDialog++ responses labelled appropriate or not.

DailyDialog++ gives every context 5 positive responses, 5 adversarial negatives (written by people to share words
and topic with the context while being inappropriate) and 5 random negatives (replies to other contexts). The paper
trains on positives (label 1) against adversarial negatives (label 0) of its 9,259 training contexts, which are not
available here; the data directory has the dev split (1,028 contexts) and the test split (1,142). So:

* ``train`` and ``validation`` come from ``dev.json``, split by the hash of the context's turns
  (:data:`VALIDATION_SHARE` percent to validation), so all replies to one context share a split;
* ``test`` is ``test.json``, used for reporting only.

``negatives`` chooses the negative kinds: ``("adversarial",)`` (the paper's binary setting, the default) or
``("adversarial", "random")``. Examples keep the file order: per context, its positives, then its negatives kind by
kind, as in the file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...baselines.length import word_count
from ...training.prepared import load_records, save_records

#: Percent of the dev contexts that validate.
VALIDATION_SHARE = 15
NEGATIVE_KINDS = ("adversarial", "random")
_FIELDS = {"positive": "positive_responses", "adversarial": "adversarial_negative_responses",
           "random": "random_negative_responses"}
SPLITS = ("train", "validation", "test")


@dataclass(frozen=True)
class Example:
    context: tuple[str, ...]
    response: str
    label: int  # 1: a positive response; 0: a negative
    kind: str  # "positive", "adversarial" or "random"
    context_id: int  # the DailyDialog++ id of the context


def dev_split_of(context: Sequence[str]) -> str:
    """``train`` or ``validation`` for a dev context, by the hash of its turns."""
    bucket = int(hashlib.sha256("\n".join(context).encode("utf-8")).hexdigest()[:8], 16) % 100
    return "validation" if bucket < VALIDATION_SHARE else "train"


def dailydialog_pp_examples(data_dir: str | Path, split: str, *,
                            negatives: Sequence[str] = ("adversarial",)) -> list[Example]:
    """The examples of ``split`` (``train`` / ``validation`` from the dev file, ``test`` from the test file)."""
    from ...benchmarks.dailydialog import DDPP_SPLITS, iter_dailydialog_pp

    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    unknown = [k for k in negatives if k not in NEGATIVE_KINDS]
    if unknown or not negatives:
        raise ValueError(f"negatives must name some of {', '.join(NEGATIVE_KINDS)}, got {list(negatives)}")
    path = Path(data_dir) / DDPP_SPLITS["test" if split == "test" else "validation"]
    if not path.is_file():
        raise FileNotFoundError(f"the AMR evaluator trains on DailyDialog++: {path} is missing in the data directory")
    out = []
    for row in iter_dailydialog_pp(path):
        context = tuple(row["context"])
        if split != "test" and dev_split_of(context) != split:
            continue
        for kind in ("positive", *negatives):
            out += [Example(context=context, response=text, label=int(kind == "positive"), kind=kind,
                            context_id=row["id"]) for text in row[_FIELDS[kind]]]
    return out


#: Upper bounds (inclusive) of the reply-length bins, in words, that :func:`length_balance_weights` compares.
LENGTH_BINS = (3, 5, 7, 9, 11, 14, 18, 24)
#: Weights are kept within [1 / MAX_LENGTH_WEIGHT, MAX_LENGTH_WEIGHT] before they are normalised.
MAX_LENGTH_WEIGHT = 10.0


def length_bin(text: str) -> int:
    """The :data:`LENGTH_BINS` bin of a reply's word count."""
    return int(np.searchsorted(LENGTH_BINS, word_count(text), side="left"))


def length_balance_weights(examples: Sequence[Example]) -> np.ndarray:
    """A loss weight per example that takes reply length away as a cue for the label.

    DailyDialog++'s negatives are longer than its positives (adversarial replies are written to reuse the
    context's words; random ones have at least six words), so a classifier can separate the classes by length
    alone. With ``p(b)`` and ``n(b)`` the shares of positives and of negatives whose reply falls in length bin ``b``,
    both classes are reweighted towards the same length distribution, ``t(b) ~ sqrt(p(b) n(b))``: a positive in bin
    ``b`` weighs ``t(b) / p(b)``, a negative ``t(b) / n(b)``. Weights are kept within [1/10, 10] and then scaled so
    each class's weights sum to its number of examples. Preparation records :func:`length_cue` of the training
    examples with and without these weights. In a bin that one class lacks, the other class's examples get the
    lowest weight (1/10 before scaling)."""
    bins = np.array([length_bin(e.response) for e in examples], dtype=np.int64)
    positive = np.array([e.label == 1 for e in examples])
    if positive.all() or not positive.any():
        raise ValueError("length balancing needs positive and negative examples")
    n_bins = len(LENGTH_BINS) + 1
    share_pos = np.bincount(bins[positive], minlength=n_bins) / positive.sum()
    share_neg = np.bincount(bins[~positive], minlength=n_bins) / (~positive).sum()
    target = np.sqrt(share_pos * share_neg)
    target /= target.sum()
    weights = np.empty(len(examples), dtype=np.float64)
    for rows, share in ((positive, share_pos), (~positive, share_neg)):
        # every bin indexed here holds an example of this class, so its share is above zero
        ratio = np.clip(target[bins[rows]] / share[bins[rows]], 1 / MAX_LENGTH_WEIGHT, MAX_LENGTH_WEIGHT)
        weights[rows] = ratio * rows.sum() / ratio.sum()
    return weights


def length_cue(examples: Sequence[Example], weights: np.ndarray | None = None) -> float:
    """How well reply length alone tells the classes apart: the chance that a positive's reply has more words than
    a negative's, over every (positive, negative) pair, each pair weighing the product of the two examples'
    ``weights`` (all 1 by default); ties count one half. 0.5: length says nothing."""
    words = np.array([word_count(e.response) for e in examples], dtype=np.int64)
    positive = np.array([e.label == 1 for e in examples])
    w = np.ones(len(examples)) if weights is None else np.asarray(weights, dtype=np.float64)
    pos = np.bincount(words[positive], weights=w[positive], minlength=words.max() + 1)
    neg = np.bincount(words[~positive], weights=w[~positive], minlength=words.max() + 1)
    shorter_neg = np.cumsum(neg) - neg  # weight of the negatives with fewer words than each length
    return float((pos * (shorter_neg + 0.5 * neg)).sum() / (pos.sum() * neg.sum()))


def save_examples(examples: Iterable[Example], path: str | Path) -> None:
    save_records(examples, path)


def load_examples(path: str | Path) -> list[Example]:
    return load_records(path, lambda row: Example(**{**row, "context": tuple(row["context"])}))


__all__ = ["LENGTH_BINS", "MAX_LENGTH_WEIGHT", "NEGATIVE_KINDS", "VALIDATION_SHARE", "Example",
           "dailydialog_pp_examples", "dev_split_of", "length_balance_weights", "length_bin", "length_cue",
           "load_examples", "save_examples"]
