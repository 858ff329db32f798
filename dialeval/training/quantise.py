"""Store a checkpoint's large weights as int8 rows: ``dialeval checkpoint quantise --checkpoint DIR``.

Every weight of the checkpoint's model that it can store as int8 rows (``int8_row_weights`` of the shared model code:
each plain ``nn.Linear``'s, and the other float weights of 2 dimensions or more its code reads so, such as
BERT-RUBER's bilinear matrix and DynaEval's LSTM and graph weights), that the checkpoint stores and that has at least
``min_params`` numbers (default :data:`DEFAULT_MIN_PARAMS`: smaller weights, biases and LayerNorms stay float16) is
stored as int8 values with a float32 scale per row (``quantise_rows``, the scheme of GRADE's node table): the weight
int8 (``<module>.weight`` of a linear layer, ``<parameter>`` otherwise) and its scales float32 (the same name +
``_scale``) in ``model.safetensors``, and its name (the module's for a linear layer, the parameter's otherwise) in the
config's ``int8_weights``, so the model builds it as int8 rows. Each value moves by at most half a step of its row
(under 0.4% of the row's largest magnitude); the file shrinks by about half of those weights' float16 bytes. Such a
checkpoint is for scoring: its int8 weights refuse to train.

The conversion is in place and reproducible (the same folder gives the same bytes). ``training.json``, where the
folder has one, records it under :data:`~dialeval.training.runs.CONVERSIONS_FIELD` (the command, the modules, the
file's bytes before and after), after the training run's record: the checkpoint's history reads training, then this
step.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from ..errors import CheckpointNotFoundError
from ..modeling.shared.configuration_shared import int8_weight_names
from ..modeling.shared.modeling_shared import int8_row_weights, quantise_rows, row_scale_name
from .half import WEIGHTS
from .runs import CONVERSIONS_FIELD, TRAINING_RECORD

#: Weights with fewer numbers than this stay float (``dialeval checkpoint quantise``'s default): GRADE's GAT
#: projections of 300 x 300 and larger become int8; its node initialisers of 50 x 300 and scorer do not.
DEFAULT_MIN_PARAMS = 65_536
CONFIG = "config.json"


@dataclass(frozen=True)
class Quantised:
    """What :func:`quantise_checkpoint` did: ``model.safetensors`` bytes before and after, and the weights it
    converted, by their names in ``int8_weights`` (a linear layer's module name, another weight's parameter name;
    none: nothing was left to convert and no file changed)."""

    before: int
    after: int
    modules: list[str]


def checkpoint_model_class(folder: Path, config: dict) -> type:
    """The learned metric's model class of the checkpoint whose ``config.json`` is ``config`` (by its
    ``model_type``)."""
    from ..scoring.registry import all_specs
    from ..scoring.spec import ExportSpec, import_object

    classes = [import_object(spec.export.model_class) for spec in all_specs() if isinstance(spec.export, ExportSpec)]
    for model_class in classes:
        if model_class.config_class.model_type == config.get("model_type"):
            return model_class
    raise CheckpointNotFoundError(
        f"{folder}: model type {config.get('model_type')!r} is not one of the learned metrics' "
        f"({', '.join(sorted(c.config_class.model_type for c in classes))})")


def quantise_checkpoint(checkpoint: str | Path, min_params: int = DEFAULT_MIN_PARAMS,
                        only: Sequence[str] = ()) -> Quantised:
    """Store every weight of the checkpoint's model that it can store as int8 rows, that the checkpoint holds in
    float and that has at least ``min_params`` numbers as int8 rows, in place (see the module docstring); with
    ``only``, of those whose names start with one of these prefixes (to measure what part of the model an int8
    change comes from). Weights already stored so stay as they are; a folder with nothing left to convert is left
    untouched."""
    folder = Path(checkpoint)
    weights, config_path = folder / WEIGHTS, folder / CONFIG
    if not weights.is_file() or not config_path.is_file():
        raise CheckpointNotFoundError(f"{folder} is not a checkpoint folder (it needs {CONFIG} and {WEIGHTS})")
    if min_params < 1:
        raise ValueError(f"min_params must be at least 1, got {min_params}")
    config = json.loads(config_path.read_text(encoding="utf-8"))
    model_class = checkpoint_model_class(folder, config)
    with torch.device("meta"):  # the modules' names and shapes only
        model = model_class(model_class.config_class.from_pretrained(folder))
    with safe_open(str(weights), "pt") as fh:
        metadata = fh.metadata()
        state = {key: fh.get_tensor(key) for key in fh.keys()}  # noqa: SIM118 (a safetensors handle)
    shapes = {key: tuple(param.shape) for key, param in model.named_parameters()}  # the float weights only
    keys = {name: key for name, key in int8_row_weights(model).items()
            if math.prod(shapes[key]) >= min_params and key in state and (not only or name.startswith(tuple(only)))}
    modules = sorted(keys)
    before = weights.stat().st_size
    if not modules:
        return Quantised(before, before, [])
    for name in modules:
        key = keys[name]
        stored, shape = state[key], shapes[key]
        if tuple(stored.shape) != shape or not stored.is_floating_point():
            raise CheckpointNotFoundError(f"{weights}: {key} is {stored.dtype} {tuple(stored.shape)}, not the float "
                                          f"weight {shape} the config builds")
        state[key], state[row_scale_name(key)] = quantise_rows(stored)
    tmp = weights.with_suffix(".tmp")
    save_file({k: v.contiguous() for k, v in state.items()}, str(tmp), metadata=metadata)
    tmp.chmod(weights.stat().st_mode & 0o777)  # safetensors writes 0600: keep the file readable as it was
    tmp.replace(weights)
    config["int8_weights"] = int8_weight_names([*config.get("int8_weights", []), *modules])
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    done = Quantised(before, weights.stat().st_size, modules)
    _record(folder, min_params, only, done)
    return done


def _record(folder: Path, min_params: int, only: Sequence[str], done: Quantised) -> None:
    """Add the conversion to the folder's ``training.json`` (``CONVERSIONS_FIELD``), where it has one."""
    path = folder / TRAINING_RECORD
    if not path.is_file():
        return
    record = json.loads(path.read_text(encoding="utf-8"))
    record.setdefault(CONVERSIONS_FIELD, []).append({
        "command": f"dialeval checkpoint quantise --checkpoint CHECKPOINT --min-params {min_params}"
                   + "".join(f" --only {prefix}" for prefix in only),
        "format": "int8 rows, one float32 scale per row", "modules": done.modules,
        "bytes_before": done.before, "bytes_after": done.after})
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
