"""FED (Mehri & Eskenazi, SIGDIAL 2020): ``fed_turn`` (375 rows) and ``fed_dialogue`` (125 rows).

Source: ``fed/fed_data.json`` (the original release, 500 items in file order; an item with a ``response`` key is
turn level, one without is dialogue level). Keys: ``context``, ``response`` (turn level), ``system``
(Meena / Mitsuku / Human) and ``annotations`` (aspect -> 5 ratings).

Parsing of ``context`` / ``response``: the text is split on ``"\\n"``; a line starting with ``"User:"`` or
``"System:"`` starts a new turn with that speaker (the prefix and the whitespace after it are removed). A line
*without* a prefix is treated as a continuation of the previous turn and joined to it with ``"\\n"`` (a first line
without a prefix is an error). Turn texts are stripped of surrounding whitespace; an empty turn is an error. In the
released file every line carries a prefix, so no continuation joins happen (a test checks this). The turn-level
``response`` must be exactly one ``System`` turn; its text (prefix removed) is the row's response.

Rows: turn level: context = the preceding turns, response = the system response; dialogue level: context = all
turns, response None. subset = system = the ``system`` field; no references, no knowledge. Aspects (fixed order)
as listed in :data:`TURN_ASPECTS` / :data:`DIALOGUE_ASPECTS`. Ratings that are not numbers (free-text strings such as
``"N/A (No errors)"``) are left out of the mean and counted per aspect in ``excluded``; ``human`` is None for an
aspect with no numeric rating. ids are ``fed_turn/<index in fed_data.json>`` / ``fed_dialogue/<index>``.
"""

from __future__ import annotations

import re
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

SOURCE = "fed/fed_data.json"
TURN_ASPECTS = ("Interesting", "Engaging", "Specific", "Relevant", "Correct", "Semantically appropriate",
                "Understandable", "Fluent", "Overall")
DIALOGUE_ASPECTS = ("Coherent", "Error recovery", "Consistent", "Diverse", "Depth", "Likeable", "Understanding",
                    "Flexible", "Informative", "Inquisitive", "Overall")
SPEAKERS = ("User", "System")
_PREFIX = re.compile(r"^(User|System):\s*")


def parse_turns(text: str, file, index, field: str) -> list[tuple[str, str]]:
    """``"User: ...\\nSystem: ..."`` -> [(speaker, text)]; see the module docstring for continuation lines."""
    turns: list[list[str]] = []
    for j, line in enumerate(text.split("\n")):
        m = _PREFIX.match(line)
        if m:
            turns.append([m.group(1), line[m.end():]])
        elif not turns:
            raise BenchmarkDataError(file, index, field, f"line {j} has no 'User:'/'System:' prefix: {line!r:.80}")
        else:
            turns[-1][1] += "\n" + line
    out = []
    for j, (speaker, t) in enumerate(turns):
        if not t.strip():
            raise BenchmarkDataError(file, index, f"{field} turn {j}", "empty turn")
        out.append((speaker, t.strip()))
    return out


def count_continuation_lines(text: str) -> int:
    return sum(1 for line in text.split("\n") if not _PREFIX.match(line))


def _ratings(item: dict, aspects, file, index):
    annotations = require_mapping(require_key(item, "annotations", file, index), file, index, "annotations")
    missing = [a for a in aspects if a not in annotations]
    if missing:
        raise BenchmarkDataError(file, index, "annotations", f"missing aspects {missing}")
    extra = [a for a in annotations if a not in aspects]
    if extra:
        raise BenchmarkDataError(file, index, "annotations", f"unexpected aspects {extra} (expected {list(aspects)})")
    ratings, excluded = [], []
    for a in aspects:
        numeric, n_excluded = split_ratings(annotations[a], file, index, f"annotations.{a}")
        ratings.append(numeric)
        excluded.append(n_excluded)
    return ratings, excluded


def load_rows(root: Path, level: str) -> list[dict]:
    """Rows of ``fed_turn`` (level "turn") or ``fed_dialogue`` (level "dialogue") in file order."""
    path = require_file(root, SOURCE)
    rows = []
    for i, item in read_json_list(path, "items"):
        is_turn = "response" in item
        if (level == "turn") != is_turn:
            continue
        system = require_str(require_key(item, "system", path, i), path, i, "system")
        context = parse_turns(require_str(require_key(item, "context", path, i), path, i, "context"),
                              path, i, "context")
        if is_turn:
            resp_turns = parse_turns(require_str(item["response"], path, i, "response"), path, i, "response")
            if len(resp_turns) != 1 or resp_turns[0][0] != "System":
                raise BenchmarkDataError(path, i, "response", "expected exactly one 'System:' turn")
            response = resp_turns[0][1]
            aspects = TURN_ASPECTS
        else:
            response = None
            aspects = DIALOGUE_ASPECTS
        ratings, excluded = _ratings(item, aspects, path, i)
        name = f"fed_{level}"
        rows.append(correlation_row(
            id=f"{name}/{i}", benchmark=name, subset=system, system=system, level=level,
            context=context, response=response, references=[], knowledge=None,
            aspects=aspects, ratings=ratings, excluded=excluded,
        ))
    return rows


class Fed(DialevalBuilder):
    """FED turn- and dialogue-level judgements (configs ``fed_turn``, ``fed_dialogue``); split ``test``."""

    CONFIGS = (("fed_turn", "FED turn level"), ("fed_dialogue", "FED dialogue level"))

    @classmethod
    def source_files(cls, config_name: str, root: Path) -> list[Path]:
        return [require_file(root, SOURCE)]

    def rows(self, split: str) -> list[dict]:
        return load_rows(self.root, self.config.name.removeprefix("fed_"))
