"""Metrics reflect what the engine did: durations per component, cluster status per runtime."""

from __future__ import annotations

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
