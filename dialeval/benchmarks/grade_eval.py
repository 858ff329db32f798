"""GRADE human coherence judgements (Huang et al., EMNLP 2020): ``grade_eval``.

Source (data dir ``grade_eval/``, from li3cmz/GRADE@c6cec02 ``evaluation/``):

* ``human_score/human_judgement.json``: 1200 items ``{ID, Dataset, DialogModel, Context, Response, HumanScores}``
  in 8 consecutive blocks of 150, one per (corpus, system). ``Dataset`` names the corpus: ``dailydialog_EVAL``
  (folder ``dailydialog``), ``convai2``, ``empatheticdialogues``. ``HumanScores`` is a JSON list in a string
  (8-11 ratings, 1-5). ``Context`` is two turns joined by ``|||``.
* ``eval_data/<corpus>/<system>/human_{ctx,hyp,ref}.txt``: one line per item (context, model response, reference).
* ``human_score/<corpus>/<system>/human_score.txt``: per-item mean of the ratings.

Alignment: the k-th json item of a (corpus, system) block is expected on line k of that folder's
``human_ctx.txt``/``human_hyp.txt`` (compared after stripping surrounding whitespace). The reference comes from the
same line of ``human_ref.txt``. If the positional alignment fails, each item is looked up by its exact
(context, response) pair; when that gives a one-to-one mapping it is used, otherwise
:class:`BenchmarkAlignmentError` is raised naming the file, item and field. ``human_score.txt`` must equal the mean
of the json ratings to 2 decimal places (|diff| <= 0.005; the file stores 1-4 decimals). The row order is the json
order; ids are ``grade_eval/<corpus>/<system>/<line index>``.

Rows: subset ``<corpus>/<system>``, system ``<system>``, turn level, context = the two turns (speaker None),
references = [the human reference], aspect ``coherence`` = mean of all ratings (every rating kept in ``ratings``).
"""

from __future__ import annotations

import json
from pathlib import Path

from .common import (
    BenchmarkAlignmentError,
    BenchmarkDataError,
    DialevalBuilder,
    correlation_row,
    mean_or_none,
    read_json,
    read_lines,
    require_file,
    require_key,
    require_mapping,
    require_str,
    split_ratings,
)

NAME = "grade_eval"
ASPECTS = ("coherence",)
JUDGEMENTS = "grade_eval/human_score/human_judgement.json"
# the json "Dataset" field -> the corpus folder under eval_data/ and human_score/
CORPUS_FOLDERS = {"dailydialog_EVAL": "dailydialog", "dailydialog": "dailydialog", "convai2": "convai2",
                  "empatheticdialogues": "empatheticdialogues"}
SCORE_TOLERANCE = 0.005 + 1e-9  # "equal to 2 dp"


def _norm(text: str) -> str:
    return text.strip()


def _parse_ratings(raw, path, index) -> tuple[list[float], int]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as err:
            raise BenchmarkDataError(path, index, "HumanScores", f"is not a JSON list: {err}") from err
    numeric, excluded = split_ratings(raw, path, index, "HumanScores")
    if not numeric:
        raise BenchmarkDataError(path, index, "HumanScores", "has no numeric rating")
    return numeric, excluded


def load_items(root: Path) -> list[dict]:
    """The 1200 judgements, validated and aligned with the per-system txt files, in json order."""
    path = require_file(root, JUDGEMENTS)
    data = read_json(path)
    if not isinstance(data, list):
        raise BenchmarkDataError(path, None, None, f"expected a JSON list of items, got {type(data).__name__}")

    # group the json items by (corpus folder, system), keeping order of first appearance
    groups: dict[tuple[str, str], list[tuple[int, dict]]] = {}
    for i, item in enumerate(data):
        require_mapping(item, path, i)
        dataset = require_str(require_key(item, "Dataset", path, i), path, i, "Dataset")
        if dataset not in CORPUS_FOLDERS:
            raise BenchmarkDataError(path, i, "Dataset", f"unknown corpus {dataset!r} (known: {sorted(CORPUS_FOLDERS)})")
        system = require_str(require_key(item, "DialogModel", path, i), path, i, "DialogModel")
        for key in ("Context", "Response"):
            require_str(require_key(item, key, path, i), path, i, key)
        require_key(item, "HumanScores", path, i)
        groups.setdefault((CORPUS_FOLDERS[dataset], system), []).append((i, item))

    rows: dict[int, dict] = {}
    for (corpus, system), members in groups.items():
        sub = f"{corpus}/{system}"
        ctx_path = require_file(root, f"grade_eval/eval_data/{sub}/human_ctx.txt")
        hyp_path = require_file(root, f"grade_eval/eval_data/{sub}/human_hyp.txt")
        ref_path = require_file(root, f"grade_eval/eval_data/{sub}/human_ref.txt")
        score_path = require_file(root, f"grade_eval/human_score/{sub}/human_score.txt")
        ctx, hyp, ref, score = (read_lines(p) for p in (ctx_path, hyp_path, ref_path, score_path))
        n = len(members)
        for p, lines in ((ctx_path, ctx), (hyp_path, hyp), (ref_path, ref), (score_path, score)):
            if len(lines) != n:
                raise BenchmarkAlignmentError(
                    p, None, None, f"has {len(lines)} lines but {path.name} has {n} items for {sub}"
                )

        def matches(k: int, item: dict) -> bool:
            return _norm(item["Context"]) == _norm(ctx[k]) and _norm(item["Response"]) == _norm(hyp[k])

        line_of = list(range(n))
        if not all(matches(k, item) for k, (_, item) in enumerate(members)):
            # positional alignment failed: look every item up by its (context, response) pair
            where: dict[tuple[str, str], list[int]] = {}
            for k in range(n):
                where.setdefault((_norm(ctx[k]), _norm(hyp[k])), []).append(k)
            used: set[int] = set()
            for k, (i, item) in enumerate(members):
                candidates = [c for c in where.get((_norm(item["Context"]), _norm(item["Response"])), []) if c not in used]
                if not candidates:
                    raise BenchmarkAlignmentError(
                        path, i, "Context/Response",
                        f"no line of {ctx_path} / {hyp_path} has this context and response; cannot align {sub}",
                    )
                # identical (context, response) pairs are interchangeable: take them in file order
                line_of[k] = candidates[0]
                used.add(candidates[0])

        for k, (i, item) in enumerate(members):
            line = line_of[k]
            numeric, excluded = _parse_ratings(item["HumanScores"], path, i)
            try:
                stated = float(score[line])
            except ValueError as err:
                raise BenchmarkDataError(score_path, line, "human_score", f"not a number: {score[line]!r}") from err
            mean = mean_or_none(numeric)
            if abs(mean - stated) > SCORE_TOLERANCE:
                raise BenchmarkAlignmentError(
                    path, i, "HumanScores",
                    f"mean {mean:.4f} differs from {score_path} line {line + 1} ({stated}) by more than 0.005",
                )
            turns = item["Context"].split("|||")
            for j, t in enumerate(turns):
                if not t.strip():
                    raise BenchmarkDataError(path, i, f"Context[{j}]", "empty turn")
            reference = require_str(ref[line], ref_path, line, "reference")
            rows[i] = correlation_row(
                id=f"{NAME}/{sub}/{line}",
                benchmark=NAME,
                subset=sub,
                system=system,
                level="turn",
                context=[(None, t.strip()) for t in turns],
                response=item["Response"].strip(),
                references=[reference.strip()],
                knowledge=None,
                aspects=ASPECTS,
                ratings=[numeric],
                excluded=[excluded],
            )
    return [rows[i] for i in range(len(data))]


class GradeEval(DialevalBuilder):
    """GRADE's 1200 human-rated (context, response, reference) triples; split ``test`` only. See the module doc."""

    CONFIGS = ((NAME, "GRADE human coherence judgements"),)

    @classmethod
    def source_files(cls, config_name: str, root: Path) -> list[Path]:
        base = root / "grade_eval"
        files = [require_file(root, JUDGEMENTS)]
        files += sorted(base.glob("eval_data/*/*/human_*.txt"))
        files += sorted(base.glob("human_score/*/*/human_score.txt"))
        return files

    def rows(self, split: str) -> list[dict]:
        return load_items(self.root)
