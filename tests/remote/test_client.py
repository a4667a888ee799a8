"""`ComponentReconcilerClient` classifies every answer of a component reconciler service."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from reconciler.devcluster.ports import free_ports
from reconciler.model.remote import RemoteTask
from reconciler.remote.client import ComponentReconcilerClient, RunStatus
from reconciler.util.polling import poll_until
from tests.remote.support import TOKEN, CallbackReceiver, running_service, settings, task_body

UNREACHABLE = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


def remote_task(receiver: CallbackReceiver, correlation_id: str, **extra: Any) -> RemoteTask:
    return RemoteTask.model_validate(
        task_body(
            chart="/nonexistent",
            namespace="ns",
            kubeconfig=UNREACHABLE,
            callback_url=receiver.callback_url(correlation_id),
            correlation_id=correlation_id,
            **extra,
        )
    )


async def test_client_maps_accepted_busy_rejected_and_unavailable(
    tmp_path: Path, receiver: CallbackReceiver
) -> None:
    receiver.refuse_final = 1000  # the first task stays in the pool, delivering its result
    service_settings = settings(tmp_path, workers=1, components=["web"], final_callback_grace=60)
    async with running_service(service_settings) as (app, asgi):
        transport = httpx.AsyncClient(transport=asgi._transport, base_url="http://component")
        async with (
            transport,
            ComponentReconcilerClient("http://component", TOKEN, http=transport) as client,
        ):
            first = await client.run(remote_task(receiver, "c-1"))
            assert first.status is RunStatus.ACCEPTED
            assert (first.busy, first.size, first.occupancy) == (1, 1, 1.0)

            async def refused_once() -> bool:
                return any(r.answered == 503 for r in receiver.of("c-1"))

            await poll_until(refused_once, timeout=30, what="the first final callback")
            busy = await client.run(remote_task(receiver, "c-2"))
            assert busy.status is RunStatus.BUSY
            assert busy.retry_after == 1.0
            assert "pool full" in busy.error

            rejected = await client.run(
                remote_task(receiver, "c-3").model_copy(update={"component": "istio"})
            )
            assert rejected.status is RunStatus.REJECTED
            assert rejected.error.startswith("component: istio is not served")

            wrong = ComponentReconcilerClient("http://component", "nope", http=transport)
            denied = await wrong.run(remote_task(receiver, "c-4"))
            assert denied.status is RunStatus.UNAVAILABLE
            assert "403" in denied.error

            app.state.service.pool.accepting = False
            stopping = await client.run(remote_task(receiver, "c-5"))
            assert stopping.status is RunStatus.UNAVAILABLE
            assert not await client.ready()
            app.state.service.pool.accepting = True
            assert await client.ready()


async def test_client_reports_a_closed_port_as_unavailable(receiver: CallbackReceiver) -> None:
    (port,) = free_ports(1)
    async with ComponentReconcilerClient(f"http://user:pw@127.0.0.1:{port}", TOKEN) as client:
        result = await client.run(remote_task(receiver, "c-x"))
    assert result.status is RunStatus.UNAVAILABLE
    assert "ConnectError" in result.error
    assert "pw" not in result.error
    assert "abc" not in result.error
