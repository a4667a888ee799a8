"""Cheaper liveness checks for the HTTP connection pool of a cluster client.

Why: before every request it assigns (and after every response), httpcore's pool asks each idle
connection whether the server closed it: `get_extra_info("is_readable")`. For a TLS connection
the anyio backend answers that by building the stream's whole attribute table (TLS and socket
attributes, a dozen callables) just to find the raw socket, every time. With the dozens of
keep-alive connections a deploy's concurrent applies open, a first deploy of the platform set
spent about 0.4 s of its ~2.7 s of CPU there. Here each stream looks its socket up once and
answers `is_readable` with the same poll of that socket (identical semantics: the TLS stream's
readability was always that of its raw socket); every other call passes through.
"""

from __future__ import annotations

import select
import socket
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2

SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)


def _readable(sock: socket.socket) -> bool:
    """Whether a recv would return at once (data, or b"" for a closed peer): httpcore's test."""
    fd = sock.fileno()
    if fd < 0:
        return True
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


class _Stream(httpcore2.AsyncNetworkStream):
    def __init__(self, inner: httpcore2.AsyncNetworkStream) -> None:
        self._inner = inner
        self._socket: socket.socket | None = inner.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        return _Stream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable" and self._socket is not None:
            return _readable(self._socket)
        return self._inner.get_extra_info(info)


class _Backend(httpcore2.AsyncNetworkBackend):
    def __init__(self, inner: httpcore2.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        return _Stream(
            await self._inner.connect_tcp(
                host,
                port,
                timeout=timeout,
                local_address=local_address,
                socket_options=socket_options,
            )
        )

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        return _Stream(
            await self._inner.connect_unix_socket(
                path, timeout=timeout, socket_options=socket_options
            )
        )

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def cheap_liveness_checks(transport: httpx2.AsyncHTTPTransport) -> bool:
    """Give the transport's pool the socket-caching streams; False when this httpx/httpcore
    does not have the pool where we expect it (the client then works as before, only slower)."""
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if not isinstance(pool, httpcore2.AsyncConnectionPool) or backend is None:
        return False
    if not isinstance(backend, _Backend):
        pool._network_backend = _Backend(backend)
    return True
