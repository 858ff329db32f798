"""The interface every graph source implements: :class:`GraphSource`, utterances in, one :class:`~.graphs.SimpleGraph`
per utterance out.

It lives below both :mod:`.graph_sources` (the sources themselves, the project's parser among them) and
:mod:`.parser` (the parser's tokens and the Smatch of any source against gold AMR), so that each of those imports it
without importing the other's module.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from .graphs import SimpleGraph

__all__ = ["GraphSource"]


class GraphSource(ABC):
    """Turns utterances into :class:`SimpleGraph` s: ``graphs(texts)`` returns one graph per text, in order."""

    #: Short name of the source kind (``"penman"``, ``"amrlib"``, ``"parser"``, ``"dependency"``).
    name: str = ""

    @abstractmethod
    def signature(self) -> str:
        """A string naming the source and every setting that changes its graphs (cache keys, score signatures)."""

    @abstractmethod
    def graphs(self, texts: Sequence[str]) -> list[SimpleGraph]:
        """One graph per text, same order and length; an utterance without a graph is an error, never dropped."""
