"""Shared pieces of the benchmark builders: the unified row schema, metadata, errors and parsing helpers.

Every correlation benchmark (GRADE eval, FED, USR, RADE) yields rows with the same :data:`CORRELATION_FEATURES`
so generic code (``dialeval.evaluation``) can consume any of them:

``id, benchmark, subset, system, level, context[{speaker, text}], response, references, knowledge,
aspects, human, ratings, excluded``

``aspects`` is the benchmark's fixed list of aspect names; ``human[i]``, ``ratings[i]`` and ``excluded[i]`` belong to
``aspects[i]``. ``human[i]`` is the mean of the numeric ratings (None when an item has none), ``excluded[i]`` counts
the non-numeric ratings (e.g. FED's ``"N/A (No errors)"``) that were left out of the mean -- they are never dropped
silently.

Caching: :class:`DialevalBuilder` passes the resolved absolute ``data_dir`` to ``datasets`` (which puts the
normalised path into the config id, i.e. the cache directory name) *and* a ``hash`` made from the content of every
source file the config reads plus :data:`PARSER_VERSION`. ``datasets`` appends that hash to the cache path
(``<cache>/<builder>/<config_id>/<version>/<hash>``), so a different data directory, edited data, or a change of the
parsing code each get a fresh cache, while a plain re-run hits the cache.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import datasets

from ..paths import resolve_data_dir

# Bump when the parsing code changes the rows it produces: it is part of every cache key.
PARSER_VERSION = "2"  # 2: RADE split in the paper's proportions
BUILDER_VERSION = datasets.Version("1.0.0")


class BenchmarkDataError(ValueError):
    """Malformed source data. The message names the file, the item index and the field."""

    def __init__(self, file: str | os.PathLike, index: int | str | None, field: str | None, problem: str):
        self.file = str(file)
        self.index = index
        self.field = field
        self.problem = problem
        where = self.file
        if index is not None:
            where += f", item {index}"
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {problem}")


class BenchmarkAlignmentError(BenchmarkDataError):
    """The files of a benchmark cannot be aligned with each other (e.g. GRADE's json vs its per-system txt files)."""


@dataclass(frozen=True)
class BenchmarkInfo:
    name: str
    kind: str  # "correlation" | "discrimination" | "sanity" | "corpus"
    level: str | None  # "turn" | "dialogue" | None
    aspects: tuple[str, ...]
    default_aspect: str | None
    splits: tuple[str, ...]
    has_references: bool
    description: str


# -- features -----------------------------------------------------------------------------------------------------
CORRELATION_FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "benchmark": datasets.Value("string"),
        "subset": datasets.Value("string"),
        "system": datasets.Value("string"),
        "level": datasets.Value("string"),
        "context": datasets.List({"speaker": datasets.Value("string"), "text": datasets.Value("string")}),
        "response": datasets.Value("string"),
        "references": datasets.List(datasets.Value("string")),
        "knowledge": datasets.Value("string"),
        "aspects": datasets.List(datasets.Value("string")),
        "human": datasets.List(datasets.Value("float64")),
        "ratings": datasets.List(datasets.List(datasets.Value("float64"))),
        "excluded": datasets.List(datasets.Value("int32")),
    }
)


def correlation_row(
    *,
    id: str,
    benchmark: str,
    subset: str,
    system: str,
    level: str,
    context: Sequence[tuple[str | None, str]],
    response: str | None,
    references: Sequence[str],
    knowledge: str | None,
    aspects: Sequence[str],
    ratings: Sequence[Sequence[float]],
    excluded: Sequence[int],
) -> dict[str, Any]:
    """One row of the unified schema; ``human`` is computed here as the mean of ``ratings`` per aspect."""
    if not (len(aspects) == len(ratings) == len(excluded)):
        raise AssertionError("aspects, ratings and excluded must have the same length")
    return {
        "id": id,
        "benchmark": benchmark,
        "subset": subset,
        "system": system,
        "level": level,
        "context": [{"speaker": s, "text": t} for s, t in context],
        "response": response,
        "references": list(references),
        "knowledge": knowledge,
        "aspects": list(aspects),
        "human": [mean_or_none(r) for r in ratings],
        "ratings": [[float(v) for v in r] for r in ratings],
        "excluded": [int(e) for e in excluded],
    }


def mean_or_none(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


# -- validation helpers -------------------------------------------------------------------------------------------
def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def require_number(value: Any, file, index, field: str) -> float:
    if not is_number(value) or not math.isfinite(value):
        raise BenchmarkDataError(file, index, field, f"expected a finite number, got {value!r}")
    return float(value)


def require_str(value: Any, file, index, field: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise BenchmarkDataError(file, index, field, f"expected a string, got {type(value).__name__} {value!r:.80}")
    if not allow_empty and not value.strip():
        raise BenchmarkDataError(file, index, field, "is empty (or whitespace only)")
    return value


def require_str_list(value: Any, file, index, field: str, *, allow_empty_list: bool = False) -> list[str]:
    if not isinstance(value, list):
        raise BenchmarkDataError(file, index, field, f"expected a list of strings, got {type(value).__name__}")
    if not value and not allow_empty_list:
        raise BenchmarkDataError(file, index, field, "is an empty list")
    for j, v in enumerate(value):
        if not isinstance(v, str):
            raise BenchmarkDataError(file, index, f"{field}[{j}]", f"expected a string, got {type(v).__name__}")
    return list(value)


def require_mapping(value: Any, file, index, field: str | None = None) -> dict:
    if not isinstance(value, dict):
        raise BenchmarkDataError(file, index, field, f"expected a JSON object, got {type(value).__name__}")
    return value


def require_key(item: dict, key: str, file, index) -> Any:
    if key not in item:
        raise BenchmarkDataError(file, index, key, f"is missing (keys: {sorted(item)})")
    return item[key]


def split_ratings(values: Any, file, index, field: str) -> tuple[list[float], int]:
    """Numeric ratings and the number of non-numeric (string) ratings left out, e.g. FED's ``"N/A (...)"``.

    Anything that is neither a finite number nor a string (None, bool, list, NaN...) is malformed and raises.
    """
    if not isinstance(values, list):
        raise BenchmarkDataError(file, index, field, f"expected a list of ratings, got {type(values).__name__}")
    if not values:
        raise BenchmarkDataError(file, index, field, "has no ratings")
    numeric: list[float] = []
    excluded = 0
    for j, v in enumerate(values):
        if isinstance(v, str):
            excluded += 1
        elif is_number(v) and math.isfinite(v):
            numeric.append(float(v))
        else:
            raise BenchmarkDataError(file, index, f"{field}[{j}]", f"expected a number or a string, got {v!r}")
    return numeric, excluded


# -- reading ------------------------------------------------------------------------------------------------------
def read_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as err:
        raise BenchmarkDataError(path, None, None, f"invalid JSON: {err}") from err


def read_json_list(path: Path, what: str) -> Iterator[tuple[int, dict]]:
    """(index, item) for every item of a JSON file that holds a list of objects (``what`` names them in errors)."""
    data = read_json(path)
    if not isinstance(data, list):
        raise BenchmarkDataError(path, None, None, f"expected a JSON list of {what}, got {type(data).__name__}")
    for i, item in enumerate(data):
        yield i, require_mapping(item, path, i)


def read_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """(line index, object) for every non-blank line; blank lines (e.g. the final newline) are whitespace."""
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if not line.strip():
                continue
            try:
                yield i, json.loads(line)
            except json.JSONDecodeError as err:
                raise BenchmarkDataError(path, i, None, f"invalid JSON on line {i + 1}: {err}") from err


def read_lines(path: Path) -> list[str]:
    """Lines of a text file without their line ends; a final newline does not make an extra empty line."""
    with open(path, encoding="utf-8", newline="") as fh:
        text = fh.read()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def fingerprint(files: Iterable[Path], root: Path, *extra: str) -> str:
    """sha256 over the parser version, ``extra`` and the relative names and bytes of ``files`` (first 16 hex)."""
    h = hashlib.sha256()
    h.update(f"dialeval-benchmarks/{PARSER_VERSION}".encode())
    for e in extra:
        h.update(b"\0" + e.encode())
    for f in sorted(Path(p) for p in files):
        h.update(b"\0" + str(f.relative_to(root)).encode() + b"\0")
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


def require_file(root: Path, relative: str) -> Path:
    path = root / relative
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: is {root} the dialeval data directory?")
    return path


# -- builder base -------------------------------------------------------------------------------------------------
class DialevalBuilder(datasets.GeneratorBasedBuilder):
    """Base for the dialeval builders: resolves ``data_dir``, keys the cache on the source files' content, and
    generates each split from :meth:`rows`.

    A subclass sets ``CONFIGS`` ((config name, description) pairs; the first is the default), ``SPLITS`` (or
    ``SPLIT_FILES``, split -> source file relative to the data dir), ``FEATURES`` and ``LICENSE`` when they differ from
    the defaults, and implements :meth:`rows` (and :meth:`source_files`, every file the config reads, unless
    ``SPLIT_FILES`` lists them). The dataset description is the builder module's docstring.
    """

    VERSION = BUILDER_VERSION
    CONFIGS: ClassVar[tuple[tuple[str, str], ...]]
    SPLITS: ClassVar[tuple[str, ...]] = ("test",)
    SPLIT_FILES: ClassVar[dict[str, str]] = {}
    FEATURES: ClassVar[datasets.Features] = CORRELATION_FEATURES
    LICENSE: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "CONFIGS" in cls.__dict__:
            cls.BUILDER_CONFIGS = [datasets.BuilderConfig(name=name, version=cls.VERSION, description=description)
                                   for name, description in cls.CONFIGS]
            cls.DEFAULT_CONFIG_NAME = cls.CONFIGS[0][0]
        if cls.__dict__.get("SPLIT_FILES"):
            cls.SPLITS = tuple(cls.SPLIT_FILES)

    def __init__(self, *args, data_dir: str | os.PathLike | None = None, hash: str | None = None, **kwargs):
        root = resolve_data_dir(data_dir)
        config_name = kwargs.get("config_name") or self.DEFAULT_CONFIG_NAME or self.BUILDER_CONFIGS[0].name
        known = [c.name for c in self.BUILDER_CONFIGS]
        if config_name not in known:
            raise ValueError(f"{type(self).__name__} has no config {config_name!r}; configs: {', '.join(known)}")
        if hash is None:
            hash = fingerprint(self.source_files(config_name, root), root, type(self).__name__, config_name)
        super().__init__(*args, data_dir=str(root), hash=hash, **kwargs)

    @classmethod
    def source_files(cls, config_name: str, root: Path) -> list[Path]:
        """Every file the config reads (for the cache key); by default the ``SPLIT_FILES``."""
        if not cls.SPLIT_FILES:
            raise NotImplementedError(f"{cls.__name__} must list its source files")
        return [require_file(root, relative) for relative in cls.SPLIT_FILES.values()]

    def rows(self, split: str) -> Iterable[dict]:
        """The rows of ``split`` of the current config, in source order."""
        raise NotImplementedError

    @property
    def root(self) -> Path:
        return Path(self.config.data_dir)

    def split_file(self, split: str) -> Path:
        return self.root / self.SPLIT_FILES[split]

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(description=sys.modules[type(self).__module__].__doc__, features=self.FEATURES,
                                    license=self.LICENSE)

    def _split_generators(self, dl_manager):
        return [datasets.SplitGenerator(name=split, gen_kwargs={"split": split}) for split in self.SPLITS]

    def _generate_examples(self, split: str):
        yield from enumerate(self.rows(split))


def build_split(builder: DialevalBuilder, split: str) -> datasets.Dataset:
    """Prepare ``builder`` (or reuse its cache) and return ``split``; malformed or missing source data raises its
    own :class:`BenchmarkDataError` / FileNotFoundError rather than ``datasets``' wrapper."""
    try:
        builder.download_and_prepare()
    except datasets.exceptions.DatasetGenerationError as err:
        cause = err.__cause__
        if isinstance(cause, (BenchmarkDataError, FileNotFoundError)):
            raise cause from None
        raise
    return builder.as_dataset(split=split)
