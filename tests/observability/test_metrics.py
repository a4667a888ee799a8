"""Metrics reflect what the engine did: durations per component, cluster status per runtime."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

from prometheus_client import generate_latest

from reconciler.model.cluster import ClusterState
from reconciler.model.operation import Operation
from reconciler.model.status import ClusterStatus
from reconciler.mothership.engine import Engine
from reconciler.mothership.invoker import CallableInvoker, InvokeResult
from reconciler.mothership.settings import Settings
from reconciler.util.polling import poll_until
from tests.mothership.test_engine import url_spec


async def test_metrics_show_cluster_status_operations_and_durations(tmp_path: Path) -> None:
    async def ok(op: Operation, state: ClusterState) -> InvokeResult:
        return InvokeResult(True)

    settings = Settings(data_dir=tmp_path, sweep_interval=0.5, bookkeeping_interval=0.5)
    async with Engine(settings, invoker=lambda _p: CallableInvoker(ok)) as engine:
        await engine.service.upsert_cluster(url_spec("rt-m"))

        async def ready() -> bool:
            return (await engine.service.cluster("rt-m")).status is ClusterStatus.READY

        await poll_until(ready, timeout=20, what="rt-m ready")
        await engine.telemetry.refresh()
        text = generate_latest(engine.metrics.registry).decode()
    assert 'reconciler_cluster_status{runtime_id="rt-m",status="ready"} 1.0' in text
    assert 'reconciler_clusters{status="ready"} 1.0' in text
    assert 'reconciler_operations{state="done"} 7.0' in text
    assert (
        'reconciler_operation_duration_seconds_count{component="istio",result="done"} 1.0' in text
    )
    assert "reconciler_operation_queue_wait_seconds_count 7.0" in text
    assert "reconciler_reconciliations_active 0.0" in text


async def test_health_gauges_say_failing_through_the_retries_then_when_it_last_succeeded(
    tmp_path: Path,
) -> None:
    broken = {"istio"}

    async def flaky(op: Operation, state: ClusterState) -> InvokeResult:
        if op.component in broken:
            return InvokeResult(False, "component istio: not ready", transient=True)
        return InvokeResult(True)

    settings = Settings(
        data_dir=tmp_path,
        sweep_interval=0.2,
        bookkeeping_interval=0.2,
        retry_interval=0.3,
        max_retries=0,
    )
    failing = 'reconciler_cluster_health{health="failing",runtime_id="rt-h"} 1.0'
    async with Engine(settings, invoker=lambda _p: CallableInvoker(flaky)) as engine:
        await engine.service.upsert_cluster(url_spec("rt-h"))

        async def scraped() -> str:
            await engine.telemetry.refresh()
            return generate_latest(engine.metrics.registry).decode()

        async def failed_twice() -> bool:
            return 'reconciler_cluster_consecutive_failures{runtime_id="rt-h"} 2.0' in (
                await scraped()
            )

        await poll_until(failed_twice, timeout=20, what="two failed runs of rt-h")
        statuses = set()
        for _ in range(20):  # several retry cycles: the wire status moves, the health does not
            text = await scraped()
            assert failing in text
            assert 'reconciler_clusters_by_health{health="failing"} 1.0' in text
            assert "reconciler_cluster_last_successful_reconcile_timestamp_seconds{" not in text
            statuses.add((await engine.service.cluster("rt-h")).status)
            await asyncio.sleep(0.1)
        assert ClusterStatus.RECONCILING in statuses

        broken.clear()

        async def healthy() -> bool:
            return 'reconciler_cluster_health{health="healthy",runtime_id="rt-h"} 1.0' in (
                await scraped()
            )

        await poll_until(healthy, timeout=20, what="rt-h healthy")
        text = await scraped()
    assert 'reconciler_cluster_consecutive_failures{runtime_id="rt-h"} 0.0' in text
    series = "reconciler_cluster_last_successful_reconcile_timestamp_seconds"
    stamp = re.search(series + r'\{runtime_id="rt-h"\} (\S+)', text)
    assert stamp is not None
    assert abs(float(stamp.group(1)) - time.time()) < 60
