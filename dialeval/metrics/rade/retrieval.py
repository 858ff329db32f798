"""Pseudo-references for RADE without a reference, as the paper's FED experiment: BM25 (``bm25s``, Lucene variant)
over the contexts of a reply corpus; the pseudo-reference of a context is the reply that followed the corpus
context most similar to it (its last :data:`QUERY_TURNS` turns), skipping a reply equal to the candidate itself.

Corpora, always named explicitly (nothing is retrieved unless asked for):

* ``"dailydialog"``: every reply of DailyDialog's train split with the turns before it, read from the data
  directory (``data_dir`` or its usual resolution);
* a path to a JSONL file, one ``{"context": str | list[str], "response": str}`` per line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...errors import InputError
from ...perturb import SimilarTexts, same_text
from ...textfiles import jsonl_objects

#: Context turns that make a query (and a corpus entry's key).
QUERY_TURNS = 2
DAILYDIALOG = "dailydialog"


def _query(turns: Sequence[str]) -> str:
    return " ".join(turns[-QUERY_TURNS:])


class PseudoReferences:
    """BM25 retrieval of a pseudo-reference per (context, candidate); see the module docstring."""

    def __init__(self, contexts: Sequence[Sequence[str]], replies: Sequence[str], *, name: str) -> None:
        if len(contexts) != len(replies) or not replies:
            raise ValueError(f"a pseudo-reference corpus needs as many contexts as replies, and some: got "
                             f"{len(contexts)} and {len(replies)}")
        self.name = name
        self.replies = list(replies)
        self._index = SimilarTexts([_query(c) for c in contexts], range(len(replies)))

    @classmethod
    def from_source(cls, source: str, *, data_dir: str | Path | None = None) -> PseudoReferences:
        if source == DAILYDIALOG:
            return cls._dailydialog(data_dir)
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"pseudo_references={source!r}: neither {DAILYDIALOG!r} nor a JSONL file")
        contexts, replies = [], []
        for line_no, row in jsonl_objects(path):
            context, reply = row.get("context"), row.get("response")
            if isinstance(context, str):
                context = [context]
            if not (isinstance(context, list) and all(isinstance(t, str) for t in context)):
                raise InputError(f"{path}:{line_no}: 'context' must be a string or a list of strings")
            if not isinstance(reply, str) or not reply.strip():
                raise InputError(f"{path}:{line_no}: 'response' must be a non-empty string")
            contexts.append(context)
            replies.append(reply)
        return cls(contexts, replies, name=path.name)

    @classmethod
    def _dailydialog(cls, data_dir: str | Path | None) -> PseudoReferences:
        from ...benchmarks import load_benchmark

        ds = load_benchmark("dailydialog", split="train", data_dir=data_dir)
        contexts, replies = [], []
        for turns in ds["utterances"]:
            for i in range(1, len(turns)):
                contexts.append(turns[max(0, i - QUERY_TURNS):i])
                replies.append(turns[i])
        return cls(contexts, replies, name=DAILYDIALOG)

    def retrieve(self, context: Sequence[str], candidate: str) -> str:
        """The pseudo-reference of one item; an error naming the context when no corpus context shares a word."""
        for k in self._index.ranked(_query(context)):
            reply = self.replies[int(k)]
            if not same_text(reply, candidate):
                return reply
        raise InputError(f"no pseudo-reference in {self.name} for the context {_query(context)[:80]!r}: no corpus "
                         "context shares a word with it; pass references=[...]")


__all__ = ["DAILYDIALOG", "QUERY_TURNS", "PseudoReferences"]
