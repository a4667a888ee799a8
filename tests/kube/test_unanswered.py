"""A server that accepts TCP connections but never speaks TLS: the client gives up after the
handshake timeout (client-go's 10 s, not the whole request budget) and says what happened."""

from __future__ import annotations

import asyncio
import time

import pytest
import yaml

from reconciler.errors import ClusterUnreachable
from reconciler.kube.client import CONNECT_TIMEOUT, KubeClient


def kubeconfig(server: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": server}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "current-context": "c",
        }
    )


async def test_a_server_that_never_answers_tls_is_named_after_the_handshake_timeout() -> None:
    held: list[asyncio.StreamWriter] = []

    async def hold(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)  # accepted, never answered

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    started = time.monotonic()
    try:
        async with KubeClient.from_kubeconfig(
            kubeconfig(f"https://127.0.0.1:{port}"), text=True
        ) as client:
            with pytest.raises(ClusterUnreachable) as failed:
                await client.version()
    finally:
        server.close()
        for writer in held:
            writer.close()
    took = time.monotonic() - started

    assert CONNECT_TIMEOUT <= took < CONNECT_TIMEOUT + 10
    message = str(failed.value)
    assert f"no connection and TLS handshake within {CONNECT_TIMEOUT:g} s" in message
    assert not message.endswith(": ")
