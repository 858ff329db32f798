"""RADE's training examples: (context, reference, candidate) with the two scores, for both stages.

* **Stage 2** (task-specific, the paper's data): the RADE sets' rows of one split (the context-hash split of
  :mod:`dialeval.benchmarks.rade`), reference = ``reference`` with ``s_reference``, candidate = ``output`` with
  ``s_output``. Both copies of a swapped pair are kept, as in the source.
* **Stage 1** (cross-domain pre-training). The paper's 54k DSTC10 examples are not available; the substitute is
  DailyDialog++'s ``data_positives.json`` (7,641 DailyDialog contexts, five human replies each; none of its contexts
  is a GRADE-DailyDialog evaluation context). Per context the first reply is the reference and four candidates get
  graded synthetic scores on the 1-5 scale (:data:`STAGE1_GRADES`): another human reply (5), that reply with 40%
  of its words dropped (3), with its words shuffled (2), and a reply to another context (1). Contexts are split
  by the hash of their turns (:data:`STAGE1_VALIDATION_SHARE` to validation), so no context is in both.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...perturb import drop_words, shuffle_words
from ...training.prepared import load_records, save_records

RADE_SETS = ("chitchat", "emotion", "persona")
#: Synthetic scores of stage 1's candidates (the reference, a human reply, counts as 5).
STAGE1_GRADES = {"human": 5.0, "dropped": 3.0, "shuffled": 2.0, "random": 1.0}
STAGE1_REFERENCE_SCORE = 5.0
STAGE1_VALIDATION_SHARE = 10  # percent of the contexts
STAGE1_SOURCE = "dailydialog_plusplus/data_positives.json"


@dataclass(frozen=True)
class Example:
    context: tuple[str, ...]
    reference: str
    candidate: str
    reference_score: float
    candidate_score: float
    source: str  # the RADE set, or "dailydialog_pp"
    kind: str  # stage 2: "annotated"; stage 1: a key of STAGE1_GRADES

    @property
    def labels(self) -> tuple[float, float]:
        return self.reference_score, self.candidate_score


def stage2_examples(data_dir: str | Path, sets: Sequence[str], split: str) -> list[Example]:
    """The rows of ``split`` of each RADE set in ``sets``, in file order, set after set."""
    from ...benchmarks.rade import iter_rows

    out = []
    for name in sets:
        for _, row in iter_rows(Path(data_dir), f"rade_{name}", split):
            out.append(Example(context=tuple(t["text"] for t in row["context"]), reference=row["references"][0],
                               candidate=row["response"], reference_score=float(row["human"][1]),
                               candidate_score=float(row["human"][0]), source=name, kind="annotated"))
    return out


def stage1_split_of(context: Sequence[str]) -> str:
    bucket = int(hashlib.sha256("\n".join(context).encode("utf-8")).hexdigest()[:8], 16) % 100
    return "validation" if bucket < STAGE1_VALIDATION_SHARE else "train"


def stage1_examples(data_dir: str | Path, split: str, *, max_contexts: int | None, seed: int) -> list[Example]:
    """Stage 1's examples of ``split`` (see the module docstring); ``max_contexts`` (seeded draw) limits the
    contexts, four examples each. A context whose replies cannot be perturbed gives fewer."""
    from ...benchmarks.common import read_jsonl, require_key, require_str_list

    path = Path(data_dir) / STAGE1_SOURCE
    if not path.is_file():
        raise FileNotFoundError(f"stage 1 needs {path} (DailyDialog++ positives) in the data directory")
    contexts, replies = [], []
    for i, item in read_jsonl(path):
        context = require_str_list(require_key(item, "context", path, i), path, i, "context")
        positives = [r for r in require_str_list(require_key(item, "positive_responses", path, i), path, i,
                                                  "positive_responses") if r.strip()]
        if len(positives) >= 2 and stage1_split_of(context) == split:
            contexts.append(context)
            replies.append(positives)
    if len(contexts) < 2:
        raise ValueError(f"{path}: {len(contexts)} context(s) with two replies in stage 1's {split} split; the random "
                         "candidate needs another context")
    rng = np.random.default_rng([seed, 0 if split == "train" else 1])
    order = np.arange(len(contexts))
    if max_contexts is not None and max_contexts < len(contexts):
        order = np.sort(rng.choice(len(contexts), size=max_contexts, replace=False))
    out = []
    for i in order.tolist():
        reference, other = replies[i][0], replies[i][1]
        foreign = int(rng.integers(len(contexts) - 1))
        foreign += foreign >= i  # another context's reply
        candidates = {"human": other, "dropped": drop_words(other, rng), "shuffled": shuffle_words(other, rng),
                      "random": replies[foreign][int(rng.integers(len(replies[foreign])))]}
        for kind, text in candidates.items():
            if text is not None:
                out.append(Example(context=tuple(contexts[i]), reference=reference, candidate=text,
                                   reference_score=STAGE1_REFERENCE_SCORE, candidate_score=STAGE1_GRADES[kind],
                                   source="dailydialog_pp", kind=kind))
    return out


def save_examples(examples: Iterable[Example], path: str | Path) -> None:
    save_records(examples, path)


def load_examples(path: str | Path) -> list[Example]:
    return load_records(path, lambda row: Example(**{**row, "context": tuple(row["context"])}))


__all__ = ["RADE_SETS", "STAGE1_GRADES", "Example", "load_examples", "save_examples", "stage1_examples",
           "stage1_split_of", "stage2_examples"]
