"""The AMR-enhanced dialogue evaluator (Yang et al., "Structured Information Matters: Incorporating AMR into LLMs
for Improved Open-Domain Dialogue Evaluation"; original code Bernard-Yang/SIMAMR). Built so far (issue 15): the
graph layer and the training examples; the model is ``dialeval.modeling.amr_eval``.

- :mod:`.graphs` -- :class:`SimpleGraph` and :func:`simplify` (PENMAN -> simplified concept/relation graph);
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
"""

from .amr_corpora import AMR_CORPORA, iter_penman_file, read_amr_corpus, smatch_f1
from .data import Example, dailydialog_pp_examples
from .graph_cache import CachedGraphs, default_graph_cache_dir
from .graph_sources import (
    GRAPH_SOURCES,
    AmrlibParser,
    AmrParserUnavailable,
    DependencyGraphs,
    GraphSource,
    ParserGraphs,
    PenmanGraphs,
    load_graph_source,
    sentence_key,
)
from .graphs import GRAPH_FORMAT_VERSION, SimpleGraph, simplify
from .judge import (
    PROMPT_VERSION,
    JudgeCache,
    JudgeItem,
    JudgeResult,
    JudgeSummary,
    LlmJudge,
    Rating,
    RatingError,
    judge_messages,
    rating_from_completion,
)
from .judge_backends import (
    Completion,
    JudgeBackend,
    JudgeBackendError,
    LlmBackendUnavailable,
    OpenAICompatibleBackend,
    TransformersBackend,
    TransientBackendError,
)

__all__ = [
    "AMR_CORPORA",
    "GRAPH_FORMAT_VERSION",
    "GRAPH_SOURCES",
    "PROMPT_VERSION",
    "AmrParserUnavailable",
    "AmrlibParser",
    "CachedGraphs",
    "Completion",
    "DependencyGraphs",
    "Example",
    "GraphSource",
    "JudgeBackend",
    "JudgeBackendError",
    "JudgeCache",
    "JudgeItem",
    "JudgeResult",
    "JudgeSummary",
    "LlmBackendUnavailable",
    "LlmJudge",
    "OpenAICompatibleBackend",
    "ParserGraphs",
    "PenmanGraphs",
    "Rating",
    "RatingError",
    "SimpleGraph",
    "TransformersBackend",
    "TransientBackendError",
    "dailydialog_pp_examples",
    "default_graph_cache_dir",
    "iter_penman_file",
    "judge_messages",
    "load_graph_source",
    "rating_from_completion",
    "read_amr_corpus",
    "sentence_key",
    "simplify",
    "smatch_f1",
]
