"""The mothership with component reconciler processes: real processes, real apiserver, Postgres.

The engine runs in the test process with the remote invoker and the REST API (for callbacks)
on a real port; `reconciler component serve` runs as separate processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from reconciler.api import ApiSettings
from reconciler.api.app import create_app
from reconciler.devcluster import PostgresServer
from reconciler.devcluster.ports import free_ports
from reconciler.model.operation import Operation
from reconciler.model.remote import CALLBACK_SECRET_HEADER
from reconciler.model.status import ClusterStatus, OperationState
from reconciler.mothership.engine import Engine
from reconciler.mothership.settings import Settings
from reconciler.store.crypto import Cipher
from reconciler.util.polling import poll_until
from tests.conftest import KubeTarget, kubelet_running
from tests.helpers.charts import CONFIGMAPS, DEPLOYMENT, make_chart
from tests.helpers.clusters import cluster_spec
from tests.remote.support import TOKEN, ServeProcess, serve_process

pytestmark = pytest.mark.slow


@pytest.fixture
def db_url(postgres_server: PostgresServer) -> str:
    return asyncio.run(postgres_server.create_database(f"remote_{uuid.uuid4().hex[:10]}"))


@dataclass
class Mothership:
    engine: Engine
    url: str


@contextlib.asynccontextmanager
async def mothership(
    tmp_path: Path, db_url: str, pools: list[str], **overrides: Any
) -> AsyncIterator[Mothership]:
    (port,) = free_ports(1)
    url = f"http://127.0.0.1:{port}"
    key = tmp_path / "key"
    Cipher.from_file(key, create=True)
    options: dict[str, Any] = {
        "sweep_interval": 0.5,
        "bookkeeping_interval": 0.5,
        "orphan_timeout": 3,
        "heartbeat_interval": 0.5,  # below the orphan timeout, or a slow hand-over is orphaned
        "retry_backoff": 0.2,
        "operation_timeout": 60,
    }
    settings = Settings(
        data_dir=tmp_path / "data",
        database_url=db_url,
        encryption_key_file=key,
        invoker="remote",
        component_reconcilers={"base": ",".join(pools)},
        callback_url=url,
        component_reconciler_token=TOKEN,
        **(options | overrides),
    )
    async with Engine(settings) as engine:
        app = create_app(
            engine.service,
            settings=ApiSettings(
                auth="none", callback_token=TOKEN, callback_orphan_timeout=3, audit_log="-"
            ),
        )
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
        )
        serving = asyncio.create_task(server.serve())

        async def started() -> bool:
            return server.started

        await poll_until(started, timeout=10, what="the mothership API to listen")
        try:
            yield Mothership(engine, url)
        finally:
            server.should_exit = True
            await serving


def spec(runtime_id: str, kubeconfig: str, chart: Path, namespace: str, components: int = 2) -> Any:
    base = cluster_spec(runtime_id, kubeconfig=kubeconfig)
    comps = tuple(
        {"component": f"part{i}", "namespace": namespace, "URL": str(chart)}
        for i in range(components)
    )
    return base.model_copy(
        update={
            "kyma_config": base.kyma_config.model_validate({"version": "1.0", "components": comps})
        }
    )


async def wait_ready(engine: Engine, runtime_ids: list[str], timeout: float = 90) -> None:
    async def all_ready() -> bool:
        states = [await engine.service.cluster(r) for r in runtime_ids]
        failed = [s for s in states if s.status is ClusterStatus.ERROR]
        if failed:
            raise AssertionError(await engine.service.failures(failed[0]))
        return all(s.status is ClusterStatus.READY for s in states)

    await poll_until(all_ready, timeout=timeout, what=f"{len(runtime_ids)} clusters ready")


async def tasks_done(process: ServeProcess) -> int:
    async with httpx.AsyncClient(base_url=process.url) as http:
        text = (await http.get("/metrics")).text
    return int(
        sum(
            float(v)
            for v in re.findall(
                r'^reconciler_component_tasks_total\{[^}]*result="success"[^}]*\} (\S+)$',
                text,
                re.M,
            )
        )
    )


async def pool_busy(process: ServeProcess) -> bool:
    async with httpx.AsyncClient(base_url=process.url) as http:
        return "reconciler_component_pool_busy 1.0" in (await http.get("/metrics")).text


@pytest.fixture
def two_pools(tmp_path: Path) -> Iterator[tuple[ServeProcess, ServeProcess]]:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with serve_process(tmp_path / "a") as a, serve_process(tmp_path / "b") as b:
        yield a, b


async def test_twenty_clusters_reconciled_by_two_component_reconcilers(
    kube_cluster: KubeTarget,
    db_url: str,
    tmp_path: Path,
    two_pools: tuple[ServeProcess, ServeProcess],
) -> None:
    a, b = two_pools
    await a.live()
    await b.live()
    chart = make_chart(tmp_path, "cms", {"cms.yaml": CONFIGMAPS}, {"configmaps": ["x"]})
    kubeconfig = kube_cluster.kubeconfig.read_text()
    ids = [f"remote-{i}" for i in range(20)]
    # Exactly once needs heartbeats that arrive within the orphan timeout: 3 s (the kill test's
    # quick hand-over) is too short for 40 operations on 2 loaded cores.
    async with mothership(tmp_path, db_url, [a.url, b.url], orphan_timeout=20) as ms:
        for runtime_id in ids:
            await ms.engine.service.upsert_cluster(spec(runtime_id, kubeconfig, chart, runtime_id))
        await wait_ready(ms.engine, ids)
        done_a, done_b = await tasks_done(a), await tasks_done(b)
    assert done_a + done_b == 40
    assert done_a > 0
    assert done_b > 0


async def test_killed_component_reconciler_orphans_the_operation_and_another_finishes_it(
    kube_cluster: KubeTarget,
    db_url: str,
    tmp_path: Path,
    namespace: str,
    two_pools: tuple[ServeProcess, ServeProcess],
) -> None:
    chart = make_chart(tmp_path, "web", {"deploy.yaml": DEPLOYMENT}, {"replicas": 1})
    kubeconfig = kube_cluster.kubeconfig.read_text()
    pools = list(two_pools)
    for pool in pools:
        await pool.live()
    async with mothership(tmp_path, db_url, [p.url for p in pools]) as ms:
        await ms.engine.service.upsert_cluster(
            spec("rt-kill", kubeconfig, chart, namespace, components=1)
        )

        async def busy_pool() -> ServeProcess | None:  # the Deployment waits: no kubelet yet
            for pool in pools:
                async with httpx.AsyncClient(base_url=pool.url) as http:
                    with contextlib.suppress(httpx.TransportError):  # the killed one
                        metrics = (await http.get("/metrics")).text
                        if "reconciler_component_pool_busy 1.0" in metrics:
                            return pool
            return None

        victim = await poll_until(busy_pool, timeout=30, what="the operation to be running")
        survivor = next(p for p in pools if p is not victim)
        os.killpg(victim.process.pid, signal.SIGKILL)

        async def taken_over() -> bool:  # orphaned after the timeout, handed to the survivor
            return await busy_pool() is survivor

        await poll_until(taken_over, timeout=30, what="the survivor to take the orphan over")
        async with kubelet_running(kube_cluster, namespace):
            await wait_ready(ms.engine, ["rt-kill"], timeout=60)
    assert await tasks_done(survivor) == 1


async def test_full_pool_answers_429_and_the_mothership_retries_later(
    kube_cluster: KubeTarget, db_url: str, tmp_path: Path
) -> None:
    (tmp_path / "one").mkdir()
    chart = make_chart(tmp_path, "cms", {"cms.yaml": CONFIGMAPS}, {"configmaps": ["x"]})
    kubeconfig = kube_cluster.kubeconfig.read_text()
    ids = [f"busy-{i}" for i in range(4)]
    with serve_process(tmp_path / "one", "--workers", "1") as one:
        await one.live()
        async with mothership(tmp_path, db_url, [one.url], remote_attempts=1) as ms:
            for runtime_id in ids:
                await ms.engine.service.upsert_cluster(
                    spec(runtime_id, kubeconfig, chart, runtime_id, components=1)
                )
            await wait_ready(ms.engine, ids)
        async with httpx.AsyncClient(base_url=one.url) as http:
            text = (await http.get("/metrics")).text
        done = await tasks_done(one)
    rejected = re.findall(
        r'^reconciler_component_runs_rejected_total\{reason="busy"\} (\S+)$', text, re.M
    )
    assert rejected
    assert float(rejected[0]) > 0
    assert done == 4


async def test_forged_success_with_the_fleet_token_is_refused_and_the_real_worker_finishes(
    kube_cluster: KubeTarget, db_url: str, tmp_path: Path, namespace: str
) -> None:
    chart = make_chart(tmp_path, "web", {"deploy.yaml": DEPLOYMENT}, {"replicas": 1})
    kubeconfig = kube_cluster.kubeconfig.read_text()
    (tmp_path / "one").mkdir()
    with serve_process(tmp_path / "one") as one:
        await one.live()
        async with mothership(tmp_path, db_url, [one.url]) as ms:
            await ms.engine.service.upsert_cluster(
                spec("rt-forge", kubeconfig, chart, namespace, components=1)
            )

            async def running() -> Operation | None:  # the Deployment waits: no kubelet yet
                recs = await ms.engine.service.reconciliations(runtime_ids=["rt-forge"])
                if not recs:
                    return None
                _, ops = await ms.engine.service.reconciliation(recs[0].scheduling_id)
                live = [op for op in ops if op.state is OperationState.IN_PROGRESS]
                return live[0] if live and await pool_busy(one) else None

            op = await poll_until(running, timeout=30, what="the operation to be running")
            url = f"{ms.url}/v1/operations/{op.scheduling_id}/callback/{op.correlation_id}"
            forged = {"status": "success", "error": "", "retryID": str(uuid.uuid4())}
            async with httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
                for headers in ({}, {CALLBACK_SECRET_HEADER: "guessed"}):
                    answer = await http.post(url, json=forged, headers=headers)
                    assert answer.status_code == 403, answer.text
            state = await ms.engine.service.operation(*op.key)
            assert state.state is OperationState.IN_PROGRESS
            assert (await ms.engine.service.cluster("rt-forge")).status is not ClusterStatus.READY
            async with kubelet_running(kube_cluster, namespace):
                await wait_ready(ms.engine, ["rt-forge"], timeout=60)
        assert await tasks_done(one) == 1


async def test_a_component_reconciler_reports_what_blocks_readiness_while_running_and_after(
    kube_cluster: KubeTarget, db_url: str, tmp_path: Path, namespace: str
) -> None:
    chart = make_chart(tmp_path, "web", {"deploy.yaml": DEPLOYMENT}, {"replicas": 1})
    kubeconfig = kube_cluster.kubeconfig.read_text()
    expected = f"deployment {namespace}/part0: 0/1 replicas available"
    (tmp_path / "one").mkdir()
    with serve_process(tmp_path / "one") as one:
        await one.live()
        async with mothership(
            tmp_path, db_url, [one.url], operation_timeout=15, max_retries=0, retry_interval=3600
        ) as ms:
            await ms.engine.service.upsert_cluster(
                spec("rt-why", kubeconfig, chart, namespace, components=1)
            )

            async def operation() -> Operation:
                (rec, *_) = await ms.engine.service.reconciliations(runtime_ids=["rt-why"])
                _, (op,) = await ms.engine.service.reconciliation(rec.scheduling_id)
                return op

            async def blocked_while_running() -> bool:  # no kubelet: the Deployment waits
                if not await ms.engine.service.reconciliations(runtime_ids=["rt-why"]):
                    return False
                op = await operation()
                return op.state is OperationState.IN_PROGRESS and op.blocker == expected

            await poll_until(blocked_while_running, timeout=60, what=f"blocker '{expected}'")

            async def failed() -> bool:
                return (await operation()).state is OperationState.ERROR

            await poll_until(failed, timeout=60, what="the operation to fail")
            op = await operation()
            assert "part0" in op.reason
            assert op.blocker == expected
