"""The CCC chit-chat corpus (``chitchat``, a training corpus): 7,168 human-human chats of BYU's Chit-Chat Challenge.

Source: ``dataset.json`` of the package ``chitchat-dataset`` (MIT licence; its wheel holds the file, 40 MB, and
declares no dependencies: ``pip install 'dialeval[chitchat]'``). Nothing is downloaded: the builder reads the
installed package's file, or ``dataset.json`` in the folder given as ``data_dir``. The file maps a conversation
UUID to an object with ``messages``: a list of groups, each a list of messages ``{"text", "timestamp", "sender"}``
(``prompt``, ``ratings`` and ``start`` are not used).

Turns: a turn is a maximal run of one sender's messages, in file order, with the messages' texts (stripped) joined by
a space, as the package's own ``ConversationDataset`` joins a group; messages whose text is empty are left out
before the runs are formed, so they never split a turn. Merging keeps every message and gives turns whose two
speakers alternate, as DynaEval's graph assumes; dropping a run's later messages would lose most of the text (people
type a turn as several short messages) and cut turns mid-sentence. ``speakers`` gives each turn's speaker by order
of first appearance (0, 1, ...); ``messages`` how many messages each turn joins. A chat whose messages all carry
one sender id is one turn (the file has many; some are long and read as two people under one id: they cannot be
split into turns, and a user of the rows filters them by ``speakers``; DynaEval's 4-turn minimum leaves them out).

Split (the corpus has none): the conversation ids, sorted, are permuted with the fixed seed :data:`SPLIT_SEED`;
the first :data:`VALIDATION_SHARE` of them (rounded) are ``validation``, the rest ``train``. Within a split, rows
keep the file order. Rows: ``dialogue_id`` (the UUID), ``utterances``, ``speakers``, ``messages``.

A malformed conversation raises naming the file, the conversation id and the field.
"""

from __future__ import annotations

import os
from importlib.util import find_spec
from pathlib import Path

import datasets
import numpy as np

from ..errors import DialevalError
from .common import (
    BenchmarkDataError,
    DialevalBuilder,
    build_split,
    read_json,
    require_key,
    require_mapping,
    require_str,
)

PACKAGE = "chitchat_dataset"
INSTALL = "pip install 'dialeval[chitchat]' (or pip install --no-deps chitchat-dataset)"
SOURCE_FILE = "dataset.json"
SPLIT_SEED = 20180418  # the Chit-Chat Challenge's announcement date
VALIDATION_SHARE = 0.1

CHITCHAT_FEATURES = datasets.Features(
    {
        "dialogue_id": datasets.Value("string"),
        "utterances": datasets.List(datasets.Value("string")),
        "speakers": datasets.List(datasets.Value("int32")),
        "messages": datasets.List(datasets.Value("int32")),
    }
)


class ChitChatNotInstalled(DialevalError, ModuleNotFoundError):
    """The ``chitchat-dataset`` package is not installed (the message gives the install command)."""


def chitchat_folder(folder: str | os.PathLike | None = None) -> Path:
    """The folder holding ``dataset.json``: ``folder`` when given, else the installed package's folder."""
    if folder is not None:
        return Path(folder)
    spec = find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ChitChatNotInstalled(f"the chitchat corpus comes from the package chitchat-dataset, which is not "
                                   f"installed: {INSTALL}")
    return Path(next(iter(spec.submodule_search_locations)))


def conversation_turns(conversation: dict, path: Path, ident: str) -> dict:
    """One conversation as a row: its turns (runs of one sender's non-empty messages), speakers and message counts."""
    groups = require_key(conversation, "messages", path, ident)
    if not isinstance(groups, list):
        raise BenchmarkDataError(path, ident, "messages", f"expected a list of message groups, got "
                                                          f"{type(groups).__name__}")
    utterances: list[list[str]] = []
    senders: list[str] = []
    for g, group in enumerate(groups):
        if not isinstance(group, list):
            raise BenchmarkDataError(path, ident, f"messages[{g}]", f"expected a list of messages, got "
                                                                    f"{type(group).__name__}")
        for m, message in enumerate(group):
            field = f"messages[{g}][{m}]"
            require_mapping(message, path, ident, field)
            text = require_str(require_key(message, "text", path, ident), path, ident, f"{field}.text",
                               allow_empty=True).strip()
            sender = require_str(require_key(message, "sender", path, ident), path, ident, f"{field}.sender")
            if not text:
                continue
            if senders and senders[-1] == sender:
                utterances[-1].append(text)
            else:
                senders.append(sender)
                utterances.append([text])
    if not utterances:
        raise BenchmarkDataError(path, ident, "messages", "has no message with text")
    order: dict[str, int] = {}
    return {"dialogue_id": ident, "utterances": [" ".join(turn) for turn in utterances],
            "speakers": [order.setdefault(s, len(order)) for s in senders],
            "messages": [len(turn) for turn in utterances]}


def split_ids(ids: list[str]) -> dict[str, str]:
    """Conversation id -> ``train`` / ``validation`` (see the module docstring)."""
    ordered = sorted(ids)
    n_validation = round(VALIDATION_SHARE * len(ordered))
    permuted = np.random.default_rng(SPLIT_SEED).permutation(len(ordered))
    validation = {ordered[i] for i in permuted[:n_validation].tolist()}
    return {ident: "validation" if ident in validation else "train" for ident in ordered}


def iter_chitchat(path: Path, split: str | None = None):
    """The rows of ``dataset.json`` in file order (only those of ``split`` when given)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise BenchmarkDataError(path, None, None, f"expected a JSON object of conversations, got "
                                                   f"{type(data).__name__}")
    splits = split_ids(list(data))
    for ident, conversation in data.items():
        require_mapping(conversation, path, ident)
        if split is None or splits[ident] == split:
            yield conversation_turns(conversation, path, ident)


class ChitChat(DialevalBuilder):
    """The CCC chit-chat corpus (config ``chitchat``): splits train / validation by a fixed seed, one row per chat.

    ``data_dir`` is the folder holding ``dataset.json`` (default: the installed ``chitchat_dataset`` package's)."""

    CONFIGS = (("chitchat", "BYU Chit-Chat Challenge human-human chats (package chitchat-dataset)"),)
    SPLITS = ("train", "validation")
    FEATURES = CHITCHAT_FEATURES
    LICENSE = "MIT"

    def __init__(self, *args, data_dir: str | os.PathLike | None = None, **kwargs):
        super().__init__(*args, data_dir=chitchat_folder(data_dir), **kwargs)

    @classmethod
    def source_files(cls, config_name: str, root: Path) -> list[Path]:
        path = root / SOURCE_FILE
        if not path.is_file():
            raise FileNotFoundError(f"{path} does not exist: the chitchat corpus is the {SOURCE_FILE} of the "
                                    f"chitchat-dataset package ({INSTALL})")
        return [path]

    def rows(self, split: str):
        return iter_chitchat(self.root / SOURCE_FILE, split)


def load_chitchat(split: str = "train", *, data_dir: str | os.PathLike | None = None,
                  cache_dir: str | os.PathLike | None = None) -> datasets.Dataset:
    """Build (or reuse from the cache) the chitchat corpus and return one split (``train`` or ``validation``);
    :class:`ChitChatNotInstalled` names the install command when the package is missing."""
    if split not in ChitChat.SPLITS:
        raise ValueError(f"chitchat has no split {split!r}; splits: {', '.join(ChitChat.SPLITS)}")
    builder = ChitChat(data_dir=data_dir, cache_dir=None if cache_dir is None else str(cache_dir))
    return build_split(builder, split)
