"""uvicorn as the listener and the watcher run it: a server that says when it listens and
leaves SIGTERM/SIGINT to the process that embeds it (uvicorn would otherwise take them over)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator

import uvicorn


class Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.up = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.up.set()

    @property
    def port(self) -> int:
        """The bound port (the configured one, or the one chosen for port 0)."""
        if not self.up.is_set():
            raise RuntimeError("the server is not listening")
        return int(self.servers[0].sockets[0].getsockname()[1])
