"""The AMR-enhanced evaluator on the shared scoring API: ``AmrEvalScorer``, the small model (SLM) alone or feeding
an LLM judge.

Without a judge, the score of a response is the SLM's probability that it is an appropriate reply to its context
(class 1, in (0, 1)), reading ``[CLS] context [SEP] response [SEP]`` and the graphs of the context's last turns and
of the response (:mod:`.inputs`). With ``judge=`` (an :class:`~.judge.LlmJudge`, or a spec such as ``"smollm2"``
for :func:`~.judge_backends.backend_from_spec`), the score is the judge's 1-5 rating: with ``judge_structure=True``
(the paper's method) its prompt holds the SLM probability and the linearised graphs, with ``False`` (the G-Eval
baseline) the dialogue and the response only. The SLM probabilities are then in ``metadata["slm_scores"]``. An item
the judge could not rate stops the call with :class:`JudgeFailed`; the answers already received stay in the
judge's cache, so running the same call again requests only the missing ones.

Graphs come from a graph source (:mod:`.graph_sources`), chosen explicitly: by default the one the checkpoint was
trained on (``config.graph_source``) when it needs no options (the spaCy dependency stand-in, or the shipped parser
when the checkpoint's signature names it); otherwise pass
``graph_source=`` (``"amrlib"`` with ``model_dir=``, ``"penman"`` with ``files=``, or a `GraphSource`). A source of
another kind than the training one is allowed, and both are named in the signature. Graphs are cached per
utterance on disk (:class:`~.graph_cache.CachedGraphs`): ``metadata`` reports the distinct utterances of the call
(``graph_utterances``), the seconds spent getting their graphs (``graph_seconds``), the cache's hit rate and the
graphs parsed anew (``graphs_parsed``), so ``graphs_parsed / graph_seconds`` is the parse throughput of a cold
cache, and the items' context and response graphs cut to :data:`~.inputs.MAX_CONCEPTS` concepts (``graphs_capped``).
``truncated_texts`` counts the items whose ``[CLS] context [SEP] response [SEP]`` was cut (:mod:`.inputs`).

Batches are length-sorted, and every forward pass has ``FORWARD_ROWS`` rows and a text width that is a multiple of
:data:`LENGTH_BUCKET`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...backbone.batching import length_sorted_batches
from ...errors import DialevalError, InputError
from ...schema import ScoringItem
from ...scoring.learned import LearnedScorer, load_pretrained
from .graph_cache import CachedGraphs
from .graph_sources import GraphSource, load_graph_source
from .inputs import MAX_CONCEPTS, MAX_RESPONSE_TOKENS, AmrEvalInputBuilder, join_context
from .judge import JudgeItem, LlmJudge
from .judge_backends import backend_from_spec

LENGTH_BUCKET = 16


def source_kind(signature: str | None) -> str | None:
    """The source name of a graph-source signature (``dependency(model=...)`` -> ``dependency``)."""
    return None if signature is None else signature.split("(", 1)[0]


class JudgeFailed(DialevalError, RuntimeError):
    """The LLM judge gave no rating for some items (after its retries)."""


class AmrEvalScorer(LearnedScorer):
    """The AMR-enhanced evaluator's SLM (Yang, Zhao et al.): probability that a response is appropriate."""

    name = "amr_eval"
    checkpoint_dir = "amr_eval"
    train_command = "dialeval train amr-eval"

    def __init__(self, checkpoint: str | os.PathLike | None = None, *, device: str | torch.device | None = None,
                 graph_source: str | GraphSource | None = None, graph_cache: bool = True,
                 judge: LlmJudge | str | None = None, judge_structure: bool | None = None,
                 judge_cache_dir: str | os.PathLike | None = None, **graph_source_options: Any) -> None:
        super().__init__(checkpoint, device=device)
        cfg = self.model.config
        self.inputs = AmrEvalInputBuilder(self.base_encoder_tokenizer(), cfg)
        self.graphs: GraphSource | None = None
        if cfg.use_graph:
            trained_on = source_kind(cfg.graph_source)
            if graph_source is None:
                graph_source = self._training_source(trained_on, graph_source_options)
            source = (graph_source if isinstance(graph_source, GraphSource)
                      else load_graph_source(graph_source, **graph_source_options))
            self.graphs = CachedGraphs(source) if graph_cache else source
        elif graph_source is not None:
            raise InputError(f"checkpoint {self.checkpoint} has no graph branch: graph_source has nothing to do")
        self._last: dict[str, Any] = {}
        self.judge: LlmJudge | None = None
        self.use_judge(judge, structure=judge_structure, cache_dir=judge_cache_dir)

    def _training_source(self, trained_on: str, options: dict[str, Any]) -> GraphSource | str:
        """The graph source a checkpoint was trained on, when it needs no options: the dependency stand-in, or the
        shipped parser when that is the parser it was trained with."""
        signature = self.model.config.graph_source
        if not options and trained_on == "dependency":
            return "dependency"
        if not options and trained_on == "parser":
            shipped = load_graph_source("parser")
            if shipped.signature() == signature:
                return shipped
        raise InputError(f"checkpoint {self.checkpoint} was trained on graphs from {signature!r}: pass "
                         "graph_source= (and its options, e.g. model_dir= for amrlib or for another parser)")

    def use_judge(self, judge: LlmJudge | str | None, *, structure: bool | None = None,
                  cache_dir: str | os.PathLike | None = None) -> None:
        """Score with ``judge`` from now on (``None``: the SLM alone). A spec string makes an
        :class:`~.judge.LlmJudge` with ``with_structure=structure`` (default True) on this scorer's device; an
        ``LlmJudge`` keeps its own ``with_structure`` (``structure``, if given, must agree)."""
        if judge is None or judge == "none":
            if structure is not None:
                raise InputError("judge_structure is set but there is no judge")
            self.judge = None
            return
        if isinstance(judge, str):
            judge = LlmJudge(backend_from_spec(judge, device=str(self.device)),
                             with_structure=True if structure is None else bool(structure), cache_dir=cache_dir)
        elif not isinstance(judge, LlmJudge):
            raise InputError(f"judge must be an LlmJudge, a spec string or None, got {type(judge).__name__}")
        elif structure is not None and bool(structure) != judge.with_structure:
            raise InputError(f"judge_structure={structure} but the judge was made with "
                             f"with_structure={judge.with_structure}")
        if judge.with_structure and self.graphs is None:
            raise InputError(f"checkpoint {self.checkpoint} has no graph branch, so the judge's prompt would have no "
                             "graphs: use judge_structure=False (the G-Eval baseline) or a checkpoint with graphs")
        self.judge = judge

    def load_model(self, path: Path) -> torch.nn.Module:
        from ...modeling.amr_eval import AmrEvalModel

        return load_pretrained(AmrEvalModel, path, dtype=torch.float32)

    def settings(self) -> dict[str, str]:
        judge = {} if self.judge is None else {"judge": self.judge.signature()}
        if self.graphs is None:
            return {"graphs": "none", **judge}
        trained = self.model.config.graph_source
        used = self.graphs.signature()
        graphs = {"graph_source": used} if used == trained else {"graph_source": used, "trained_on": str(trained)}
        return {**graphs, **judge}

    def _score_items(self, items: list[ScoringItem], *, batch_size: int, progress_bar: bool | None) -> np.ndarray:
        self.inputs.truncated = self.inputs.truncated_texts = 0
        contexts = [[t.text for t in it.context] for it in items]
        texts = self.inputs.text_inputs(contexts, [it.response for it in items])
        pairs = None
        if self.graphs is not None:
            distinct = list(dict.fromkeys(t for c, it in zip(contexts, items) for t in (*c, it.response)))
            before = (getattr(self.graphs, "hits", 0), getattr(self.graphs, "misses", 0))
            start = time.perf_counter()
            graph_of = dict(zip(distinct, self.graphs.graphs(distinct)))
            self._last["graph_seconds"] = round(time.perf_counter() - start, 3)
            pairs = [(join_context([graph_of[t] for t in c]), graph_of[it.response]) for c, it in zip(contexts, items)]
            self._last["graph_utterances"] = len(distinct)
            if isinstance(self.graphs, CachedGraphs):
                hits, misses = self.graphs.hits - before[0], self.graphs.misses - before[1]
                self._last["graph_cache_hit_rate"] = round(hits / max(1, hits + misses), 4)
                self._last["graphs_parsed"] = misses
            self._last["graphs_capped"] = sum(g.n_nodes > MAX_CONCEPTS for pair in pairs for g in pair)
        limit = self.model.config.max_seq_length
        widths = [min(limit, -(-len(t.ids) // LENGTH_BUCKET) * LENGTH_BUCKET) for t in texts]

        def forward(rows: list[int]) -> torch.Tensor:
            batch = self.inputs.batch([texts[i] for i in rows], [pairs[i] for i in rows] if pairs else None,
                                      width=widths[rows[0]])
            logits = self.model(**{k: v.to(self.device) for k, v in batch.items()}).logits
            return torch.softmax(logits.float(), dim=-1)[:, 1]

        scores = self.fixed_row_forward(len(items), length_sorted_batches(widths, batch_size), forward,
                                        progress_bar=progress_bar)
        self._last["truncated_texts"] = self.inputs.truncated_texts
        self._last["truncated_items"] = list(self.inputs.truncated_rows)
        if self.judge is None:
            for key in ("slm_scores", "judge_requests", "judge_from_cache", "judge_mean_digit_mass"):
                self._last.pop(key, None)
            return scores
        return self._judge(contexts, [it.response for it in items], scores, pairs, progress_bar=progress_bar)

    def _judge(self, contexts: list[list[str]], responses: list[str], slm: np.ndarray, pairs: list | None, *,
               progress_bar: bool | None) -> np.ndarray:
        """The judge's ratings of the items (see the module docstring)."""
        structure = self.judge.with_structure
        items = [JudgeItem(context=c, response=r, **({"slm_probability": float(p), "context_graph": pair[0],
                                                       "response_graph": pair[1]} if structure else {}))
                 for c, r, p, pair in zip(contexts, responses, slm, pairs or [None] * len(responses))]
        results = self.judge.rate(items, progress_bar=progress_bar)
        failed = [r for r in results if r.score is None]
        if failed:
            raise JudgeFailed(f"the LLM judge gave no rating for {len(failed)} of {len(results)} items (first: "
                              f"{failed[0].error}); the answers received are cached, so running the same call "
                              "again requests only the missing ones")
        masses = [r.digit_mass for r in results if r.digit_mass is not None]
        summary = self.judge.last_summary
        self._last.update(slm_scores=slm.tolist(), judge_requests=summary.requested, judge_from_cache=summary.from_cache,
                          judge_mean_digit_mass=round(float(np.mean(masses)), 4) if masses else None)
        return np.asarray([r.score for r in results], dtype=np.float64)

    def _metadata(self) -> dict[str, Any]:
        return {**super()._metadata(), **self._last}

    def truncation_rule(self) -> str:
        return (f"{self.model.config.max_seq_length} tokens of [CLS] context [SEP] response [SEP]: the response keeps "
                f"its first {MAX_RESPONSE_TOKENS} tokens, the context its most recent ones")


__all__ = ["LENGTH_BUCKET", "AmrEvalScorer", "JudgeFailed", "source_kind"]
