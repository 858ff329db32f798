"""Human-judgement benchmarks and the training corpus as ``datasets`` builders.

::

    from dialeval.benchmarks import load_benchmark, benchmark_names, benchmark_info, expand_benchmark
    ds = load_benchmark("fed_turn")                      # datasets.Dataset, split "test"
    expand_benchmark("rade")                             # ["rade_chitchat", "rade_emotion", "rade_persona"]

Every correlation benchmark shares one schema (:data:`~dialeval.benchmarks.common.CORRELATION_FEATURES`); see
:mod:`dialeval.benchmarks.common`. The builders read the real data from the data directory
(:func:`dialeval.paths.resolve_data_dir`); nothing is downloaded, so everything works offline. Built datasets are
cached under ``cache_dir`` (default: the ``datasets`` cache) keyed on the data directory and the content of the
source files. The CCC chit-chat corpus, a training corpus that comes from an optional package rather than the data
directory, has its own loader: :func:`dialeval.benchmarks.chitchat.load_chitchat`.
"""

from __future__ import annotations

import os

import datasets

from ..errors import UnknownNameError
from .common import (
    CORRELATION_FEATURES,
    BenchmarkAlignmentError,
    BenchmarkDataError,
    BenchmarkInfo,
    DialevalBuilder,
    build_split,
)
from .dailydialog import DailyDialog, DailyDialogPP
from .fed import DIALOGUE_ASPECTS as FED_DIALOGUE_ASPECTS
from .fed import TURN_ASPECTS as FED_TURN_ASPECTS
from .fed import Fed
from .grade_eval import GradeEval
from .rade import Rade
from .sanity import DialogueSanity, TurnSanity
from .usr import ASPECTS as USR_ASPECTS
from .usr import Usr

__all__ = [
    "load_benchmark",
    "benchmark_names",
    "benchmark_info",
    "expand_benchmark",
    "benchmark_builder",
    "BenchmarkInfo",
    "BenchmarkDataError",
    "BenchmarkAlignmentError",
    "CORRELATION_FEATURES",
    "GROUPS",
]

_TEST = ("test",)
_RADE_SPLITS = ("train", "validation", "test")


def _rade_info(name: str, what: str) -> BenchmarkInfo:
    return BenchmarkInfo(
        name=name, kind="correlation", level="turn", aspects=("overall", "reference_overall"),
        default_aspect="overall", splits=_RADE_SPLITS, has_references=True,
        description=f"RADE {what}: output rated 1-5 with a rated reference; deterministic context-hash split in the "
                    "paper's proportions (ChitChat 5/1/1, the others 6/1/1).",
    )


# name -> (builder class, config name, info); the order is the order of benchmark_names()
_REGISTRY: dict[str, tuple[type[DialevalBuilder], str, BenchmarkInfo]] = {
    "grade_eval": (GradeEval, "grade_eval", BenchmarkInfo(
        name="grade_eval", kind="correlation", level="turn", aspects=("coherence",), default_aspect="coherence",
        splits=_TEST, has_references=True,
        description="GRADE human coherence judgements: 8 (corpus, system) sets x 150 two-turn contexts, "
                    "1-5 ratings by ~10 raters, with the human reference response.")),
    "fed_turn": (Fed, "fed_turn", BenchmarkInfo(
        name="fed_turn", kind="correlation", level="turn", aspects=FED_TURN_ASPECTS, default_aspect="Overall",
        splits=_TEST, has_references=False,
        description="FED turn level: 375 system responses in human-Meena/Mitsuku/Human conversations, 9 aspects, "
                    "5 raters; non-numeric ratings excluded and counted.")),
    "fed_dialogue": (Fed, "fed_dialogue", BenchmarkInfo(
        name="fed_dialogue", kind="correlation", level="dialogue", aspects=FED_DIALOGUE_ASPECTS,
        default_aspect="Overall", splits=_TEST, has_references=False,
        description="FED dialogue level: 125 conversations, 11 aspects, 5 raters; non-numeric ratings "
                    "(mostly 'N/A' for Error recovery) excluded and counted.")),
    "usr_topicalchat": (Usr, "usr_topicalchat", BenchmarkInfo(
        name="usr_topicalchat", kind="correlation", level="turn", aspects=USR_ASPECTS, default_aspect="Overall",
        splits=_TEST, has_references=True,
        description="USR TopicalChat: 60 contexts x 6 responses, 3 raters, fact as knowledge, original "
                    "ground-truth response as reference.")),
    "usr_personachat": (Usr, "usr_personachat", BenchmarkInfo(
        name="usr_personachat", kind="correlation", level="turn", aspects=USR_ASPECTS, default_aspect="Overall",
        splits=_TEST, has_references=True,
        description="USR PersonaChat: 60 contexts x 5 responses, 3 raters, persona as knowledge, original "
                    "ground-truth response as reference.")),
    "rade_chitchat": (Rade, "rade_chitchat", _rade_info("rade_chitchat", "chitchat (Topical-Chat-like)")),
    "rade_emotion": (Rade, "rade_emotion", _rade_info("rade_emotion", "emotion (EmpatheticDialogues)")),
    "rade_persona": (Rade, "rade_persona", _rade_info("rade_persona", "persona (PersonaChat)")),
    "dailydialog_pp": (DailyDialogPP, "dailydialog_pp", BenchmarkInfo(
        name="dailydialog_pp", kind="discrimination", level="turn", aspects=(), default_aspect=None,
        splits=("validation", "test"), has_references=False,
        description="DailyDialog++: contexts with 5 positive, 5 adversarial-negative and 5 random-negative "
                    "responses (no graded scores).")),
    "sanity_turn": (TurnSanity, "sanity_turn", BenchmarkInfo(
        name="sanity_turn", kind="sanity", level="turn", aspects=(), default_aspect=None,
        splits=("validation", "test"), has_references=False,
        description="Sanity checks: 300 DailyDialog gold replies, each against a random and a similar reply of "
                    "another dialogue, itself shuffled, with words dropped, truncated, and a copy of the last "
                    "context turn.")),
    "sanity_dialogue": (DialogueSanity, "sanity_dialogue", BenchmarkInfo(
        name="sanity_dialogue", kind="sanity", level="dialogue", aspects=(), default_aspect=None,
        splits=("validation", "test"), has_references=False,
        description="Sanity checks: DailyDialog (200) and FED (test) dialogues, each against itself shuffled, "
                    "with two neighbouring turns swapped, with a turn replaced by a similar one, and with one "
                    "speaker repeating its first turn.")),
    "dailydialog": (DailyDialog, "dailydialog", BenchmarkInfo(
        name="dailydialog", kind="corpus", level=None, aspects=(), default_aspect=None,
        splits=("train", "validation", "test"), has_references=False,
        description="DailyDialog corpus (ConvLab-3 unified format): dialogues with topic, acts and emotions.")),
}

GROUPS: dict[str, tuple[str, ...]] = {
    "fed": ("fed_turn", "fed_dialogue"),
    "usr": ("usr_topicalchat", "usr_personachat"),
    "rade": ("rade_chitchat", "rade_emotion", "rade_persona"),
    "sanity": ("sanity_turn", "sanity_dialogue"),
}


def benchmark_names() -> list[str]:
    """Every benchmark name (not the group aliases), in a fixed order."""
    return list(_REGISTRY)


def _unknown(name: str) -> UnknownNameError:
    return UnknownNameError("benchmark", name, [*_REGISTRY, *GROUPS], extra="; groups: " + ", ".join(
        f"{g} = {'+'.join(m)}" for g, m in GROUPS.items()))


def _lookup(name: str) -> tuple[type[DialevalBuilder], str, BenchmarkInfo]:
    if name in _REGISTRY:
        return _REGISTRY[name]
    if name in GROUPS:
        raise KeyError(f"{name!r} is a group of benchmarks ({', '.join(GROUPS[name])}); "
                       "pick one, or use expand_benchmark()")
    raise _unknown(name)


def benchmark_info(name: str) -> BenchmarkInfo:
    """Metadata of one benchmark (KeyError for unknown names and for group aliases)."""
    return _lookup(name)[2]


def expand_benchmark(name: str) -> list[str]:
    """A group alias -> its benchmarks; a plain name -> [name]; unknown -> KeyError listing the valid names."""
    if name in GROUPS:
        return list(GROUPS[name])
    if name in _REGISTRY:
        return [name]
    raise _unknown(name)


def benchmark_builder(name: str, *, data_dir: str | os.PathLike | None = None,
                      cache_dir: str | os.PathLike | None = None) -> DialevalBuilder:
    """The (not yet prepared) ``datasets`` builder of ``name``."""
    cls, config_name, _ = _lookup(name)
    return cls(config_name=config_name, data_dir=data_dir, cache_dir=None if cache_dir is None else str(cache_dir))


def load_benchmark(name: str, *, split: str = "test", data_dir: str | os.PathLike | None = None,
                   cache_dir: str | os.PathLike | None = None) -> datasets.Dataset:
    """Build (or reuse from the cache) benchmark ``name`` and return one split as a ``datasets.Dataset``.

    Raises KeyError for an unknown name, ValueError for a split the benchmark does not have,
    :class:`~dialeval.paths.DataDirNotFound` / FileNotFoundError when the data is missing and
    :class:`BenchmarkDataError` (naming file, item index and field) for malformed source data.
    """
    info = benchmark_info(name)
    if split not in info.splits:
        raise ValueError(f"{name} has no split {split!r}; splits: {', '.join(info.splits)}")
    return build_split(benchmark_builder(name, data_dir=data_dir, cache_dir=cache_dir), split)
