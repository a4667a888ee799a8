"""The verified TLS client certificate of a connection, for services that authenticate callers
by it (mutual TLS): the mothership's API and the operator's watcher listener.

uvicorn does not put the peer certificate into the ASGI scope itself; this protocol puts it into
the request state (`scope["state"][PEER_CERT]`, `ssl.SSLSocket.getpeercert()` form).
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.h11_impl import H11Protocol

PEER_CERT = "tls_peer_certificate"
"""Request-state key of the verified client certificate (`ssl.SSLSocket.getpeercert()` form)."""


class PeerCertificateProtocol(H11Protocol):
    """HTTP/1.1 that hands each request the connection's verified client certificate."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        cert = transport.get_extra_info("peercert")
        if cert:
            self.app_state = {**self.app_state, PEER_CERT: cert}
