"""RADE reference-assisted sets (Shi et al., ACL 2023): ``rade_chitchat``, ``rade_emotion``, ``rade_persona``.

Source: ``rade/<name>/data.jsonl`` (2590 / 4822 / 4800 rows), keys ``context`` (list of turns), ``output``,
``reference``, ``s_output``, ``s_reference`` (mean human score 1-5 of each). Every (output, reference) pair
appears twice with the roles swapped; there is no split field.

Deterministic split by context, in the paper's proportions (the paper's split is not released, and its sizes,
ChitChat 1490/300/300, EmpaDial 3022/500/500, PersonaChat 3000/500/500 dialogues, are not those of the released
rows: 642 / 935 / 2,000 distinct contexts, with pairs repeated beyond the swap)::

    bucket = int(sha256("\\n".join(context).encode("utf-8")).hexdigest()[:8], 16) % (train + validation + test)
    ChitChat 5/1/1 (buckets 0-4 train, 5 validation, 6 test); emotion and persona 6/1/1 (0-5, 6, 7)

Every row is kept. Rows that share a context share a split, so both rows of a swapped pair (and all responses
to one context) are always in the same split. Within a split, rows keep the file order.

Rows: context = the turns (speaker None), response = ``output``, references = [``reference``], subset = the set
name (``chitchat`` / ``emotion`` / ``persona``), system ``"unknown"`` (the source does not say which system wrote a
response; after the swap it may be the human reference). Aspects: ``overall`` (= ``s_output``, ratings
``[s_output]``) and ``reference_overall`` (= ``s_reference``). ids are ``rade_<name>/<line index in data.jsonl>``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from .common import (
    BenchmarkDataError,
    DialevalBuilder,
    correlation_row,
    read_jsonl,
    require_file,
    require_key,
    require_mapping,
    require_number,
    require_str,
    require_str_list,
)

NAMES = ("rade_chitchat", "rade_emotion", "rade_persona")
#: The paper's train/validation/test proportions per set (its sizes: 1490/300/300, 3022/500/500, 3000/500/500).
PROPORTIONS = {"rade_chitchat": (5, 1, 1), "rade_emotion": (6, 1, 1), "rade_persona": (6, 1, 1)}
ASPECTS = ("overall", "reference_overall")
SYSTEM = "unknown"


def split_of(context: Sequence[str], name: str) -> str:
    """The split of a context of the set ``name``: its sha256 bucket, in the set's :data:`PROPORTIONS`."""
    train, validation, test = PROPORTIONS[name]
    bucket = int(hashlib.sha256("\n".join(context).encode("utf-8")).hexdigest()[:8], 16) % (train + validation + test)
    return "train" if bucket < train else ("validation" if bucket < train + validation else "test")


def source_path(name: str) -> str:
    return f"rade/{name.removeprefix('rade_')}/data.jsonl"


def iter_rows(root: Path, name: str, split: str | None = None):
    """(split, row) for every line of the source, in file order; only ``split`` when given."""
    path = require_file(root, source_path(name))
    subset = name.removeprefix("rade_")
    for i, item in read_jsonl(path):
        require_mapping(item, path, i)
        context = require_str_list(require_key(item, "context", path, i), path, i, "context")
        for j, t in enumerate(context):
            require_str(t, path, i, f"context[{j}]")
        row_split = split_of(context, name)
        output = require_str(require_key(item, "output", path, i), path, i, "output")
        reference = require_str(require_key(item, "reference", path, i), path, i, "reference")
        s_out = require_number(require_key(item, "s_output", path, i), path, i, "s_output")
        s_ref = require_number(require_key(item, "s_reference", path, i), path, i, "s_reference")
        if split is not None and row_split != split:
            continue
        yield row_split, correlation_row(
            id=f"{name}/{i}", benchmark=name, subset=subset, system=SYSTEM, level="turn",
            context=[(None, t) for t in context], response=output, references=[reference], knowledge=None,
            aspects=ASPECTS, ratings=[[s_out], [s_ref]], excluded=[0, 0],
        )


class Rade(DialevalBuilder):
    """RADE chitchat / emotion / persona with a deterministic context-hash split (train/validation/test) in the
    paper's proportions (:func:`split_of`); every row is kept and both rows of a swapped (output, reference) pair
    land in the same split.
    """

    CONFIGS = tuple((name, f"RADE {name.removeprefix('rade_')}") for name in NAMES)
    SPLITS = ("train", "validation", "test")

    @classmethod
    def source_files(cls, config_name: str, root: Path) -> list[Path]:
        return [require_file(root, source_path(config_name))]

    def rows(self, split: str):
        return (row for _, row in iter_rows(self.root, self.config.name, split))


__all__ = ["PROPORTIONS", "BenchmarkDataError", "Rade", "iter_rows", "split_of"]
