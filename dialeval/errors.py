"""The errors dialeval raises for a user's mistake, one family under :class:`DialevalError`.

Each message names what is wrong and, where it can, how to fix it. The command line prints a
:class:`DialevalError` as one line (``error: ...``) and exits with status 2; other exceptions are bugs and keep
their traceback. Every class also derives from the built-in exception older callers caught (``ValueError``,
``KeyError``, ``FileNotFoundError``), so ``except ValueError`` and friends keep working.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "CheckpointNotFoundError",
    "DataDirNotFound",
    "DialevalError",
    "EmptyTurnError",
    "InputError",
    "InputFileError",
    "OutputFolderError",
    "UnknownNameError",
]


class DialevalError(Exception):
    """Base class of every error caused by what the user asked for (input, names, files, folders)."""


class InputError(DialevalError, ValueError):
    """Malformed input; the message names the item index and the field."""


class EmptyTurnError(InputError):
    """A turn, response or reference that is empty or whitespace only; ``where`` names it (``contexts[3][1]``)."""

    def __init__(self, where: str) -> None:
        self.where = where
        super().__init__(f"{where} is empty (or whitespace only); expected a non-empty string "
                         "(empty_turns='skip', on the command line --empty-turns skip, scores the other items and gives "
                         "this one no score)")


class InputFileError(InputError):
    """An input file that cannot be read: missing, not UTF-8, a bad JSONL line or CSV cell, or no rows."""


class UnknownNameError(DialevalError, KeyError):
    """A metric, benchmark, aspect or setting name that does not exist; the message suggests close matches."""

    def __init__(self, kind: str, name: str, choices: Iterable[str], *, extra: str = "") -> None:
        self.kind, self.name, self.choices = kind, name, list(choices)
        close = difflib.get_close_matches(str(name), self.choices, n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        super().__init__(f"unknown {kind} {name!r}{hint} (choices: {', '.join(self.choices)}{extra})")

    def __str__(self) -> str:  # KeyError would print the message in quotes
        return str(self.args[0])


class CheckpointNotFoundError(DialevalError, FileNotFoundError):
    """No checkpoint where one was asked for; the message says how to train one."""


class OutputFolderError(DialevalError, FileExistsError):
    """An output folder that must not be written: it exists and is not empty (and no overwrite was asked), or it
    holds the input."""


class DataDirNotFound(DialevalError, FileNotFoundError):
    """The data directory (or a file expected in it) is missing; the message says how to point at it."""
