"""Which mothership operations skip the no-op fast path, and that the flag reaches the core."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import uuid
from collections import Counter
from dataclasses import replace
from pathlib import Path

from reconciler.charts.sources import ChartCache
from reconciler.core.charts import HelmChartProvider
from reconciler.core.runner import ComponentReconciler
from reconciler.kube.clients import ClientCache
from reconciler.kube.live import LiveIndex
from reconciler.model.cluster import ClusterSpec
from reconciler.model.operation import Operation
from reconciler.model.remote import RemoteTask
from reconciler.model.status import OperationState, OperationType
from reconciler.model.task import ChartRef, Task
from reconciler.mothership.invoker import InProcessInvoker
from reconciler.mothership.planner import Planner
from reconciler.mothership.settings import Settings
from tests.conftest import KubeTarget
from tests.helpers.charts import CONFIGMAPS, make_chart
from tests.helpers.clusters import cluster_spec, reconciling
from tests.helpers.counting import RecordingKubeClient


def operation(scheduling_id: str, retries: int = 0) -> Operation:
    now = dt.datetime.now(dt.UTC)
    return Operation(
        scheduling_id, "corr", "runtime", 1, 1, "web", "default", OperationType.RECONCILE,
        OperationState.NEW, "", retries, False, "", now, now,
    )  # fmt: skip


def test_every_nth_reconciliation_on_average_runs_in_full_and_its_operations_agree() -> None:
    planner = Planner(Settings(full_reconcile_every=4))
    ids = [str(uuid.uuid4()) for _ in range(2000)]
    full = [i for i in ids if planner.full_run(operation(i))]
    assert 350 < len(full) < 650  # ~1 in 4
    assert all(planner.full_run(operation(i)) for i in full)  # same id, same answer


def test_no_count_means_no_full_run_but_a_retry_always_is_one() -> None:
    planner = Planner(Settings(full_reconcile_every=0))
    assert not any(planner.full_run(operation(str(uuid.uuid4()))) for _ in range(100))
    assert planner.full_run(operation("x", retries=1))


def test_force_and_regenerate_travel_to_a_remote_component_reconciler() -> None:
    task = Task("web", "ns", "1", ChartRef("/c"), correlation_id="c", force=True, regenerate="r1")
    wire = RemoteTask.of(task, kubeconfig="k", callback_url="http://cb", max_retries=1)
    back = RemoteTask.model_validate_json(wire.model_dump_json(by_alias=True)).to_task()
    assert (back.force, back.regenerate) == (True, "r1")


def test_operations_of_one_reconciliation_share_one_live_index_and_old_ones_are_dropped(
    tmp_path: Path,
) -> None:
    reconciler = ComponentReconciler(HelmChartProvider(ChartCache(tmp_path)))
    invoker = InProcessInvoker(Planner(Settings()), reconciler, 60.0, shared_runs=2)
    state = reconciling(cluster_spec("runtime"))

    def index(scheduling_id: str) -> LiveIndex:
        return invoker._live_index(operation(scheduling_id), state)

    first = index("run-1")
    assert index("run-1") is first
    assert index("run-2") is not first
    index("run-3")
    assert index("run-1") is not first  # dropped beyond `shared_runs`
    # the run's namespaces (kyma-system, istio-system: few) scope its listings
    assert first.scoped


def with_components(kube_cluster: KubeTarget, components: list[dict[str, str]]) -> ClusterSpec:
    """A cluster spec for the test bed with exactly `components` (version "1")."""
    base = cluster_spec("runtime", kubeconfig=kube_cluster.kubeconfig.read_text())
    return base.model_copy(
        update={
            "kyma_config": base.kyma_config.model_validate(
                {"version": "1", "components": components}
            )
        }
    )


async def test_operations_of_one_cluster_share_its_client_until_the_invoker_closes(
    tmp_path: Path, kube_cluster: KubeTarget, namespace: str
) -> None:
    chart = make_chart(tmp_path, "cms", {"cms.yaml": CONFIGMAPS}, {"configmaps": ["x"]})
    components = [
        {"component": name, "namespace": namespace, "URL": str(chart)} for name in ("a", "b")
    ]
    spec = with_components(kube_cluster, components)
    state = reconciling(spec)
    reconciler = ComponentReconciler(HelmChartProvider(ChartCache(tmp_path / "cache")))
    invoker = InProcessInvoker(Planner(Settings()), reconciler, 60.0)
    try:
        for name in ("a", "b"):
            op = replace(
                operation("run-1"), correlation_id=name, component=name, namespace=namespace
            )
            result = await invoker.invoke(op, state, lambda _blocker: None)
            assert result.ok, result.reason
            assert len(invoker.clients) == 1  # one client for the cluster, kept for the next
    finally:
        await invoker.aclose()
    assert len(invoker.clients) == 0


async def test_a_reconciliation_of_12_components_reads_discovery_once(
    tmp_path: Path, kube_cluster: KubeTarget, namespace: str
) -> None:
    """Issue 11 B: every first install read the whole discovery for its `.Capabilities` (one
    request per group version, ~37 on the test bed): 12 components, 12 full reads. With the
    cluster's discovery shared and revalidated by the fingerprint, each group version is read
    once (twice at most: a refresh may find the cluster changed by the run itself)."""
    chart = make_chart(tmp_path, "cms", {"cms.yaml": CONFIGMAPS}, {"configmaps": ["x"]})
    names = [f"c{i:02d}" for i in range(12)]
    components = [{"component": name, "namespace": namespace, "URL": str(chart)} for name in names]
    spec = with_components(kube_cluster, components)
    state = reconciling(spec)
    reconciler = ComponentReconciler(HelmChartProvider(ChartCache(tmp_path / "cache")))
    clients = ClientCache(allow_host_access=True, client_type=RecordingKubeClient)
    invoker = InProcessInvoker(Planner(Settings()), reconciler, 60.0, clients=clients)
    sent: list[tuple[str, str]] = []
    try:

        async def install(name: str) -> None:
            op = replace(
                operation("run-1"), correlation_id=name, component=name, namespace=namespace
            )
            result = await invoker.invoke(op, state, lambda _blocker: None)
            assert result.ok, result.reason

        await asyncio.gather(*(install(name) for name in names))
        async with clients.cluster(spec.kubeconfig) as cluster:
            assert isinstance(cluster.client, RecordingKubeClient)
            sent = cluster.client.take()
    finally:
        await invoker.aclose()
    group_versions = Counter(
        path for _, path in sent if re.fullmatch(r"/api/v1|/apis/[^/]+/[^/]+", path)
    )
    assert group_versions  # the capabilities were read ...
    assert max(group_versions.values()) <= 2, group_versions  # ... and shared
