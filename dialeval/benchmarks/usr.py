"""USR (Mehri & Eskenazi, ACL 2020): ``usr_topicalchat`` (360 rows) and ``usr_personachat`` (300 rows).

Sources: ``usr/tc_usr_data.json`` (60 contexts x 6 responses) and ``usr/pc_usr_data.json`` (60 x 5). Each item:
``context`` (turns separated by ``"\\n"``), ``fact`` (knowledge / persona), ``responses`` (``response``, ``model``
and 3 ratings per aspect).

Rows, in file order (context by context, response by response):

* context: ``context.split("\\n")``; only the empty strings produced by trailing newlines are dropped (whitespace,
  not data); an empty turn anywhere else is an error. Each turn is stripped of surrounding whitespace (TopicalChat
  joins turns with ``" \\n "``). Speakers are not given (None).
* response: the ``response`` text stripped; references: [the stripped ``Original Ground Truth`` response of the
  same context] (so the ground-truth row's reference is itself; nothing is dropped -- filter on ``system`` if a
  paper excludes it). knowledge: the ``fact`` string as is. subset = system = the ``model`` field.
* aspects: Understandable, Natural, Maintains Context, Engaging, Uses Knowledge, Overall; human = mean of the 3.

ids are ``usr_<set>/<context index>/<response index>``.
"""

from __future__ import annotations

from pathlib import Path

from .common import (
    BenchmarkDataError,
    DialevalBuilder,
    correlation_row,
    read_json_list,
    require_file,
    require_key,
    require_mapping,
    require_str,
    split_ratings,
)

SOURCES = {"usr_topicalchat": "usr/tc_usr_data.json", "usr_personachat": "usr/pc_usr_data.json"}
ASPECTS = ("Understandable", "Natural", "Maintains Context", "Engaging", "Uses Knowledge", "Overall")
GROUND_TRUTH = "Original Ground Truth"


def split_context(text: str, file, index) -> list[str]:
    parts = text.split("\n")
    while parts and parts[-1] == "":
        parts.pop()
    if not parts:
        raise BenchmarkDataError(file, index, "context", "is empty")
    for j, p in enumerate(parts):
        if not p.strip():
            raise BenchmarkDataError(file, index, f"context turn {j}", "empty turn inside the context")
    return [p.strip() for p in parts]


def load_rows(root: Path, name: str) -> list[dict]:
    path = require_file(root, SOURCES[name])
    rows = []
    for i, item in read_json_list(path, "contexts"):
        turns = split_context(require_str(require_key(item, "context", path, i), path, i, "context"), path, i)
        fact = require_str(require_key(item, "fact", path, i), path, i, "fact", allow_empty=True)
        responses = require_key(item, "responses", path, i)
        if not isinstance(responses, list) or not responses:
            raise BenchmarkDataError(path, i, "responses", "expected a non-empty list")
        for k, r in enumerate(responses):
            require_mapping(r, path, i, f"responses[{k}]")
            for key in ("model", "response"):
                if key not in r:
                    raise BenchmarkDataError(path, i, f"responses[{k}].{key}", "is missing")
                require_str(r[key], path, i, f"responses[{k}].{key}")
        truths = [r["response"].strip() for r in responses if r["model"] == GROUND_TRUTH]
        if len(truths) != 1:
            raise BenchmarkDataError(path, i, "responses",
                                     f"expected exactly one {GROUND_TRUTH!r} response, found {len(truths)}")
        for k, r in enumerate(responses):
            ratings, excluded = [], []
            for a in ASPECTS:
                if a not in r:
                    raise BenchmarkDataError(path, i, f"responses[{k}].{a}", "is missing")
                numeric, n_excluded = split_ratings(r[a], path, i, f"responses[{k}].{a}")
                ratings.append(numeric)
                excluded.append(n_excluded)
            rows.append(correlation_row(
                id=f"{name}/{i}/{k}", benchmark=name, subset=r["model"], system=r["model"], level="turn",
                context=[(None, t) for t in turns], response=r["response"].strip(), references=truths,
                knowledge=fact, aspects=ASPECTS, ratings=ratings, excluded=excluded,
            ))
    return rows


class Usr(DialevalBuilder):
    """USR TopicalChat / PersonaChat judgements (configs ``usr_topicalchat``, ``usr_personachat``); split ``test``."""

    CONFIGS = tuple((name, f"USR {name.removeprefix('usr_')}") for name in SOURCES)

    @classmethod
    def source_files(cls, config_name: str, root: Path) -> list[Path]:
        return [require_file(root, SOURCES[config_name])]

    def rows(self, split: str) -> list[dict]:
        return load_rows(self.root, self.config.name)
