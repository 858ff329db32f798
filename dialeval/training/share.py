"""A checkpoint's tables taken from the checkpoint of its metric beside it: ``dialeval checkpoint share --checkpoint
DIR [--source default]``.

The files shared are those the metric's scorer reads from its checkpoint beside the model (its
:attr:`~dialeval.scoring.learned.LearnedScorer.table_files`: GRADE's ``keywords.json`` and ``graph/``), found from the
folder's model type; :func:`dialeval.scoring.shared_files.share_files` checks them against the source's, writes the
record and removes the copies. Shipping GRADE's base run beside the default: copy its ``best/`` (without the code
files) to ``dialeval/checkpoints/grade/base``, then ``dialeval checkpoint share --checkpoint
dialeval/checkpoints/grade/base``.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import CheckpointNotFoundError
from ..scoring.shared_files import SharedFiles, SharedFilesError, share_files
from .quantise import CONFIG, checkpoint_model_class


def table_files(folder: Path) -> tuple[str, ...]:
    """The files and folders that the scorer of checkpoint ``folder``'s metric reads beside the model (its
    ``table_files``; the metric found from the config's model type)."""
    from ..scoring.registry import all_specs
    from ..scoring.spec import ExportSpec, import_object

    if not (folder / CONFIG).is_file():
        raise CheckpointNotFoundError(f"{folder} is not a checkpoint folder (no {CONFIG})")
    model_class = checkpoint_model_class(folder, json.loads((folder / CONFIG).read_text(encoding="utf-8")))
    return tuple(dict.fromkeys(
        name for spec in all_specs() if isinstance(spec.export, ExportSpec)
        and import_object(spec.export.model_class) is model_class for name in spec.scorer_class().table_files))


def share_checkpoint(checkpoint: str | Path, source: str = "default") -> SharedFiles:
    """Make ``checkpoint`` take its metric's tables (:func:`table_files`) from the checkpoint named ``source`` beside
    it, in place (:func:`~dialeval.scoring.shared_files.share_files`); returns the record."""
    folder = Path(checkpoint)
    names = table_files(folder)
    if not names:
        model_type = json.loads((folder / CONFIG).read_text(encoding="utf-8")).get("model_type")
        raise SharedFilesError(f"{folder}: a {model_type!r} checkpoint holds no tables beside its model to share")
    return share_files(folder, source, names)
