"""A watcher event that reaches the process not holding the Kyma's shard makes the holder
reconcile the Kyma at once (not at its periodic requeue): two in-process operators, two shards.
A burst of events costs one write of the Kyma per interval."""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from pathlib import Path

from reconciler.charts.sources import ChartCache
from reconciler.kube.cluster import Cluster
from reconciler.model.lifecycle import API_VERSION, SYNC
from reconciler.operator.clusters.control import ControlPlane
from reconciler.operator.clusters.install import install_crds
from reconciler.operator.runtime.forward import WATCHED_AT, EventForwarder
from reconciler.operator.runtime.shards import shard_of
from reconciler.operator.runtime.wiring import Operator
from reconciler.operator.settings import OperatorSettings, ShardSettings
from reconciler.operator.watcher.events import RemoteEvent
from reconciler.util.polling import poll_until
from tests.conftest import KubeTarget
from tests.operator import modules
from tests.operator.conftest import LOCAL_SOURCES
from tests.operator.running import running

SETTINGS = OperatorSettings(
    success_interval=600,
    busy_interval=0.5,
    error_interval=0.5,
    **LOCAL_SOURCES,  # type: ignore[arg-type]
)
"""The periodic requeue is far beyond the test's deadline: only the event can trigger it."""
KYMA = "kyma-forwarded"


def _kyma_reconciles(operator: Operator) -> float:
    value = operator.metrics.registry.get_sample_value(
        "reconciler_operator_reconcile_duration_seconds_count", {"kind": "Kyma", "result": "ok"}
    )
    return value or 0.0


async def test_an_event_reaching_the_non_holder_makes_the_holder_reconcile_the_kyma_at_once(
    kube_cluster: KubeTarget, namespace: str, tmp_path: Path
) -> None:
    async with await Cluster.connect(kube_cluster.kubeconfig) as control:
        await install_crds(control)
        operators = [
            Operator(
                control,
                ChartCache(tmp_path / identity),
                SETTINGS,
                shards=ShardSettings(
                    count=2,
                    lease_namespace=namespace,
                    lease_duration=20,
                    renew_interval=4,
                    identity=identity,
                ),
            )
            for identity in ("op-a", "op-b")
        ]
        async with contextlib.AsyncExitStack() as stack:
            for operator in operators:
                await stack.enter_async_context(
                    running(operator, kube_cluster.kubeconfig, namespace)
                )

            async def one_each() -> bool:
                held = [op.shards.shards.held for op in operators if op.shards]
                return sorted(s for h in held for s in h) == [0, 1] and all(held)

            await poll_until(one_each, timeout=90, what="each operator holding one shard")
            shard = shard_of(KYMA, None, ShardSettings(count=2))
            holds = [bool(op.shards and op.shards.shards.owned(shard)) for op in operators]
            owner, other = operators if holds[0] else operators[::-1]
            body = modules.kyma(namespace, KYMA, "regular", [])
            body["metadata"]["labels"] = {SYNC: "false"}
            await control.apply(body)

            async def settled() -> float | None:
                kyma = await owner.control.get("Kyma", namespace, KYMA)
                ready = ((kyma or {}).get("status") or {}).get("state") == "Ready"
                count = _kyma_reconciles(owner)  # observed once the reconcile returned
                return count if ready and count >= 1 else None

            before = await poll_until(settled, timeout=60, what="the Kyma Ready")
            assert _kyma_reconciles(other) == 0

            published = time.monotonic()
            other.events.publish(
                RemoteEvent(namespace, KYMA, "rt-1", "", "v1", "ConfigMap", "kyma-system", "x")
            )

            async def reconciled_again() -> bool:
                return _kyma_reconciles(owner) > before

            await poll_until(reconciled_again, timeout=20, what="the holder reconciling it")
            print(f"\nthe holder reconciled {time.monotonic() - published:.2f} s after the event")
            kyma = await owner.control.get("Kyma", namespace, KYMA)
            assert WATCHED_AT in (kyma or {})["metadata"]["annotations"]
            assert _kyma_reconciles(other) == 0


async def test_a_burst_of_events_costs_one_write_of_the_kyma_per_interval(
    kube_cluster: KubeTarget, namespace: str
) -> None:
    async with await Cluster.connect(kube_cluster.kubeconfig) as cluster:
        await install_crds(cluster)
        control = ControlPlane(cluster)
        await control.apply(modules.kyma(namespace, KYMA, "regular", []))
        start = (await control.get("Kyma", namespace, KYMA) or {})["metadata"]["resourceVersion"]
        forwarder = EventForwarder(control, interval=1.0)

        async def stamp(other_than: str | None) -> str | None:
            kyma = await control.get("Kyma", namespace, KYMA) or {}
            value = (kyma["metadata"].get("annotations") or {}).get(WATCHED_AT)
            return value if value != other_than else None

        stamps: list[str] = []
        for _ in range(2):  # the second burst comes right after the first write
            for _ in range(10):
                forwarder.forward(namespace, KYMA)
            stamps.append(await poll_until(lambda: stamp(stamps[-1] if stamps else None),
                                           timeout=20, what="the annotation written"))  # fmt: skip
        await forwarder.aclose()
        path = f"/apis/{API_VERSION}/namespaces/{namespace}/kymas"
        params = {"resourceVersion": start, "timeoutSeconds": "2",
                  "fieldSelector": f"metadata.name={KYMA}"}  # fmt: skip
        writes = [e async for e in cluster.client.watch(path, params) if e["type"] == "MODIFIED"]
        assert len(writes) == 2, [w["object"]["metadata"].get("annotations") for w in writes]
        first, second = (dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ") for s in stamps)
        assert (second - first).total_seconds() >= 0.9  # the interval, not at once
