"""The cluster client's connection pool checks idle connections cheaply (real apiserver, TLS)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from anyio.streams.tls import TLSStream

from reconciler.kube.client import KubeClient
from tests.conftest import KubeTarget


async def test_idle_connection_checks_do_not_rebuild_the_tls_attribute_table(
    kube_cluster: KubeTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    # httpcore asks every idle connection `is_readable` whenever it assigns a request; anyio
    # answered by building the TLS stream's attribute table each time (0.4 s of a first
    # deploy's CPU). Looked up once per connection, the table is built a few times per
    # connection, not once per idle connection per request.
    built = 0
    table = vars(TLSStream)["extra_attributes"].fget
    assert table is not None

    def counting(self: TLSStream) -> Any:
        nonlocal built
        built += 1
        return table(self)

    monkeypatch.setattr(TLSStream, "extra_attributes", property(counting))
    # HTTP/1.1: over HTTP/2 (the default for requests) they share one connection; watches and
    # servers without HTTP/2 still pool many
    async with KubeClient.from_kubeconfig(kube_cluster.kubeconfig, http2=False) as client:
        for _ in range(3):  # bursts: many connections, then many idle ones per assignment
            answers = await asyncio.gather(
                *(client.request("GET", "/api/v1/namespaces/default") for _ in range(30))
            )
            assert all(a["metadata"]["name"] == "default" for a in answers)
        connections = len(client._http._transport._pool.connections)  # type: ignore[attr-defined]
    assert connections > 1
    assert built <= 4 * connections, f"{built} attribute tables for {connections} connections"
