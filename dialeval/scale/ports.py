"""A free TCP port of this machine, for a process launched beside others (Accelerate's ``--main_process_port``,
a local test server)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port on this machine that nothing listens on now (the system picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


__all__ = ["free_port"]
