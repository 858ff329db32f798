"""Model inputs for GRADE: tokenised ``[CLS] context [SEP] response [SEP]`` plus the keyword topic graph.

The special tokens around the two sides are the encoder tokenizer's own pair template (:func:`pair_template`):
``[CLS] context [SEP] response [SEP]`` for a BERT tokenizer, ``<s> context </s></s> response </s>`` for MPNet's.

One place builds a batch of model inputs, for training and scoring alike, so both see exactly the same
preprocessing: the two most recent context turns (GRADE is trained on two-turn contexts) joined by a space,
pair truncation to ``max_seq_length`` that cuts the longer side first and keeps the end of the context, and the
graph features of :class:`~dialeval.metrics.grade.features.GraphFeaturizer`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ...backbone.encoder import base_tokenizer
from .features import collate

CONTEXT_TURNS = 2


# The files a GRADE checkpoint carries beside the model: keyword IDF and the ConceptNet graph tables.
KEYWORDS_FILE = "keywords.json"
GRAPH_DIR = "graph"


def to_device(inputs: dict[str, Any], device: torch.device | str) -> dict[str, Any]:
    """A batch of model inputs with its tensors on ``device`` (other values as they are)."""
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def context_window(turns: Sequence[str]) -> list[str]:
    """The turns GRADE reads: the last two."""
    return list(turns[-CONTEXT_TURNS:])


def pair_template(tokenizer) -> tuple[list[int], list[int], list[int]]:
    """The special token ids that ``tokenizer`` puts before, between and after the two sides of a pair (BERT's
    ``[CLS]``, ``[SEP]``, ``[SEP]``; MPNet's ``<s>``, ``</s> </s>``, ``</s>``), read off its own encoding of a pair
    (its special-tokens mask), so that no encoder's ids are written here."""
    encoded = tokenizer("a", "b", return_special_tokens_mask=True)
    ids, special = encoded["input_ids"], encoded["special_tokens_mask"]
    sides = [i for i in range(len(ids)) if not special[i]]
    starts = [i for i in sides if i == 0 or special[i - 1]]  # the first token of each side
    if len(starts) != 2:
        raise ValueError(f"tokenizer {type(tokenizer).__name__} does not encode a pair as two sides among special "
                         f"tokens (ids {ids}, special-tokens mask {special})")
    first_end = next(i for i in range(starts[0], len(ids)) if special[i])
    second_end = next((i for i in range(starts[1], len(ids)) if special[i]), len(ids))
    return ids[:starts[0]], ids[first_end:starts[1]], ids[second_end:]


class GradeInputBuilder:
    """Turns (context turns, response) pairs into a model-ready batch; graph features are cached per pair."""

    def __init__(self, tokenizer, featurizer, *, max_seq_length: int = 128, use_graph: bool = True,
                 cache_size: int = 200_000) -> None:
        self.tokenizer = tokenizer
        self.featurizer = featurizer
        self.max_seq_length = max_seq_length
        self.template = pair_template(tokenizer)
        if tokenizer.pad_token_id is None:
            raise ValueError(f"tokenizer {type(tokenizer).__name__} has no padding token (pad_token_id)")
        self.pad_id = tokenizer.pad_token_id
        self.use_graph = use_graph
        self.cache_size = cache_size
        self._graph_cache: dict[tuple[tuple[str, ...], str], dict[str, Any]] = {}
        self.truncated = 0  # pairs cut to max_seq_length since the last reset (the caller resets it)
        self.truncated_items: list[int] = []  # their places in the calls to :meth:`prepare` since then

    @property
    def special_tokens(self) -> int:
        """Special tokens around a pair (BERT: 3, MPNet: 4)."""
        return sum(map(len, self.template))

    def token_ids(self, context: Sequence[str], response: str) -> tuple[list[int], int]:
        """Token ids of ``[CLS] context [SEP] response [SEP]`` (the tokenizer's :func:`pair_template`) and the length
        of its context segment (everything before the response's first token); the context keeps its end when cut.
        A pair that has to be cut adds one to :attr:`truncated`."""
        # Both sides are tokenised whole and cut below, so transformers' warning about a sequence longer than the
        # model's maximum (verbose=True) would be wrong here: nothing that long reaches the model.
        ctx = self.tokenizer(" ".join(context), add_special_tokens=False, verbose=False)["input_ids"]
        rsp = self.tokenizer(response, add_special_tokens=False, verbose=False)["input_ids"]
        budget = self.max_seq_length - self.special_tokens
        if len(ctx) + len(rsp) > budget:
            self.truncated += 1
            while len(ctx) + len(rsp) > budget:  # longest first, as BERT's pair truncation
                if len(ctx) >= len(rsp):
                    ctx = ctx[1:]
                else:
                    rsp = rsp[:-1]
        before, between, after = self.template
        return [*before, *ctx, *between, *rsp, *after], len(before) + len(ctx) + len(between)

    def graphs(self, pairs: Sequence[tuple[Sequence[str], str]]) -> list[dict[str, Any]]:
        """Graph features per (context window, response); uncached pairs are featurised in one spaCy pass."""
        keys = [(tuple(c), r) for c, r in pairs]
        todo = list(dict.fromkeys(k for k in keys if k not in self._graph_cache))
        if todo:
            if len(self._graph_cache) + len(todo) > self.cache_size:
                self._graph_cache.clear()
            feats = self.featurizer.featurize_batch([list(c) for c, _ in todo], [r for _, r in todo])
            self._graph_cache.update(zip(todo, feats))
        return [self._graph_cache[k] for k in keys]

    def prepare(self, pairs: Sequence[tuple[Sequence[str], str]]) -> list[dict[str, Any]]:
        """Per pair: token ids, length of the ``[CLS] context [SEP]`` segment, and graph features."""
        windows = [(context_window(c), r) for c, r in pairs]
        graphs = self.graphs(windows) if self.use_graph else [None] * len(windows)
        out = []
        for k, ((window, response), graph) in enumerate(zip(windows, graphs)):
            before = self.truncated
            ids, first_len = self.token_ids(window, response)
            if self.truncated > before:
                self.truncated_items.append(k)
            item: dict[str, Any] = {"ids": ids, "first_len": first_len}
            if graph is not None:
                item["graph"] = graph
            out.append(item)
        return out

    def collate(self, items: Sequence[dict[str, Any]], device: torch.device | str = "cpu", *,
                width: int | None = None, nodes: int | None = None) -> dict[str, Any]:
        """Pad prepared items to ``width`` tokens (default: the longest) and batch their graphs, padded to
        ``nodes`` node slots (default: the most nodes in the batch)."""
        width = width or max(len(it["ids"]) for it in items)
        input_ids = torch.full((len(items), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros(len(items), width, dtype=torch.long)
        types = torch.zeros(len(items), width, dtype=torch.long)
        for i, it in enumerate(items):
            n = len(it["ids"])
            input_ids[i, :n] = torch.tensor(it["ids"])
            attention[i, :n] = 1
            types[i, it["first_len"]:n] = 1
        out: dict[str, Any] = {"input_ids": input_ids, "attention_mask": attention, "token_type_ids": types}
        if self.use_graph:
            out.update(collate([it["graph"] for it in items], pad_to=nodes))
        return to_device(out, device)

    def batch(self, pairs: Sequence[tuple[Sequence[str], str]], device: torch.device | str = "cpu") -> dict[str, Any]:
        """Model inputs for ``pairs`` of (context turns, response), padded to the longest item."""
        return self.collate(self.prepare(pairs), device)
