"""Where a computation runs: the device (an explicit one, or Accelerate's choice), this process's place among
launched processes, and torch's intra-op CPU thread count.

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


def process_state():
    """Accelerate's ``PartialState``: which process this is, of how many, and its device.

    Under ``accelerate launch`` / ``torchrun`` on a machine without GPUs the processes talk over gloo, which
    Accelerate only sets up when asked for the CPU; everywhere else this is Accelerate's own choice.
    """
    from accelerate import PartialState

    launched = int(os.environ.get("WORLD_SIZE", "1")) > 1
    return PartialState(cpu=launched and not torch.cuda.is_available())


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """An explicit ``device`` wins; otherwise Accelerate picks (this process's GPU, mps, xpu... or cpu)."""
    if device is not None:
        return torch.device(device)
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
