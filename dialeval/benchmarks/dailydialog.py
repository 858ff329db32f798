"""DailyDialog (``dailydialog``, a training corpus) and DailyDialog++ (``dailydialog_pp``, a discrimination set).

``dailydialog``: ``dailydialog/derived/{train,validation,test}.jsonl`` (11118 / 1000 / 1000 dialogues, a mechanical
re-formatting of the ConvLab-3 unified data). Features as in the file: ``dialogue_id``, ``original_id``, ``topic``
(strings), ``utterances``, ``acts``, ``emotions`` (lists of strings, one entry per utterance; the labels are kept as
the strings of the file, e.g. ``"inform"``, ``"no emotion"``). Licence CC BY-NC-SA 4.0.

``dailydialog_pp``: ``dailydialog_plusplus/dev.json`` (split ``validation``, 1028 contexts) and ``test.json``
(split ``test``, 1142), both JSON lines: ``id`` (int), ``context``, ``positive_responses``,
``adversarial_negative_responses``, ``random_negative_responses`` (lists of strings, 5 responses each).

Both keep the file order; a malformed line raises naming the file, the line index and the field.
"""

from __future__ import annotations

from pathlib import Path

import datasets

from .common import (
    BenchmarkDataError,
    DialevalBuilder,
    read_jsonl,
    require_key,
    require_mapping,
    require_str,
    require_str_list,
)

DD_SPLITS = {"train": "dailydialog/derived/train.jsonl", "validation": "dailydialog/derived/validation.jsonl",
             "test": "dailydialog/derived/test.jsonl"}
DDPP_SPLITS = {"validation": "dailydialog_plusplus/dev.json", "test": "dailydialog_plusplus/test.json"}
DDPP_RESPONSE_FIELDS = ("positive_responses", "adversarial_negative_responses", "random_negative_responses")

DAILYDIALOG_FEATURES = datasets.Features(
    {
        "dialogue_id": datasets.Value("string"),
        "original_id": datasets.Value("string"),
        "topic": datasets.Value("string"),
        "utterances": datasets.List(datasets.Value("string")),
        "acts": datasets.List(datasets.Value("string")),
        "emotions": datasets.List(datasets.Value("string")),
    }
)
DAILYDIALOG_PP_FEATURES = datasets.Features(
    {
        "id": datasets.Value("int64"),
        "context": datasets.List(datasets.Value("string")),
        **{f: datasets.List(datasets.Value("string")) for f in DDPP_RESPONSE_FIELDS},
    }
)


def iter_dailydialog(path: Path):
    for i, item in read_jsonl(path):
        require_mapping(item, path, i)
        row = {}
        for key in ("dialogue_id", "original_id", "topic"):
            row[key] = require_str(require_key(item, key, path, i), path, i, key, allow_empty=True)
        for key in ("utterances", "acts", "emotions"):
            row[key] = require_str_list(require_key(item, key, path, i), path, i, key)
        if not len(row["utterances"]) == len(row["acts"]) == len(row["emotions"]):
            raise BenchmarkDataError(path, i, "acts/emotions",
                                     f"lengths {len(row['utterances'])}/{len(row['acts'])}/{len(row['emotions'])} "
                                     "of utterances/acts/emotions differ")
        yield row


def iter_dailydialog_pp(path: Path):
    for i, item in read_jsonl(path):
        require_mapping(item, path, i)
        ident = require_key(item, "id", path, i)
        if not isinstance(ident, int) or isinstance(ident, bool):
            raise BenchmarkDataError(path, i, "id", f"expected an integer, got {ident!r}")
        row = {"id": ident, "context": require_str_list(require_key(item, "context", path, i), path, i, "context")}
        for key in DDPP_RESPONSE_FIELDS:
            row[key] = require_str_list(require_key(item, key, path, i), path, i, key)
        yield row


class DailyDialog(DialevalBuilder):
    """The DailyDialog corpus (config ``dailydialog``): splits train/validation/test, one row per dialogue."""

    CONFIGS = (("dailydialog", "DailyDialog corpus (ConvLab-3 unified, derived jsonl)"),)
    SPLIT_FILES = DD_SPLITS
    FEATURES = DAILYDIALOG_FEATURES
    LICENSE = "CC BY-NC-SA 4.0"

    def rows(self, split: str):
        return iter_dailydialog(self.split_file(split))


class DailyDialogPP(DialevalBuilder):
    """DailyDialog++ (config ``dailydialog_pp``): splits validation (dev.json) and test (test.json)."""

    CONFIGS = (("dailydialog_pp", "DailyDialog++ positives / adversarial / random negatives"),)
    SPLIT_FILES = DDPP_SPLITS
    FEATURES = DAILYDIALOG_PP_FEATURES

    def rows(self, split: str):
        return iter_dailydialog_pp(self.split_file(split))
