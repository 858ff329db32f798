"""RADE's model inputs, built the same way for training and scoring.

The evaluator reads ``[CLS] context [SEP] reference [SEP] candidate [SEP]`` (token type 0 for the context part, 1
after it; segment ids 0, 1 and 2 for the context, the reference and the candidate, each with its closing ``[SEP]``,
which ``RadeConfig.pooling="segments"`` pools apart); with ``use_reference=False`` (the plain regressor baseline)
``[CLS] context [SEP] candidate [SEP]``.
The reference and the candidate keep at most ``max_reference_length`` tokens each (their beginning); the context
gets the rest of ``max_seq_length`` and keeps its most recent tokens. Context turns are joined with a space.
Anything cut is counted in :attr:`RadeInputBuilder.truncated`.

The decoder's inputs (training only): the context alone (``[CLS] context [SEP]``, most recent tokens) and the
reference as labels (``[CLS] reference [SEP]``, at most ``max_reference_length`` tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ...backbone.encoder import base_tokenizer

IGNORE_INDEX = -100


CONTEXT, REFERENCE, CANDIDATE = 0, 1, 2


@dataclass(frozen=True)
class EvaluatorInput:
    ids: list[int]
    type_ids: list[int]
    segment_ids: list[int]


class RadeInputBuilder:
    """Token ids of the evaluator's input and of the decoder's context and labels (see the module docstring)."""

    def __init__(self, tokenizer, *, max_seq_length: int, max_reference_length: int, use_reference: bool = True):
        if max_seq_length < 2 * max_reference_length + 8:
            raise ValueError(f"max_seq_length {max_seq_length} leaves no room for the context next to two texts of "
                             f"{max_reference_length} tokens")
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length
        self.max_reference_length = max_reference_length
        self.use_reference = use_reference
        self.cls, self.sep = tokenizer.cls_token_id, tokenizer.sep_token_id
        self.pad = tokenizer.pad_token_id
        self.truncated = 0
        self.truncated_rows: list[int] = []  # the inputs of the last :meth:`evaluator_inputs` call that were cut

    def _tokens(self, texts: Sequence[str]) -> list[list[int]]:
        return self.tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"]  # cut below

    def _head(self, ids: list[int]) -> list[int]:
        if len(ids) > self.max_reference_length:
            self.truncated += 1
            return ids[: self.max_reference_length]
        return ids

    def _tail(self, ids: list[int], room: int) -> list[int]:
        if len(ids) > room:
            self.truncated += 1
            return ids[len(ids) - room:]
        return ids

    def evaluator_inputs(self, contexts: Sequence[Sequence[str]], references: Sequence[str | None],
                         candidates: Sequence[str]) -> list[EvaluatorInput]:
        """One input per (context, reference, candidate); ``references`` are ignored without ``use_reference``."""
        context_ids = self._tokens([" ".join(c) for c in contexts])
        candidate_ids = self._tokens(candidates)
        reference_ids = self._tokens([r or "" for r in references]) if self.use_reference else None
        out = []
        self.truncated_rows = []
        for i, (ctx, cand) in enumerate(zip(context_ids, candidate_ids)):
            before = self.truncated
            tail = self._head(cand) + [self.sep]
            segments = [CANDIDATE] * len(tail)
            if reference_ids is not None:
                ref = self._head(reference_ids[i]) + [self.sep]
                tail, segments = ref + tail, [REFERENCE] * len(ref) + segments
            ctx = self._tail(ctx, self.max_seq_length - len(tail) - 2)
            if self.truncated > before:
                self.truncated_rows.append(i)
            head = [self.cls, *ctx, self.sep]
            out.append(EvaluatorInput(ids=head + tail, type_ids=[0] * len(head) + [1] * len(tail),
                                      segment_ids=[CONTEXT] * len(head) + segments))
        return out

    def context_ids(self, contexts: Sequence[Sequence[str]]) -> list[list[int]]:
        """``[CLS] context [SEP]`` per context, the most recent tokens kept (the decoder's memory)."""
        return [[self.cls, *self._tail(ids, self.max_seq_length - 2), self.sep]
                for ids in self._tokens([" ".join(c) for c in contexts])]

    def reference_labels(self, references: Sequence[str]) -> list[list[int]]:
        """``[CLS] reference [SEP]`` per reference, at most ``max_reference_length`` tokens in all."""
        room = self.max_reference_length - 2
        out = []
        for ids in self._tokens(references):
            if len(ids) > room:
                self.truncated += 1
                ids = ids[:room]
            out.append([self.cls, *ids, self.sep])
        return out

    def pad_batch(self, rows: Sequence[Sequence[int]], *, width: int | None = None, fill: int | None = None
                  ) -> tuple[torch.Tensor, torch.Tensor]:
        """(ids [B, width], attention mask) right-padded with ``fill`` (default: the pad id)."""
        width = width or max(len(r) for r in rows)
        fill = self.pad if fill is None else fill
        ids = torch.full((len(rows), width), fill, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
            mask[i, : len(row)] = 1
        return ids, mask

    def evaluator_batch(self, inputs: Sequence[EvaluatorInput], *, width: int | None = None) -> dict[str, torch.Tensor]:
        ids, mask = self.pad_batch([x.ids for x in inputs], width=width)
        types, _ = self.pad_batch([x.type_ids for x in inputs], width=ids.shape[1], fill=0)
        segments, _ = self.pad_batch([x.segment_ids for x in inputs], width=ids.shape[1], fill=-1)
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types, "segment_ids": segments}

    def generation_batch(self, context_ids: Sequence[Sequence[int]], labels: Sequence[Sequence[int]]
                         ) -> dict[str, torch.Tensor]:
        ctx, ctx_mask = self.pad_batch(context_ids)
        lab, _ = self.pad_batch(labels, fill=IGNORE_INDEX)
        return {"context_input_ids": ctx, "context_attention_mask": ctx_mask, "reference_labels": lab}


__all__ = ["IGNORE_INDEX", "EvaluatorInput", "RadeInputBuilder", "base_tokenizer"]
