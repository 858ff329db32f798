"""The scales a score is reported on: ``raw`` (the metric's own number, the default) and ``calibrated``.

A raw score is on the metric's own scale: GRADE's sits near 0 or 1, PONE's reaches 1e-43, DynaEval's is unbounded
and negative, RADE's runs from 1 to 5. The **calibrated** scale maps it to its percentile among human replies (the
way bert_score rescales with a baseline): 0.5 is a score as good as the median human reply of DailyDialog
validation, 0.9 one better than nine human replies in ten. The map is an :class:`EmpiricalCdf` (the class the
ensemble calibrates its members with) fitted per metric, checkpoint and setting by ``dialeval calibrate --metric M``
(:mod:`dialeval.evaluation.calibrate`) and stored in a JSON file: the maps of the shipped checkpoints (by any shipped
name: ``default``, ``base``) and of the metrics without one in the package, :data:`SCALES_FILE`; those of any other
checkpoint (a user's own training run) in the user's file, :func:`user_scales_file` (``$DIALEVAL_SCALES_FILE``, else
``scales.json`` in dialeval's cache), so that fitting one never writes into an installed package. A lookup reads
both.

The file maps each metric to a list of entries, one per fitted checkpoint and settings; an entry holds the scorer's
fingerprint without the checkpoint's name (its content hash and settings: the same weights read from another folder
are the same map), the command that made it, and one map per level (``turn``: context-response pairs, ``dialogue``:
whole dialogues). A score is calibrated only by the entry whose fingerprint is the scorer's; a metric, checkpoint,
setting or level without one refuses ``scale="calibrated"`` with a :class:`~.calibration.CalibrationError` that names
the metric and the command that makes its map.

The signature of a calibrated score ends in ``|scale:calibrated``; a raw score's signature is unchanged.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from ..errors import UnknownNameError
from ..paths import cache_dir
from .calibration import CalibrationError, EmpiricalCdf
from .checkpoints import is_shipped_label

__all__ = ["DEFAULT_ITEMS", "DEFAULT_SCALE", "LEVELS", "SCALES", "SCALES_FILE", "USER_SCALES_ENV", "calibrate_command",
           "check_scale", "entry_key", "read_scales", "scale_map", "scales_file_for", "user_scales_file", "with_scale",
           "write_scale"]

SCALES = ("raw", "calibrated")
DEFAULT_SCALE = "raw"
LEVELS = ("turn", "dialogue")
#: human items a map is fitted on by default (why: :mod:`dialeval.evaluation.calibrate`)
DEFAULT_ITEMS = 1000
#: where the fitted maps are stored: one small JSON file in the package
SCALES_FILE = Path(str(files("dialeval"))) / "resources" / "scales.json"
#: names the user's scales file (the maps of checkpoints that do not ship with dialeval)
USER_SCALES_ENV = "DIALEVAL_SCALES_FILE"


def user_scales_file() -> Path:
    """The user's scales file: ``$DIALEVAL_SCALES_FILE``, else ``scales.json`` in dialeval's cache folder."""
    return Path(os.environ[USER_SCALES_ENV]) if os.environ.get(USER_SCALES_ENV) else cache_dir("scales") / "scales.json"


def scales_file_for(fingerprint: Mapping[str, str]) -> Path:
    """Where the map of a scorer with ``fingerprint`` is stored: :data:`SCALES_FILE` for a shipped checkpoint (its
    ``checkpoint`` is a shipped name, ``default`` or ``base``: :func:`~.checkpoints.is_shipped_label`) or a metric
    without one, :func:`user_scales_file` for any other checkpoint."""
    shipped = "checkpoint" not in fingerprint or is_shipped_label(str(fingerprint["checkpoint"]))
    return SCALES_FILE if shipped else user_scales_file()


def check_scale(scale: str) -> None:
    if scale not in SCALES:
        raise UnknownNameError("scale", scale, SCALES)


def with_scale(signature: str, scale: str) -> str:
    """The signature of a score on ``scale``: unchanged for ``raw``, ``|scale:calibrated`` added otherwise."""
    check_scale(scale)
    return signature if scale == DEFAULT_SCALE else f"{signature}|scale:{scale}"


def entry_key(fingerprint: Mapping[str, str]) -> dict[str, str]:
    """What identifies a map: the scorer's fingerprint without the checkpoint's name (a folder path or
    ``default``); its content hash and the settings stay."""
    return {k: str(v) for k, v in fingerprint.items() if k != "checkpoint"}


def calibrate_command(metric: str, level: str = "turn") -> str:
    return f"dialeval calibrate --metric {metric}" + ("" if level == "turn" else f" --level {level}")


@lru_cache(maxsize=4)
def _read(path: str, mtime_ns: int) -> dict[str, list[dict[str, Any]]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise CalibrationError(f"{path}: expected a JSON object mapping each metric to a list of entries")
    return data


def read_scales(path: str | Path | None = None) -> dict[str, list[dict[str, Any]]]:
    """The stored entries by metric in ``path`` (default :data:`SCALES_FILE`; an absent file holds none)."""
    path = Path(SCALES_FILE if path is None else path)
    if not path.exists():
        return {}
    return _read(str(path), path.stat().st_mtime_ns)


def scale_map(metric: str, fingerprint: Mapping[str, str], level: str, *, path: str | Path | None = None
              ) -> EmpiricalCdf:
    """The calibrated scale's map of ``metric`` at ``level`` for the scorer with ``fingerprint``; a
    :class:`CalibrationError` naming the metric and the command that fits the map when none is stored."""
    if level not in LEVELS:
        raise UnknownNameError("level", level, LEVELS)
    files_read = [path] if path is not None else [user_scales_file(), SCALES_FILE]
    entries = [e for f in files_read for e in read_scales(f).get(metric, [])]
    key = entry_key(fingerprint)
    entry = next((e for e in entries if e.get("fingerprint") == key), None)
    command = calibrate_command(metric, level)
    if entry is None:
        what = ("no calibrated scale" if not entries else
                "no calibrated scale for this checkpoint and settings (" + ", ".join(f"{k}={v}" for k, v in key.items())
                + "; the stored ones are for " + "; ".join(", ".join(f"{k}={v}" for k, v in e["fingerprint"].items())
                                                          or "no settings" for e in entries) + ")")
        raise CalibrationError(f"metric '{metric}' has {what}; fit one with `{command}` (add the same --checkpoint "
                               "and --option as the scorer's), or score on the raw scale")
    if level not in entry:
        raise CalibrationError(f"metric '{metric}' has no calibrated scale for {level}-level scores (fitted: "
                               f"{', '.join(lv for lv in LEVELS if lv in entry)}); fit one with `{command}`")
    return EmpiricalCdf.from_json(entry[level], member=f"{metric} ({level} level)")


def write_scale(metric: str, fingerprint: Mapping[str, str], level: str, cdf: EmpiricalCdf, command: str, *,
                path: str | Path | None = None) -> Path:
    """Store ``cdf`` as ``metric``'s ``level`` map for ``fingerprint`` in ``path`` (default
    :func:`scales_file_for` the fingerprint), replacing the map it had there and keeping every other entry and
    level."""
    if level not in LEVELS:
        raise UnknownNameError("level", level, LEVELS)
    path = Path(scales_file_for(fingerprint) if path is None else path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {m: [dict(e) for e in entries] for m, entries in read_scales(path).items()}
    key = entry_key(fingerprint)
    entries = data.setdefault(metric, [])
    entry = next((e for e in entries if e.get("fingerprint") == key), None)
    if entry is None:
        entry = {"fingerprint": key}
        entries.append(entry)
    entry[level] = {**cdf.to_json(), "command": command}
    # one map per line: the file stays small and a refit shows as a one-line diff
    lines = []
    for m in sorted(data):
        rows = [json.dumps(e, sort_keys=True) for e in data[m]]
        lines.append(f"  {json.dumps(m)}: [\n    " + ",\n    ".join(rows) + "\n  ]")
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")
    return path
