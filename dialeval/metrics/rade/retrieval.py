"""Pseudo-references for RADE without a reference, as the paper's FED experiment: BM25 (``bm25s``, Lucene variant)
over the contexts of a reply corpus; the pseudo-reference of a context is the reply that followed the corpus
context most similar to it (its last :data:`QUERY_TURNS` turns), skipping a reply equal to the candidate itself.

Every context gets one. When BM25 has nothing to offer (no corpus context shares a word with the query once English
stop words are dropped, as for a context of ``"?"`` or ``"Is it?"``, or every match's reply is the candidate), the
reply comes from the corpus context nearest by :class:`TokenEmbeddingIndex`: the cosine of mean token embeddings
of the bundled MiniLM encoder, which keeps punctuation and stop words. Each :class:`PseudoReference` says which
route (:data:`ROUTES`) gave it. A context depends on nothing but the corpus, never on the other items scored.

Corpora, always named explicitly (nothing is retrieved unless asked for):

* ``"dailydialog"``: every reply of DailyDialog's train split with the turns before it, read from the data
  directory (``data_dir`` or its usual resolution);
* a path to a JSONL file, one ``{"context": str | list[str], "response": str}`` per line.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from safetensors import safe_open

from ...backbone.encoder import DEFAULT_ENCODER, base_tokenizer, resolve_encoder_path
from ...errors import DataDirNotFound, InputError
from ...perturb import SimilarTexts, same_text
from ...textfiles import jsonl_objects

#: Context turns that make a query (and a corpus entry's key).
QUERY_TURNS = 2
DAILYDIALOG = "dailydialog"
#: How a pseudo-reference was found: BM25 first, the token-embedding nearest neighbour when BM25 has none.
BM25, EMBEDDING = "bm25", "embedding"
ROUTES = (BM25, EMBEDDING)
#: Tokens of a text that its token-embedding vector reads (the end of a longer text is kept).
EMBEDDING_MAX_TOKENS = 512
_WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"


def _query(turns: Sequence[str]) -> str:
    return " ".join(turns[-QUERY_TURNS:])


class PseudoReference(NamedTuple):
    """A retrieved reply and the route that found it (one of :data:`ROUTES`)."""

    text: str
    route: str


class TokenEmbeddingIndex:
    """Nearest texts by the cosine of their token-embedding vectors, for contexts BM25 cannot match.

    A text's vector is the mean of the bundled MiniLM encoder's input word embeddings over its WordPiece tokens,
    ``[CLS]`` and ``[SEP]`` included (so no text is empty), with no forward pass: indexing DailyDialog's 76,000
    contexts takes seconds where running the encoder over them would take many minutes on a CPU. Unlike BM25 it
    sees punctuation and stop words, so ``"?"`` lands near the corpus contexts made mostly of a question mark.
    Each query is ranked on its own (one float32 matrix-vector product), so its neighbours never depend on what
    else is retrieved; ties keep corpus order.
    """

    def __init__(self, texts: Sequence[str]) -> None:
        if not texts:
            raise ValueError("a token-embedding index needs some texts")
        path, _ = resolve_encoder_path(DEFAULT_ENCODER)
        self.tokenizer = base_tokenizer(DEFAULT_ENCODER)
        self.tokenizer.truncation_side = "left"
        with safe_open(str(Path(path) / "model.safetensors"), framework="pt") as weights:
            if _WORD_EMBEDDINGS not in weights.keys():
                raise ValueError(f"the encoder at {path} has no {_WORD_EMBEDDINGS!r} tensor")
            self.word_embeddings = weights.get_tensor(_WORD_EMBEDDINGS).float()
        self.vectors = self.embed(texts)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length token-embedding vectors of ``texts``, float32 [len(texts), hidden]."""
        ids = self.tokenizer(list(texts), add_special_tokens=True, truncation=True,
                             max_length=EMBEDDING_MAX_TOKENS)["input_ids"]
        lengths = torch.tensor([len(x) for x in ids], dtype=torch.long)
        offsets = torch.cumsum(lengths, 0) - lengths
        flat = torch.tensor([t for x in ids for t in x], dtype=torch.long)
        with torch.inference_mode():
            means = F.embedding_bag(flat, self.word_embeddings, offsets, mode="mean")
        means = means / means.norm(dim=1, keepdim=True).clamp_min(1e-12)
        return means.numpy().astype(np.float32, copy=False)

    def ranked(self, query: str) -> np.ndarray:
        """Indices of every indexed text, nearest to ``query`` first; ties by index."""
        similarity = self.vectors @ self.embed([query])[0]
        return np.argsort(-similarity, kind="stable")


class PseudoReferences:
    """Retrieval of a pseudo-reference per (context, candidate): BM25, then the token-embedding nearest neighbour;
    see the module docstring. The embedding index is built on the first context BM25 cannot serve."""

    def __init__(self, contexts: Sequence[Sequence[str]], replies: Sequence[str], *, name: str) -> None:
        if len(contexts) != len(replies) or not replies:
            raise ValueError(f"a pseudo-reference corpus needs as many contexts as replies, and some: got "
                             f"{len(contexts)} and {len(replies)}")
        self.name = name
        self.replies = list(replies)
        self._queries = [_query(c) for c in contexts]
        self._index = SimilarTexts(self._queries, range(len(replies)))
        self._embedding_index: TokenEmbeddingIndex | None = None

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

        try:
            ds = load_benchmark("dailydialog", split="train", data_dir=data_dir)
        except DataDirNotFound as err:
            raise DataDirNotFound(f"pseudo_references={DAILYDIALOG!r} reads DailyDialog's training dialogues from "
                                  f"the data directory: {err}") from None
        contexts, replies = [], []
        for turns in ds["utterances"]:
            for i in range(1, len(turns)):
                contexts.append(turns[max(0, i - QUERY_TURNS):i])
                replies.append(turns[i])
        return cls(contexts, replies, name=DAILYDIALOG)

    @property
    def embedding_index(self) -> TokenEmbeddingIndex:
        """The token-embedding index of the corpus contexts (built on first use)."""
        if self._embedding_index is None:
            self._embedding_index = TokenEmbeddingIndex(self._queries)
        return self._embedding_index

    def _routes(self, query: str) -> Iterator[tuple[str, int]]:
        """(route, corpus index) candidates for ``query``, best first: BM25's matches, then every corpus entry by
        token-embedding similarity (only reached when no BM25 match was taken)."""
        for k in self._index.ranked(query):
            yield BM25, int(k)
        for k in self.embedding_index.ranked(query):
            yield EMBEDDING, int(k)

    def retrieve(self, context: Sequence[str], candidate: str) -> PseudoReference:
        """The pseudo-reference of one item: the first reply on :meth:`_routes` that is not the candidate itself.
        Only a corpus whose every reply equals the candidate has none (an error naming the context)."""
        query = _query(context)
        for route, k in self._routes(query):
            if not same_text(self.replies[k], candidate):
                return PseudoReference(self.replies[k], route)
        raise InputError(f"no pseudo-reference in {self.name} for the context {query[:80]!r}: every reply of the "
                         f"corpus equals the candidate {candidate[:80]!r}; pass references=[...]")


__all__ = ["BM25", "DAILYDIALOG", "EMBEDDING", "QUERY_TURNS", "ROUTES", "PseudoReference", "PseudoReferences",
           "TokenEmbeddingIndex"]
