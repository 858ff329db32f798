"""Where a training run computes: the device (one helper for the loop and the recipes' encoders). Torch's CPU
threads are set the backbone's one way (:func:`dialeval.backbone.device.torch_threads`, by
:func:`dialeval.training.recipe.run_recipe` for a run).

The availability check is the backbone's (:func:`dialeval.backbone.device.resolve_device`), shared with scoring;
this module adds the check of the option's spelling and re-exports :class:`DeviceUnavailable`."""

from __future__ import annotations

import re

import torch

from ..backbone.device import DeviceUnavailable, resolve_device

__all__ = ["DEVICE_FORMS", "DeviceUnavailable", "check_device_spec", "cpu_bf16_instructions", "device_description",
           "training_device"]

DEVICE_FORMS = "cpu, cuda, cuda:N or mps"
_DEVICE_PATTERN = re.compile(r"cpu|cuda(:\d+)?|mps")


def check_device_spec(spec: str | None) -> None:
    """Raise ``ValueError`` unless ``spec`` is None or one of the accepted forms (availability is not checked)."""
    if spec is not None and not (isinstance(spec, str) and _DEVICE_PATTERN.fullmatch(spec)):
        raise ValueError(f"device must be {DEVICE_FORMS} (or left unset for Accelerate's choice), got {spec!r}")


def training_device(spec: str | None) -> torch.device:
    """The device a run trains and encodes on: ``spec`` when given (and present on this machine), else
    Accelerate's choice. A missing device is :class:`DeviceUnavailable`, never a silent fall back to the CPU."""
    check_device_spec(spec)
    return resolve_device(spec)


def device_description(device: torch.device) -> str:
    """The training device as a run's summary records it (with the GPU's name on CUDA)."""
    return f"{device} ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else str(device)


def cpu_bf16_instructions() -> tuple[str, ...]:
    """The bf16 matrix instructions this machine's CPU has, as torch's CPU kernels detect them: ``"amx"`` (AMX
    tiles) and ``"avx512_bf16"``; empty when it has neither. bf16 autocast on the CPU is only faster than fp32 with
    one of them: without them the products run through conversions, several times slower (docs/training.md)."""
    found = []
    if torch.cpu._is_amx_tile_supported():
        found.append("amx")
    if torch.cpu._is_avx512_bf16_supported():
        found.append("avx512_bf16")
    return tuple(found)

