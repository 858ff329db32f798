"""Where a computation runs: the device (an explicit one, checked present on this machine, or Accelerate's choice),
this process's place among launched processes, and torch's intra-op CPU thread count.

Training and scoring resolve a device the same way, with :func:`resolve_device`: a device that was asked for and
that this machine lacks (``cuda`` where torch sees no GPU, ``cuda:3`` on a two-GPU machine, ``mps`` off Apple
silicon) raises :class:`DeviceUnavailable` naming it, never a silent fall back to the CPU.

The thread count matters for reproducibility, not only speed: CPU matmul kernels split their reductions by thread,
so the same forward pass on 1 and on 2 threads can differ in the last float32 bits (measured: 5e-8 on a cosine,
1e-6 on PONE's score). A score is bit-identical only for the same device *and* thread count; on the CPU the
count is therefore part of every torch-backed scorer's signature (:func:`cpu_threads_label`), and
:func:`torch_threads` pins it for a block of work (``dialeval score --threads N`` uses it).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import torch

from ..errors import DialevalError


def process_state():
    """Accelerate's ``PartialState``: which process this is, of how many, and its device.

    Under ``accelerate launch`` / ``torchrun`` on a machine without GPUs the processes talk over gloo, which
    Accelerate only sets up when asked for the CPU; everywhere else this is Accelerate's own choice.
    """
    from accelerate import PartialState

    launched = int(os.environ.get("WORLD_SIZE", "1")) > 1
    return PartialState(cpu=launched and not torch.cuda.is_available())


class DeviceUnavailable(DialevalError, RuntimeError):
    """An explicitly requested device that this machine does not have."""


def check_device_available(device: str | torch.device) -> torch.device:
    """``device`` as a ``torch.device`` if this machine has it; else :class:`DeviceUnavailable`, naming the device
    as it was asked for. Checked: CUDA (any GPU at all, and the index against the count torch sees) and MPS; other
    device types (cpu, meta...) pass as they are."""
    resolved = torch.device(device)
    asked = device if isinstance(device, str) else str(resolved)
    if resolved.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise DeviceUnavailable(f"device {asked!r} was asked for, but torch sees no CUDA device here")
        if resolved.index is not None and resolved.index >= count:
            raise DeviceUnavailable(f"device {asked!r} was asked for, but torch sees {count} CUDA device(s) "
                                    f"(cuda:0 to cuda:{count - 1})")
    if resolved.type == "mps" and not torch.backends.mps.is_available():
        raise DeviceUnavailable(f"device {asked!r} was asked for, but MPS is not available here")
    return resolved


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """The device to compute on. An explicit ``device`` wins, once :func:`check_device_available` finds it on this
    machine (:class:`DeviceUnavailable` otherwise); ``None`` lets Accelerate pick (this process's GPU, mps, xpu...
    or cpu)."""
    if device is not None:
        return check_device_available(device)
    return process_state().device


def check_thread_count(threads: int | None) -> None:
    """Raise ``ValueError`` unless ``threads`` is None (torch's default) or a positive integer."""
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be a positive integer (or None for torch's default), got {threads!r}")


def set_torch_threads(threads: int | None) -> int:
    """For the rest of this process, torch uses ``threads`` intra-op CPU threads (``None``: leave the count as it
    is); returns the count in force. Commands call it once, before any model runs."""
    check_thread_count(threads)
    if threads is not None:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


@contextlib.contextmanager
def torch_threads(threads: int | None) -> Iterator[int]:
    """Run the block with torch using ``threads`` intra-op CPU threads (``None``: leave the count as it is); the
    previous count is restored afterwards. Yields the count in force."""
    check_thread_count(threads)
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


def cpu_threads_label(device: torch.device | None) -> dict[str, str]:
    """The signature field that pins a CPU score's numerics: ``{"cpu_threads": N}`` on the CPU, nothing elsewhere
    (a GPU's results do not depend on the host's thread count) or where no torch model runs (``device`` None)."""
    if device is None or torch.device(device).type != "cpu":
        return {}
    return {"cpu_threads": str(torch.get_num_threads())}
