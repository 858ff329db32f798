"""Gold AMR corpora of the data directory (``amr/gold/``, see its ``SOURCES.md``), the PENMAN file reader they and
:class:`~dialeval.metrics.amr_eval.graph_sources.PenmanGraphs` share, and corpus Smatch.

The SAMSum silver parses in ``amr/dialogue/samsum_silver`` are deliberately not readable here: SAMSum's licence
(CC BY-NC-ND 4.0) forbids derivatives.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from dialeval.errors import InputError, InputFileError, UnknownNameError
from dialeval.paths import data_file
from dialeval.textfiles import jsonl_objects, read_text

__all__ = ["AMR_CORPORA", "PenmanBlock", "corpus_files", "iter_penman_file", "read_amr_corpus", "smatch_f1"]

_LP = "amr/gold/little_prince/"
_MASSIVE = "amr/gold/massive_amr/massive_amr.jsonl"
_BIO = "amr/gold/bio/"
#: Corpus name -> its splits.
AMR_CORPORA: dict[str, tuple[str, ...]] = {
    "little_prince": ("train", "dev", "test"),
    "massive_amr": ("train", "dev", "test"),
    "bio": ("dev", "test"),
}
_META = re.compile(r"::(\S+)(?:[ \t]+(.*?))?(?=[ \t]+::\S|[ \t]*$)")

PenmanBlock = tuple[int, dict[str, str], str]


def iter_penman_file(path: str | os.PathLike) -> Iterator[PenmanBlock]:
    """``(graph_number, metadata, graph_text)`` for each graph of a PENMAN file, graph numbers from 1.

    Graphs are separated by blank lines, as in AMR releases and amrlib's output. Each block's ``# ::key value``
    comment lines give ``metadata`` (a line may hold several keys; ``::snt`` is taken to the end of its
    ``::``-free stretch, as penman does); ``graph_text`` is the block's other lines, unchanged. Blocks of comments
    only (file headers) are skipped and not numbered. The text is not decoded here; a file that is not UTF-8
    raises :class:`~dialeval.errors.InputFileError` naming it.
    """
    path = Path(path)
    number = 0
    for block in re.split(r"\n[ \t]*\n", read_text(path).replace("\r\n", "\n")):
        lines = [line for line in block.split("\n") if line.strip()]
        comments = [line for line in lines if line.lstrip().startswith("#")]
        body = [line for line in lines if not line.lstrip().startswith("#")]
        if not body:
            continue
        number += 1
        metadata: dict[str, str] = {}
        for line in comments:
            for key, value in _META.findall(line):
                metadata.setdefault(key, value.strip())
        yield number, metadata, "\n".join(body)


def _gold_file(path: Path) -> Iterator[tuple[str, str, str]]:
    for number, meta, text in iter_penman_file(path):
        for key in ("id", "snt"):
            if key not in meta:
                raise InputFileError(f"{path}:{number}: graph has no '# ::{key}' metadata")
        yield meta["id"], meta["snt"], text


def read_amr_corpus(name: str, split: str, data_dir: str | os.PathLike | None = None
                    ) -> Iterator[tuple[str, str, str]]:
    """``(id, sentence, penman_text)`` for each graph of a gold corpus split, in file order.

    - ``little_prince`` (The Little Prince, ISI's public AMR release; research use with citation): ``train`` =
      the v1.6 training file (1274 graphs), ``test`` = the v1.6 test file (143), ``dev`` = the v3.0 graphs whose
      ids are in neither v1.6 split (145; v3.0 annotation conventions, so they may differ in style from the
      v1.6 splits).
    - ``massive_amr`` (MASSIVE-AMR, en-US voice-assistant questions): the split is the jsonl's ``partition``
      field (train 1183 / dev 214 / test 288); the sentence is ``utt``, the graph ``raw_amr``. Licence
      CC BY-NC 4.0: non-commercial use only.
    - ``bio`` (Bio AMR 0.8, PubMed cancer sentences): ``dev`` / ``test`` files (500 each).

    The data directory comes from :func:`dialeval.paths.resolve_data_dir` (``data_dir``, ``$DIALEVAL_DATA_DIR``,
    ...). An unknown corpus or split raises :class:`~dialeval.errors.UnknownNameError`; a missing file
    :class:`~dialeval.errors.DataDirNotFound`. The PENMAN text is yielded as written in the file.
    """
    if name not in AMR_CORPORA:
        raise UnknownNameError("AMR corpus", name, AMR_CORPORA)
    if split not in AMR_CORPORA[name]:
        raise UnknownNameError(f"split of AMR corpus {name!r}", split, AMR_CORPORA[name])
    if name == "little_prince":
        if split in ("train", "test"):
            part = "training" if split == "train" else "test"
            yield from _gold_file(data_file(f"{_LP}amr-bank-struct-v1.6-{part}.txt", data_dir))
            return
        taken = {gid for part in ("training", "test")
                 for gid, _, _ in _gold_file(data_file(f"{_LP}amr-bank-struct-v1.6-{part}.txt", data_dir))}
        yield from (g for g in _gold_file(data_file(f"{_LP}amr-bank-struct-v3.0.txt", data_dir)) if g[0] not in taken)
    elif name == "bio":
        yield from _gold_file(data_file(f"{_BIO}amr-release-{split}-bio.txt", data_dir))
    else:
        path = data_file(_MASSIVE, data_dir)
        for line_no, row in jsonl_objects(path):
            missing = [k for k in ("id", "partition", "utt", "raw_amr") if k not in row]
            if missing:
                raise InputFileError(f"{path}:{line_no}: no {missing[0]!r} field")
            if row["partition"] == split:
                yield str(row["id"]), row["utt"], row["raw_amr"]


def corpus_files(name: str, split: str) -> list[str]:
    """The data-directory files (relative paths) that :func:`read_amr_corpus` reads for ``name`` / ``split``."""
    if name not in AMR_CORPORA:
        raise UnknownNameError("AMR corpus", name, AMR_CORPORA)
    if name == "little_prince":
        parts = {"train": ("training",), "test": ("test",), "dev": ("training", "test", "v3.0")}[split]
        return [f"{_LP}amr-bank-struct-{'v3.0' if p == 'v3.0' else f'v1.6-{p}'}.txt" for p in parts]
    if name == "bio":
        return [f"{_BIO}amr-release-{split}-bio.txt"]
    return [_MASSIVE]


def _one_line(text: str, where: str) -> str:
    import penman
    from penman.models.amr import model as amr_model

    from .graphs import decode_penman

    graph = decode_penman(text, where)
    graph.metadata = {}
    return penman.encode(graph, indent=None, model=amr_model)


def smatch_f1(predicted: Sequence[str], gold: Sequence[str]) -> dict[str, float | int]:
    """Corpus Smatch of ``predicted`` against ``gold`` PENMAN strings, pair by pair (the ``smatch`` package).

    Returns ``{"precision", "recall", "f1", "n"}``: matched triples over predicted / gold triples summed over the
    corpus, as ``smatch.py`` reports a file pair. Smatch's hill-climbing restarts use Python's ``random``; it is
    seeded with 0 for the call (and its state restored), so the result is reproducible. Lists of different
    lengths, or a string that is not one PENMAN graph, raise :class:`~dialeval.errors.InputError` naming it
    (``predicted[3]``).
    """
    import random

    import smatch

    if len(predicted) != len(gold):
        raise InputError(f"predicted has {len(predicted)} graphs but gold has {len(gold)}")
    pairs = [(_one_line(p, f"predicted[{i}]"), _one_line(g, f"gold[{i}]"))
             for i, (p, g) in enumerate(zip(predicted, gold))]
    state = random.getstate()
    random.seed(0)
    match = test = ref = 0
    try:
        for p, g in pairs:
            smatch.match_triple_dict.clear()
            m, t, r = smatch.get_amr_match(p, g)
            match, test, ref = match + m, test + t, ref + r
    finally:
        smatch.match_triple_dict.clear()
        random.setstate(state)
    precision, recall, f1 = smatch.compute_f(match, test, ref)
    return {"precision": precision, "recall": recall, "f1": f1, "n": len(pairs)}
