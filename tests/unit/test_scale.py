"""Scoring at scale: lazy sources, chunked and resumable output (manifest, torn tails, refusals), bad rows by
file:line and field, and `dialeval score -o` on top of it."""

import csv
import json
import random
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import dialeval
from dialeval.cli import app
from dialeval.errors import DialevalError, InputError
from dialeval.scale import manifest_path, open_source, score_stream
from dialeval.scale.output import OutputConflict

runner = CliRunner()

WORDS = ("the a my your cat dog park house tree river coffee train phone movie dinner music weather weekend "
         "went saw liked bought cooked watched played is was will very really quite big small late early").split()


def _sentence(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def make_rows(n: int, *, seed: int = 0, references: bool = True, long: bool = False) -> list[dict]:
    """``n`` rows (id, context, response[, references]) of varied lengths; ``long`` gives turns of up to 40 words."""
    rng = random.Random(seed)
    high = 40 if long else 12
    rows = []
    for i in range(n):
        row = {"id": f"r{i:03d}", "context": [_sentence(rng, 1, high) for _ in range(rng.randint(1, 4))],
               "response": _sentence(rng, 1, high)}
        if references:
            row["references"] = [_sentence(rng, 1, high) for _ in range(rng.randint(1, 2))]
        rows.append(row)
    return rows


def write_jsonl(path, rows, *, blank_after=()) -> list[int]:
    """Rows as JSON lines, a blank line after each index in ``blank_after``; returns each row's line number."""
    lines, where = [], []
    for i, row in enumerate(rows):
        lines.append(row if isinstance(row, str) else json.dumps(row, ensure_ascii=False))
        where.append(len(lines))
        if i in blank_after:
            lines.append("   " if i % 2 else "")
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return where


def write_csv(path, rows, *, extra_cell_at=None) -> list[int]:
    """Rows as CSV (list columns as JSON cells); returns each row's first line number."""
    header = list(rows[0])
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(header)
        for i, row in enumerate(rows):
            cells = [json.dumps(row[k], ensure_ascii=False) if isinstance(row[k], list) else row[k] for k in header]
            writer.writerow(cells + (["surplus"] if i == extra_cell_at else []))
    where, line = [], 2
    for row in rows:
        where.append(line)
        line += sum(str(v).count("\n") for v in row.values()) + 1
    return where


def write_parquet(path, rows, *, row_group_size=None) -> None:
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=row_group_size)


def read_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def manifest(path) -> dict:
    return json.loads(manifest_path(path).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def bleu4():
    return dialeval.load_scorer("bleu4")


@pytest.fixture(scope="module")
def pone(one_torch_thread):
    return dialeval.load_scorer("pone")


# -- sources ---------------------------------------------------------------------------------------------------------
# A comma, quotes, a line break inside a cell, non-ASCII text: what a CSV round trip is most likely to get wrong.
SOURCE_ROWS = [
    {"id": "a", "context": ["hi there", "how are you?"], "response": "fine, thanks", "references": ["good"]},
    {"id": "b", "context": ["any plans?"], "response": 'a "quoted" word\nand a second line',
     "references": ["no", "none yet"]},
    {"id": "c", "context": ["café?"], "response": "sí, el café", "references": ["yes"]},
    *make_rows(20, seed=3),
]
SOURCE_KINDS = ["jsonl", "csv", "parquet", "dataset", "iterable_dataset", "list"]


def make_source(kind: str, tmp_path, rows=SOURCE_ROWS):
    """(the source, the file it is in or None)."""
    if kind in ("dataset", "iterable_dataset"):
        import datasets

        dataset = datasets.Dataset.from_list(rows)
        return (dataset if kind == "dataset" else dataset.to_iterable_dataset()), None
    if kind == "list":
        return list(rows), None
    path = tmp_path / f"rows.{kind}"
    {"jsonl": write_jsonl, "csv": write_csv,
     "parquet": lambda p, r: write_parquet(p, r, row_group_size=10)}[kind](path, rows)
    return path, path


@pytest.mark.parametrize("kind", SOURCE_KINDS)
def test_every_source_kind_yields_the_same_fields_in_the_same_order(kind, tmp_path):
    source, _ = make_source(kind, tmp_path)
    got = list(open_source(source).rows())
    assert [r.index for r in got] == list(range(len(SOURCE_ROWS)))
    assert all(r.error is None and not r.fatal for r in got)
    assert [r.fields for r in got] == SOURCE_ROWS
    assert [list(r.fields) for r in got] == [list(row) for row in SOURCE_ROWS]  # key order too


# 23 rows in row groups of 10, 10 and 3: starts inside the second group and at group boundaries
@pytest.mark.parametrize("start", [0, 1, 12, 15, 19, 20, 22, 23, 30])
@pytest.mark.parametrize("kind", SOURCE_KINDS)
def test_rows_from_a_start_equal_the_tail_of_all_rows(kind, start, tmp_path):
    source, _ = make_source(kind, tmp_path)
    src = open_source(source)
    everything = [(r.index, r.where, r.fields) for r in src.rows()]
    assert len(everything) == 23
    assert [(r.index, r.where, r.fields) for r in src.rows(start)] == everything[start:]


def test_jsonl_where_is_file_and_line_counting_blank_lines(tmp_path):
    path = tmp_path / "in.jsonl"
    lines = write_jsonl(path, SOURCE_ROWS[:6], blank_after={0, 2, 3})
    assert lines == [1, 3, 4, 6, 8, 9]
    got = list(open_source(path).rows())
    assert [r.where for r in got] == [f"{path}:{n}" for n in lines]
    assert [r.index for r in got] == list(range(6))
    assert [r.where for r in open_source(path).rows(3)] == [f"{path}:{n}" for n in lines[3:]]


def test_csv_where_is_the_line_a_row_starts_on_after_a_cell_spanning_two_lines(tmp_path):
    path = tmp_path / "in.csv"
    lines = write_csv(path, SOURCE_ROWS[:4])
    assert lines == [2, 3, 5, 6]  # row b's response spans lines 3 and 4
    got = list(open_source(path).rows())
    assert [r.where for r in got] == [f"{path}:{n}" for n in lines]
    assert got[1].fields["response"] == SOURCE_ROWS[1]["response"]
    assert [r.where for r in open_source(path).rows(2)] == [f"{path}:5", f"{path}:6"]


def test_parquet_where_is_file_and_row_number(tmp_path):
    path = tmp_path / "in.parquet"
    write_parquet(path, SOURCE_ROWS, row_group_size=10)
    assert [r.where for r in open_source(path).rows()] == [f"{path}: row {i}" for i in range(len(SOURCE_ROWS))]


@pytest.mark.parametrize("kind", ["dataset", "iterable_dataset", "list"])
def test_in_memory_where_is_the_row_number(kind, tmp_path):
    source, _ = make_source(kind, tmp_path)
    assert [r.where for r in open_source(source).rows(20)] == ["row 20", "row 21", "row 22"]


# -- chunking changes nothing ----------------------------------------------------------------------------------------
def test_chunked_stream_of_a_learned_metric_equals_one_scoring_call_exactly(pone, tmp_path):
    rows = make_rows(40, seed=11, references=False, long=True)
    path, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_jsonl(path, rows)
    result = score_stream(pone, path, out, chunk_size=7, batch_size=4)
    whole = pone.score(contexts=[r["context"] for r in rows], responses=[r["response"] for r in rows],
                       batch_size=32, progress_bar=False)
    written = read_jsonl(out)
    assert [r["id"] for r in written] == [r["id"] for r in rows]
    assert [{k: v for k, v in r.items() if k != "score"} for r in written] == rows
    assert [r["score"] for r in written] == list(whole.scores)
    assert result.totals.rows == result.totals.scored == 40
    assert result.system_score == sum(r["score"] for r in written) / 40
    assert result.system_score == pytest.approx(whole.system_score, rel=1e-12)


@pytest.mark.parametrize("name", ["pone", "bert_ruber"])
def test_a_learned_score_does_not_depend_on_the_rows_scored_with_it(name, one_torch_thread):
    """What chunking and several processes rely on (scale/stream.py's docstring): one more row in front of the
    others moves every row to another place in the fixed-size forward passes, and no score may change."""
    scorer = dialeval.load_scorer(name)
    rows = make_rows(150, seed=5, long=True)
    kwargs = {"batch_size": 32, "progress_bar": False}

    def scores(part):
        refs = [r["references"] for r in part] if scorer.requires_references else None
        return scorer.score(contexts=[r["context"] for r in part], responses=[r["response"] for r in part],
                            references=refs, **kwargs).scores

    alone = scores(rows)
    shifted = scores(rows[:1] + rows)[1:]
    changed = [(rows[i]["id"], a, b) for i, (a, b) in enumerate(zip(alone, shifted)) if a != b]
    assert not changed, f"{len(changed)} of {len(rows)} scores changed with their batch-mates: {changed[:3]}"


def test_chunked_stream_of_dialogue_rows_equals_one_scoring_call_exactly(tmp_path, one_torch_thread):
    scorer = dialeval.load_scorer("context_cosine")
    rng = random.Random(2)
    rows = [{"id": f"d{i}", "dialogue": [_sentence(rng, 1, 25) for _ in range(rng.randint(2, 5))]}
            for i in range(30)]
    path, out = tmp_path / "dialogues.jsonl", tmp_path / "out.jsonl"
    write_jsonl(path, rows)
    result = score_stream(scorer, path, out, chunk_size=7, batch_size=4)
    whole = scorer.score_dialogues(dialogues=[r["dialogue"] for r in rows], batch_size=32, progress_bar=False)
    written = read_jsonl(out)
    assert [r["id"] for r in written] == [r["id"] for r in rows]
    assert [r["dialogue"] for r in written] == [r["dialogue"] for r in rows]
    assert [r["score"] for r in written] == list(whole.scores)
    assert result.system_score == sum(whole.scores) / 30
    assert {m["level"] for m in result.metadata} == {"dialogue"}


# -- incremental writing and resume ----------------------------------------------------------------------------------
def rows_then_fail(rows, fail_at=None):
    """The rows, one at a time; raises RuntimeError instead of row ``fail_at`` (a source that breaks midway)."""
    for i, row in enumerate(rows):
        if i == fail_at:
            raise RuntimeError("the source broke")
        yield row


RESUME_ROWS = make_rows(60, seed=7)


def _stopped_run(scorer, out, *, fail_at=25, chunk_size=10):
    with pytest.raises(RuntimeError, match="the source broke"):
        score_stream(scorer, rows_then_fail(RESUME_ROWS, fail_at), out, chunk_size=chunk_size)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_a_source_failing_midway_leaves_every_complete_chunk_and_a_manifest_saying_so(bleu4, tmp_path, suffix):
    out, ref = tmp_path / f"out{suffix}", tmp_path / f"ref{suffix}"
    score_stream(bleu4, rows_then_fail(RESUME_ROWS), ref, chunk_size=10)
    _stopped_run(bleu4, out)
    state = manifest(out)
    assert state["totals"]["rows"] == 20 and state["complete"] is False
    assert state["bytes"] == out.stat().st_size
    assert state["run"] == {"metric": "bleu4", "input": "generator"}
    assert state["signature"] == bleu4.signature
    if suffix == ".jsonl":
        assert [r["id"] for r in read_jsonl(out)] == [r["id"] for r in RESUME_ROWS[:20]]
        expected = b"".join(ref.read_bytes().splitlines(keepends=True)[:20])
    else:
        assert [r["id"] for r in csv.DictReader(out.open(newline=""))] == [r["id"] for r in RESUME_ROWS[:20]]
        expected = b"".join(ref.read_bytes().splitlines(keepends=True)[:21])  # the header and 20 rows
    assert out.read_bytes() == expected


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_resuming_with_a_fresh_source_gives_the_uninterrupted_output_byte_for_byte(bleu4, tmp_path, suffix):
    out, ref = tmp_path / f"out{suffix}", tmp_path / f"ref{suffix}"
    reference = score_stream(bleu4, rows_then_fail(RESUME_ROWS), ref, chunk_size=10)
    _stopped_run(bleu4, out)
    result = score_stream(bleu4, rows_then_fail(RESUME_ROWS), out, chunk_size=10)
    assert result.resumed_from == 20
    assert out.read_bytes() == ref.read_bytes()
    assert manifest(out)["complete"] is True
    assert result.totals.rows == reference.totals.rows == 60
    assert result.system_score == reference.system_score
    if suffix == ".jsonl":
        ids = [r["id"] for r in read_jsonl(out)]
        assert ids == [r["id"] for r in RESUME_ROWS] and len(set(ids)) == 60


@pytest.mark.parametrize("tail", ["half a line", "whole lines the manifest does not count"])
def test_a_torn_tail_is_cut_off_on_resume_and_every_row_is_written_once(bleu4, tmp_path, tail):
    out, ref = tmp_path / "out.jsonl", tmp_path / "ref.jsonl"
    score_stream(bleu4, rows_then_fail(RESUME_ROWS), ref, chunk_size=10)
    _stopped_run(bleu4, out)
    ref_lines = ref.read_bytes().splitlines(keepends=True)
    torn = ref_lines[20][: len(ref_lines[20]) // 2] if tail == "half a line" else b"".join(ref_lines[20:23])
    with open(out, "ab") as fh:  # as a kill in the middle of writing a chunk leaves it
        fh.write(torn)
    score_stream(bleu4, rows_then_fail(RESUME_ROWS), out, chunk_size=10)
    assert out.read_bytes() == ref.read_bytes()
    ids = [r["id"] for r in read_jsonl(out)]
    assert ids == [r["id"] for r in RESUME_ROWS]


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet", "dataset", "iterable_dataset", "list"])
def test_a_run_stopped_after_its_last_chunk_but_before_finishing_completes_on_resume(kind, bleu4, tmp_path,
                                                                                    monkeypatch):
    """A kill between the last chunk's manifest and the final one: the next run starts at the end of the input."""
    from dialeval.scale.output import ResultWriter

    source, _ = make_source(kind, tmp_path)
    ref, out = tmp_path / "ref.jsonl", tmp_path / "out.jsonl"
    score_stream(bleu4, source, ref, chunk_size=8)
    source, _ = make_source(kind, tmp_path)

    def killed(self):
        raise RuntimeError("killed before finish")

    with monkeypatch.context() as patch:
        patch.setattr(ResultWriter, "finish", killed)
        with pytest.raises(RuntimeError, match="killed before finish"):
            score_stream(bleu4, source, out, chunk_size=8)
    assert manifest(out)["complete"] is False and manifest(out)["totals"]["rows"] == 23
    result = score_stream(bleu4, source, out, chunk_size=8)
    assert result.resumed_from == 23 and result.totals.rows == 23
    assert manifest(out)["complete"] is True
    assert out.read_bytes() == ref.read_bytes()


def test_a_parquet_input_stopped_midway_resumes_to_the_uninterrupted_output(bleu4, tmp_path):
    """Row groups of 10 and a last one of 5: a resume from row 15 must not start at the wrong row group."""
    rows = [dict(r) for r in make_rows(45, seed=12)]
    rows[15]["context"] = None
    path, ref, out = tmp_path / "in.parquet", tmp_path / "ref.jsonl", tmp_path / "out.jsonl"
    write_parquet(path, rows, row_group_size=10)
    score_stream(bleu4, path, ref, chunk_size=8, on_error="skip")
    with pytest.raises(InputError, match=re.escape(f"{path}: row 15: field 'context' is None")):
        score_stream(bleu4, path, out, chunk_size=8)
    result = score_stream(bleu4, path, out, chunk_size=8, on_error="skip")
    assert result.resumed_from == 15
    ids = [r["id"] for r in read_jsonl(out)]
    assert ids == [r["id"] for r in rows], "rows lost or written twice"
    assert out.read_bytes() == ref.read_bytes()


# -- refusals --------------------------------------------------------------------------------------------------------
@pytest.fixture
def turn_file(tmp_path):
    path = tmp_path / "in.jsonl"
    write_jsonl(path, make_rows(30, seed=8))
    return path


def test_another_checkpoint_on_the_same_output_is_refused(pone, turn_file, tmp_path, monkeypatch):
    out = tmp_path / "out.jsonl"
    score_stream(pone, turn_file, out, chunk_size=16)
    before = out.read_bytes()
    other = dialeval.load_scorer("pone")
    monkeypatch.setattr(other, "fingerprint", lambda: {**pone.fingerprint(), "checkpoint_sha256": "0123456789ab"})
    assert other.signature != pone.signature
    with pytest.raises(OutputConflict, match="signature") as err:
        score_stream(other, turn_file, out, chunk_size=16)
    assert "0123456789ab" in str(err.value)
    assert out.read_bytes() == before and manifest(out)["signature"] == pone.signature


def test_another_metric_on_the_same_output_is_refused(bleu4, turn_file, tmp_path):
    out = tmp_path / "out.jsonl"
    score_stream(bleu4, turn_file, out, chunk_size=16)
    before = out.read_bytes()
    with pytest.raises(OutputConflict, match=re.escape(str(out))):
        score_stream(dialeval.load_scorer("rougeL"), turn_file, out, chunk_size=16)
    assert out.read_bytes() == before


def test_another_input_on_the_same_output_is_refused(bleu4, turn_file, tmp_path):
    out, other = tmp_path / "out.jsonl", tmp_path / "other.jsonl"
    other.write_bytes(turn_file.read_bytes())
    score_stream(bleu4, turn_file, out, chunk_size=16)
    with pytest.raises(OutputConflict, match="input"):
        score_stream(bleu4, other, out, chunk_size=16)


def test_the_same_input_spelled_as_a_relative_path_resumes(bleu4, turn_file, tmp_path, monkeypatch):
    out, expected = tmp_path / "out.jsonl", tmp_path / "expected.jsonl"
    score_stream(bleu4, turn_file, expected, chunk_size=16)
    good = turn_file.read_text()
    lines = good.splitlines(keepends=True)
    turn_file.write_text("".join(lines[:20]) + "not json\n" + "".join(lines[21:]))
    with pytest.raises(InputError, match=":21: not valid JSON"):
        score_stream(bleu4, turn_file, out, chunk_size=16)  # an absolute path; stops after row 19
    turn_file.write_text(good)  # the row fixed, the run goes on under another spelling of the same file
    monkeypatch.chdir(tmp_path)
    result = score_stream(bleu4, f"./{turn_file.name}", out, chunk_size=16)
    assert result.resumed_from == 20
    assert read_jsonl(out) == read_jsonl(expected)


def test_an_output_without_a_manifest_is_refused_and_left_alone(bleu4, turn_file, tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text('{"mine": 1}\n')
    with pytest.raises(OutputConflict, match="overwrite") as err:
        score_stream(bleu4, turn_file, out, chunk_size=16)
    assert isinstance(err.value, DialevalError)  # the command line reports it as one line, status 2
    assert out.read_text() == '{"mine": 1}\n'
    assert not manifest_path(out).exists()


def test_an_output_shorter_than_its_manifest_says_is_refused(bleu4, turn_file, tmp_path):
    out = tmp_path / "out.jsonl"
    score_stream(bleu4, turn_file, out, chunk_size=16)
    data = out.read_bytes()
    out.write_bytes(data[:-10])
    with pytest.raises(OutputConflict, match=f"{len(data) - 10} bytes"):
        score_stream(bleu4, turn_file, out, chunk_size=16)
    assert out.read_bytes() == data[:-10]


def test_overwrite_starts_afresh(bleu4, turn_file, tmp_path):
    out, ref = tmp_path / "out.jsonl", tmp_path / "ref.jsonl"
    score_stream(bleu4, turn_file, ref, chunk_size=16)
    score_stream(dialeval.load_scorer("rougeL"), turn_file, out, chunk_size=16)
    result = score_stream(bleu4, turn_file, out, chunk_size=16, overwrite=True)
    assert result.resumed_from == 0 and result.totals.rows == 30
    assert out.read_bytes() == ref.read_bytes()
    assert manifest(out)["signature"] == bleu4.signature and manifest(out)["complete"] is True
    out.write_text("not ours\n")
    manifest_path(out).unlink()
    score_stream(bleu4, turn_file, out, chunk_size=16, overwrite=True)
    assert out.read_bytes() == ref.read_bytes()


def test_a_complete_output_run_again_returns_its_totals_without_scoring_or_writing(bleu4, turn_file, tmp_path,
                                                                                   monkeypatch):
    out = tmp_path / "out.jsonl"
    first = score_stream(bleu4, turn_file, out, chunk_size=16)
    data, mtime = out.read_bytes(), out.stat().st_mtime_ns
    state, state_mtime = manifest_path(out).read_bytes(), manifest_path(out).stat().st_mtime_ns

    def must_not_score(*args, **kwargs):
        raise AssertionError("a complete output was scored again")

    monkeypatch.setattr(bleu4, "_score_items", must_not_score)
    again = score_stream(bleu4, turn_file, out, chunk_size=16)
    assert again.totals == first.totals and again.system_score == first.system_score
    assert again.resumed_from == 30
    assert out.read_bytes() == data and out.stat().st_mtime_ns == mtime
    assert manifest_path(out).read_bytes() == state and manifest_path(out).stat().st_mtime_ns == state_mtime


# -- bad rows --------------------------------------------------------------------------------------------------------
BAD_ROWS = make_rows(120, seed=9)
BAD = 57
BAD_KINDS = {  # kind: (file suffix, what the reason says)
    "not_json": (".jsonl", "not valid JSON"),
    "response_not_text": (".jsonl", "field 'response' has type int"),
    "no_context": (".jsonl", "no 'context' field"),
    "csv_too_many_cells": (".csv", "the row has 5 cells but the header has 4"),
}


def write_bad_input(kind, tmp_path):
    """(path, line of row BAD, the rows) for 120 rows whose row BAD is bad in the way ``kind`` says."""
    suffix, _ = BAD_KINDS[kind]
    path = tmp_path / f"in{suffix}"
    rows = [dict(r) for r in BAD_ROWS]
    if kind == "csv_too_many_cells":
        rows[3]["response"] = "one line\nand another"  # a row spanning two lines before the bad one
        return path, write_csv(path, rows, extra_cell_at=BAD)[BAD], rows
    if kind == "not_json":
        rows[BAD] = json.dumps(rows[BAD])[:-9]
    elif kind == "response_not_text":
        rows[BAD]["response"] = 5
    else:
        del rows[BAD]["context"]
    return path, write_jsonl(path, rows, blank_after={10, 40})[BAD], rows


@pytest.mark.parametrize("kind", BAD_KINDS)
def test_a_bad_row_stops_the_run_naming_file_line_and_field_after_writing_every_row_before_it(kind, bleu4,
                                                                                             tmp_path):
    path, line, _ = write_bad_input(kind, tmp_path)
    out = tmp_path / "out.jsonl"
    with pytest.raises(InputError) as err:
        score_stream(bleu4, path, out, chunk_size=16)
    message = str(err.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert BAD_KINDS[kind][1] in message
    assert [r["id"] for r in read_jsonl(out)] == [r["id"] for r in BAD_ROWS[:BAD]]
    state = manifest(out)
    assert state["totals"]["rows"] == BAD and state["complete"] is False


@pytest.mark.parametrize("kind", BAD_KINDS)
def test_a_bad_row_under_skip_is_recorded_in_place_and_left_out_of_the_system_score(kind, bleu4, tmp_path):
    path, line, rows = write_bad_input(kind, tmp_path)
    with pytest.raises(InputError) as err:  # the reason, as a stopped run gives it
        score_stream(bleu4, path, None, chunk_size=16)
    reason = str(err.value)
    out = tmp_path / "out.jsonl"
    result = score_stream(bleu4, path, out, chunk_size=16, on_error="skip")
    written = read_jsonl(out)
    assert len(written) == 120
    assert written[BAD]["score"] is None and written[BAD]["error"] == reason
    assert reason.startswith(f"{path}:{line}: ") and BAD_KINDS[kind][1] in reason
    others = [r for i, r in enumerate(written) if i != BAD]
    assert [r["id"] for r in others] == [r["id"] for i, r in enumerate(BAD_ROWS) if i != BAD]
    assert all(isinstance(r["score"], float) and "error" not in r for r in others)
    good = [r for i, r in enumerate(rows) if i != BAD]
    alone = bleu4.score(contexts=[r["context"] for r in good], responses=[r["response"] for r in good],
                        references=[r["references"] for r in good], progress_bar=False)
    assert [r["score"] for r in others] == list(alone.scores)
    assert (result.totals.rows, result.totals.scored, result.totals.failed, result.totals.skipped) == (120, 119, 1, 0)
    assert result.system_score == sum(r["score"] for r in others) / 119


# -- empty turns -----------------------------------------------------------------------------------------------------
def test_empty_turn_skip_reasons_under_streaming_name_the_field_not_a_place_in_a_chunk(bleu4, tmp_path):
    rows = [dict(r) for r in make_rows(20, seed=4)]
    rows[5]["response"] = ""
    rows[14]["context"] = ["hello", "  "]
    path, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_jsonl(path, rows)
    result = score_stream(bleu4, path, out, chunk_size=4, empty_turns="skip")
    written = read_jsonl(out)
    assert written[5]["score"] is None and written[5]["skipped_reason"] == \
        "empty (or whitespace-only) text at field 'response'"
    assert written[14]["score"] is None and written[14]["skipped_reason"] == \
        "empty (or whitespace-only) text at field 'context', entry 1"
    assert [i for i, r in enumerate(written) if "skipped_reason" in r] == [5, 14]
    assert (result.totals.skipped, result.totals.scored, result.totals.failed) == (2, 18, 0)


# -- the command line ------------------------------------------------------------------------------------------------
def _system_score(res) -> str:
    found = re.findall(r"system score: (\S+)", res.stdout)
    assert len(found) == 1, res.output
    return found[0]


def test_cli_score_run_twice_prints_the_same_system_score_and_writes_every_row_once(turn_file, tmp_path):
    out = tmp_path / "out.jsonl"
    args = ["score", "--metric", "bleu4", "-i", str(turn_file), "-o", str(out), "--chunk-size", "8", "-q"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    data = out.read_bytes()
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.output
    assert _system_score(second) == _system_score(first)
    assert "pairs: 30" in first.stdout
    assert out.read_bytes() == data
    ids = [r["id"] for r in read_jsonl(out)]
    assert len(ids) == 30 and len(set(ids)) == 30


def test_cli_a_complete_output_run_again_prints_the_same_result_lines(turn_file, tmp_path):
    """stdout is the result (the level and row count, the system score, the signature), whether this run scored the
    rows or found them already written."""
    out = tmp_path / "out.jsonl"
    args = ["score", "--metric", "bleu4", "-i", str(turn_file), "-o", str(out), "-q"]
    first, second = runner.invoke(app, args), runner.invoke(app, args)
    assert first.exit_code == second.exit_code == 0, second.output
    assert first.stdout.splitlines()[0].startswith("pairs: 30  system score: ")
    assert second.stdout == first.stdout


def test_cli_stopped_by_a_bad_row_goes_on_under_on_error_skip_and_says_one_failed(tmp_path):
    path, line, _ = write_bad_input("response_not_text", tmp_path)
    out = tmp_path / "out.jsonl"
    args = ["score", "--metric", "bleu4", "-i", str(path), "-o", str(out), "--chunk-size", "16", "-q"]
    stopped = runner.invoke(app, args)
    assert stopped.exit_code == 2, stopped.output
    assert f"error: {path}:{line}: field 'response'" in stopped.stderr
    resumed = runner.invoke(app, [*args, "--on-error", "skip"])
    assert resumed.exit_code == 0, resumed.output
    assert f"resumed: {BAD} rows" in resumed.stderr
    assert "pairs: 120 (1 failed)" in resumed.stdout
    written = read_jsonl(out)
    assert [r["id"] for r in written] == [r["id"] for r in BAD_ROWS]
    assert [i for i, r in enumerate(written) if "error" in r] == [BAD]


def test_cli_reads_a_parquet_input_like_the_same_rows_in_jsonl(turn_file, tmp_path):
    rows = read_jsonl(turn_file)
    parquet = tmp_path / "in.parquet"
    write_parquet(parquet, rows, row_group_size=7)
    outs = {}
    for name, source in (("jsonl", turn_file), ("parquet", parquet)):
        outs[name] = tmp_path / f"out-{name}.jsonl"
        res = runner.invoke(app, ["score", "--metric", "bleu4", "-i", str(source), "-o", str(outs[name]),
                                  "--chunk-size", "8", "-q"])
        assert res.exit_code == 0, res.output
    assert outs["parquet"].read_bytes() == outs["jsonl"].read_bytes()
    assert [r["id"] for r in read_jsonl(outs["parquet"])] == [r["id"] for r in rows]


def test_cli_overwrite_replaces_an_output_of_another_metric(turn_file, tmp_path):
    out = tmp_path / "out.jsonl"
    base = ["score", "-i", str(turn_file), "-o", str(out), "-q"]
    assert runner.invoke(app, [*base, "--metric", "rougeL"]).exit_code == 0
    refused = runner.invoke(app, [*base, "--metric", "bleu4"])
    assert refused.exit_code == 2 and "signature" in refused.stderr
    replaced = runner.invoke(app, [*base, "--metric", "bleu4", "--overwrite"])
    assert replaced.exit_code == 0, replaced.output
    assert "resumed" not in replaced.stderr
    rows = read_jsonl(turn_file)
    expected = dialeval.load_scorer("bleu4").score(contexts=[r["context"] for r in rows],
                                                   responses=[r["response"] for r in rows],
                                                   references=[r["references"] for r in rows], progress_bar=False)
    assert [r["score"] for r in read_jsonl(out)] == list(expected.scores)
    assert manifest(out)["run"]["metric"] == "bleu4"


def test_a_jsonl_source_knows_its_rows_for_the_progress_total_without_parsing_them(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}\n\n{"a": 2}\n  \nnot json, still a row\n{"a": 3}')
    assert open_source(path).length == 4 == len(list(open_source(path).rows()))
