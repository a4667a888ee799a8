"""Running a fixture chart as a component on the test bed, and reading what it left there."""

from __future__ import annotations

from typing import Any

from reconciler.core.results import Outcome
from reconciler.core.runner import ComponentReconciler
from reconciler.kube.cluster import Cluster
from reconciler.model.kube_object import KubeObject
from reconciler.model.task import ChartRef, Task, TaskType
from tests.charts.support import FIXTURE_CHARTS


async def run(
    reconciler: ComponentReconciler,
    cluster: Cluster,
    chart: str,
    namespace: str,
    *,
    configuration: dict[str, Any] | None = None,
    delete: bool = False,
    force: bool = False,
) -> Outcome:
    task = Task(
        component=chart,
        namespace=namespace,
        version="1.0.0",
        source=ChartRef(str(FIXTURE_CHARTS / chart)),
        configuration=configuration or {},
        type=TaskType.DELETE if delete else TaskType.RECONCILE,
        timeout=30,
        force=force,
    )
    return await reconciler.run(task, cluster)


async def get(
    cluster: Cluster, kind: str, name: str, namespace: str = "", api_version: str = "v1"
) -> KubeObject | None:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return await cluster.get(
        KubeObject({"apiVersion": api_version, "kind": kind, "metadata": meta})
    )
