"""The AMR evaluator's model inputs, built the same way for training and scoring.

Text: ``[CLS] context [SEP] response [SEP]`` (token type 0 up to the first ``[SEP]``, 1 after it). The response
keeps at most :data:`MAX_RESPONSE_TOKENS` tokens (its beginning), the context the rest of
``config.max_seq_length`` (its most recent tokens); context turns are joined with a space.

Graphs: the response's graph as its graph source gave it, and one context graph that joins the graphs of the last
:data:`MAX_CONTEXT_TURNS` turns under a ``dialogue`` node, with an edge ``turn-1`` to the last turn's root,
``turn-2`` to the one before, and so on (a turn with an empty graph adds nothing). A graph keeps at most
:data:`MAX_CONCEPTS` concepts (the first ones, in the source's node order) and the edges between them. A concept is
read as its word pieces (at most ``config.max_concept_tokens``).

Anything cut (tokens, turns' concepts) is counted in :attr:`AmrEvalInputBuilder.truncated`, one per cut; the items
whose text was cut (context, response or both) in :attr:`AmrEvalInputBuilder.truncated_texts`, one per item.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .graphs import SimpleGraph

MAX_RESPONSE_TOKENS = 64
MAX_CONTEXT_TURNS = 4
MAX_CONCEPTS = 64
DIALOGUE_ROOT = "dialogue"


def turn_relation(k: int) -> str:
    """The relation from the context graph's root to the root of the ``k``-th turn from the end (1: the last)."""
    return f"turn-{k}"


def join_context(turn_graphs: Sequence[SimpleGraph], max_turns: int = MAX_CONTEXT_TURNS) -> SimpleGraph:
    """One graph for a context: the last ``max_turns`` turns' graphs under a ``dialogue`` node (module docstring).
    A context whose kept turns are all empty gives the empty graph."""
    kept = list(turn_graphs)[-max_turns:]
    if not any(g.n_nodes for g in kept):
        return SimpleGraph(concepts=())
    concepts, edges = [DIALOGUE_ROOT], []
    for back, graph in zip(range(len(kept), 0, -1), kept):
        if not graph.n_nodes:
            continue
        offset = len(concepts)
        concepts += graph.concepts
        edges += [(s + offset, t + offset, r) for s, t, r in graph.edges]
        edges.append((0, offset + (graph.root or 0), turn_relation(back)))
    return SimpleGraph(concepts=tuple(concepts), edges=tuple(edges), root=0)


@dataclass(frozen=True)
class TextInput:
    ids: list[int]
    type_ids: list[int]


class AmrEvalInputBuilder:
    """Token ids of the text and tensors of the graphs (see the module docstring) for an `AmrEvalConfig`."""

    def __init__(self, tokenizer, config) -> None:
        if config.max_seq_length < MAX_RESPONSE_TOKENS + 8:
            raise ValueError(f"max_seq_length {config.max_seq_length} leaves no room for a context beside a "
                             f"{MAX_RESPONSE_TOKENS}-token response")
        self.tokenizer, self.config = tokenizer, config
        self.cls, self.sep, self.pad = tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id
        self.relation_ids = {r: config.relation_id(r) for r in config.relations}
        self._concept_pieces: dict[str, list[int]] = {}
        self.truncated = 0  # every cut (module docstring); the callers reset both counters
        self.truncated_texts = 0
        self.truncated_rows: list[int] = []  # the items of the last :meth:`text_inputs` call whose text was cut

    # -- text -------------------------------------------------------------------------------------------------------
    def text_inputs(self, contexts: Sequence[Sequence[str]], responses: Sequence[str]) -> list[TextInput]:
        tokenize = self.tokenizer
        context_ids = tokenize([" ".join(c) for c in contexts], add_special_tokens=False, verbose=False)["input_ids"]
        response_ids = tokenize(list(responses), add_special_tokens=False, verbose=False)["input_ids"]
        out = []
        self.truncated_rows = []
        for k, (ctx, resp) in enumerate(zip(context_ids, response_ids)):
            cuts = 0
            if len(resp) > MAX_RESPONSE_TOKENS:
                cuts += 1
                resp = resp[:MAX_RESPONSE_TOKENS]
            room = self.config.max_seq_length - len(resp) - 3
            if len(ctx) > room:
                cuts += 1
                ctx = ctx[len(ctx) - room:]
            self.truncated += cuts
            self.truncated_texts += int(cuts > 0)
            if cuts:
                self.truncated_rows.append(k)
            head, tail = [self.cls, *ctx, self.sep], [*resp, self.sep]
            out.append(TextInput(ids=head + tail, type_ids=[0] * len(head) + [1] * len(tail)))
        return out

    # -- graphs -----------------------------------------------------------------------------------------------------
    def _pieces(self, concept: str) -> list[int]:
        hit = self._concept_pieces.get(concept)
        if hit is None:
            ids = self.tokenizer(concept, add_special_tokens=False, verbose=False)["input_ids"]
            hit = ids[: self.config.max_concept_tokens] or [self.tokenizer.unk_token_id]
            self._concept_pieces[concept] = hit
        return hit

    def _capped(self, graph: SimpleGraph) -> SimpleGraph:
        if graph.n_nodes <= MAX_CONCEPTS:
            return graph
        self.truncated += 1
        edges = tuple((s, t, r) for s, t, r in graph.edges if s < MAX_CONCEPTS and t < MAX_CONCEPTS)
        root = graph.root if graph.root is not None and graph.root < MAX_CONCEPTS else 0
        return SimpleGraph(concepts=graph.concepts[:MAX_CONCEPTS], edges=edges, root=root)

    def batch(self, texts: Sequence[TextInput], graph_pairs: Sequence[tuple[SimpleGraph, SimpleGraph]] | None = None,
              *, width: int | None = None) -> dict[str, torch.Tensor]:
        """Model inputs for items with these texts and (with the graph branch) (context graph, response graph)
        pairs; graph ``2i`` is item ``i``'s context, ``2i + 1`` its response."""
        width = width or max(len(t.ids) for t in texts)
        ids = torch.full((len(texts), width), self.pad, dtype=torch.long)
        types = torch.zeros((len(texts), width), dtype=torch.long)
        mask = torch.zeros((len(texts), width), dtype=torch.long)
        for i, t in enumerate(texts):
            ids[i, : len(t.ids)] = torch.tensor(t.ids)
            types[i, : len(t.ids)] = torch.tensor(t.type_ids)
            mask[i, : len(t.ids)] = 1
        out = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        if graph_pairs is None:
            return out
        if len(graph_pairs) != len(texts):
            raise ValueError(f"{len(graph_pairs)} graph pairs for {len(texts)} texts")
        pieces, graph_of, sources, targets, relations = [], [], [], [], []
        for g, graph in enumerate(self._capped(x) for pair in graph_pairs for x in pair):
            offset = len(pieces)
            pieces += [self._pieces(c) for c in graph.concepts]
            graph_of += [g] * graph.n_nodes
            for s, t, r in graph.edges:
                sources.append(offset + s)
                targets.append(offset + t)
                relations.append(self.relation_ids.get(r, 0))
        concept_ids = torch.zeros((len(pieces), self.config.max_concept_tokens), dtype=torch.long)
        concept_mask = torch.zeros_like(concept_ids)
        for i, p in enumerate(pieces):
            concept_ids[i, : len(p)] = torch.tensor(p)
            concept_mask[i, : len(p)] = 1
        out.update(concept_input_ids=concept_ids, concept_attention_mask=concept_mask,
                   concept_graph=torch.tensor(graph_of, dtype=torch.long),
                   edge_index=torch.tensor([sources, targets], dtype=torch.long).view(2, -1),
                   edge_type=torch.tensor(relations, dtype=torch.long))
        return out


__all__ = ["DIALOGUE_ROOT", "MAX_CONCEPTS", "MAX_CONTEXT_TURNS", "MAX_RESPONSE_TOKENS", "AmrEvalInputBuilder",
           "TextInput", "join_context", "turn_relation"]
