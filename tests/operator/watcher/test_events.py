"""Remote events reach every subscriber: the Kyma controller's queue at once, other parts'
coroutine handlers as tasks, and a failing handler does not stop the others."""

from __future__ import annotations

import asyncio
from pathlib import Path

from reconciler.charts.sources import ChartCache
from reconciler.kube.cluster import Cluster
from reconciler.operator.runtime.wiring import Operator
from reconciler.operator.settings import OperatorSettings
from reconciler.operator.watcher.events import RemoteEvent, RemoteEvents
from tests.conftest import KubeTarget

EVENT = RemoteEvent(
    kyma_namespace="kcp",
    kyma_name="k1",
    runtime_id="rt-1",
    group="operator.kyma-project.io",
    version="v1beta2",
    kind="Kyma",
    namespace="kyma-system",
    name="default",
)


async def test_every_subscriber_gets_the_event_and_a_failing_one_does_not_stop_the_rest() -> None:
    events = RemoteEvents()
    seen: list[str] = []
    done = asyncio.Event()

    def failing(event: RemoteEvent) -> None:
        raise RuntimeError("boom")

    async def slow(event: RemoteEvent) -> None:
        await asyncio.sleep(0)
        seen.append(f"async {event.kyma_name}")
        done.set()

    events.subscribe(failing)
    events.subscribe(slow)
    unsubscribe = events.subscribe(lambda event: seen.append(f"sync {event.api_version}"))
    events.publish(EVENT)
    assert seen == ["sync operator.kyma-project.io/v1beta2"]  # inline, before any await
    await asyncio.wait_for(done.wait(), 5)
    assert seen[-1] == "async k1"
    unsubscribe()
    events.publish(EVENT)
    await events.aclose()
    assert seen.count("sync operator.kyma-project.io/v1beta2") == 1


async def test_a_remote_event_enqueues_its_kyma_and_its_remote_sync_at_once(
    kube_cluster: KubeTarget, tmp_path: Path
) -> None:
    async with await Cluster.connect(kube_cluster.kubeconfig) as control:
        operator = Operator(control, ChartCache(tmp_path / "cache"))
        operator.events.publish(EVENT)
        assert len(operator.queue) == 2
        assert operator.queue._due.keys() == {("Kyma", "kcp", "k1"), ("RemoteKyma", "kcp", "k1")}


async def test_without_remote_sync_a_remote_event_enqueues_only_its_kyma(
    kube_cluster: KubeTarget, tmp_path: Path
) -> None:
    async with await Cluster.connect(kube_cluster.kubeconfig) as control:
        settings = OperatorSettings(remote_sync=False)
        operator = Operator(control, ChartCache(tmp_path / "cache"), settings)
        operator.events.publish(EVENT)
        assert operator.queue._due.keys() == {("Kyma", "kcp", "k1")}
