"""The AMR-enhanced dialogue evaluator (Yang et al., "Structured Information Matters: Incorporating AMR into LLMs
for Improved Open-Domain Dialogue Evaluation"; original code Bernard-Yang/SIMAMR): the graph layer, the training examples, the small model's scorer and
the LLM judge; the model is ``dialeval.modeling.amr_eval``.

- :mod:`.graphs` -- :class:`SimpleGraph` and :func:`simplify` (PENMAN -> simplified concept/relation graph);
- :mod:`.graph_source_base` -- :class:`GraphSource`, what every source of utterance graphs provides;
- :mod:`.graph_sources` -- where utterance graphs come from (:class:`PenmanGraphs`, :class:`AmrlibParser`,
  :class:`ParserGraphs`, :class:`DependencyGraphs`), picked by :func:`load_graph_source`;
- :mod:`.parser` -- the project's small AMR parser's output tokens (:class:`~.parser.ParserVocabulary`) and the
  Smatch of simplified graphs (:func:`~.parser.graph_smatch`, :func:`~.parser.source_smatch`); it is trained by
  :mod:`.parser_train` (``dialeval train amr-parser``);
- :mod:`.graph_cache` -- :class:`CachedGraphs`, the per-utterance on-disk cache in front of any source;
- :mod:`.amr_corpora` -- the gold AMR corpora of the data directory (:func:`read_amr_corpus`) and
  :func:`smatch_f1`;
- :mod:`.data` -- DailyDialog++ responses labelled appropriate or not (:func:`dailydialog_pp_examples`);
- :mod:`.judge` -- the LLM stage: :class:`LlmJudge` rates responses 1-5 with or without the SLM score and graphs
  (G-Eval baseline), through a backend of :mod:`.judge_backends`.

No module here is called ``amr``: the ``smatch`` package installs a top-level module of that name.

The names below are imported from their modules on first use (so that reading the metric's spec, ``.spec``, does
not import the judge, the graph sources and their dependencies).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "AMR_CORPORA": "amr_corpora",
    "AmrParserUnavailable": "graph_sources",
    "AmrlibParser": "graph_sources",
    "CachedGraphs": "graph_cache",
    "Completion": "judge_backends",
    "DependencyGraphs": "graph_sources",
    "Example": "data",
    "GRAPH_FORMAT_VERSION": "graphs",
    "GRAPH_SOURCES": "graph_sources",
    "GraphSource": "graph_source_base",
    "JudgeBackend": "judge_backends",
    "JudgeBackendError": "judge_backends",
    "JudgeCache": "judge",
    "JudgeItem": "judge",
    "JudgeResult": "judge",
    "JudgeSummary": "judge",
    "LlmBackendUnavailable": "judge_backends",
    "LlmJudge": "judge",
    "OpenAICompatibleBackend": "judge_backends",
    "PROMPT_VERSION": "judge",
    "ParserGraphs": "graph_sources",
    "PenmanGraphs": "graph_sources",
    "Rating": "judge",
    "RatingError": "judge",
    "SimpleGraph": "graphs",
    "TransformersBackend": "judge_backends",
    "TransientBackendError": "judge_backends",
    "dailydialog_pp_examples": "data",
    "default_graph_cache_dir": "graph_cache",
    "iter_penman_file": "amr_corpora",
    "judge_messages": "judge",
    "load_graph_source": "graph_sources",
    "rating_from_completion": "judge",
    "read_amr_corpus": "amr_corpora",
    "sentence_key": "graph_sources",
    "simplify": "graphs",
    "smatch_f1": "amr_corpora",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """``dialeval.metrics.amr_eval.X``: ``X`` from the module that defines it, imported now."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
