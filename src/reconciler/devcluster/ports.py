"""Free TCP ports on 127.0.0.1 for the test bed's servers."""

from __future__ import annotations

import socket


def free_ports(count: int) -> list[int]:
    """Return `count` distinct ports that were free a moment ago (all bound at once, then freed)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()
