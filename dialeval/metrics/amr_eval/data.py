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


def save_examples(examples: Iterable[Example], path: str | Path) -> None:
    save_records(examples, path)


def load_examples(path: str | Path) -> list[Example]:
    return load_records(path, lambda row: Example(**{**row, "context": tuple(row["context"])}))


__all__ = ["NEGATIVE_KINDS", "VALIDATION_SHARE", "Example", "dailydialog_pp_examples", "dev_split_of",
           "load_examples", "save_examples"]
