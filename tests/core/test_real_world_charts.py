"""Traits of real-world charts that must reconcile on the real apiserver, each from a small
fixture chart of ours (tests/fixtures/charts/): the first run applies everything, the second
changes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from reconciler.charts.sources import ChartCache
from reconciler.core.charts import HelmChartProvider
from reconciler.core.runner import ComponentReconciler, Outcome
from reconciler.kube.cluster import Cluster
from reconciler.model.kube_object import KubeObject
from reconciler.model.task import Task
from tests.charts.support import FIXTURE_CHARTS
from tests.conftest import KubeTarget


@pytest.fixture
async def cluster(kube_cluster: KubeTarget) -> AsyncIterator[Cluster]:
    async with await Cluster.connect(kube_cluster.kubeconfig) as connected:
        yield connected


@pytest.fixture
def reconciler(tmp_path: Path) -> ComponentReconciler:
    return ComponentReconciler(HelmChartProvider(ChartCache(tmp_path / "cache")))


async def reconcile(
    reconciler: ComponentReconciler, cluster: Cluster, chart: str, namespace: str
) -> Outcome:
    task = Task(
        component=chart,
        namespace=namespace,
        version="1.0.0",
        chart=str(FIXTURE_CHARTS / chart),
        timeout=30,
    )
    return await reconciler.run(task, cluster)


async def live(
    cluster: Cluster, api_version: str, kind: str, name: str, namespace: str = ""
) -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    found = await cluster.get(
        KubeObject({"apiVersion": api_version, "kind": kind, "metadata": meta})
    )
    assert found is not None, f"{kind} {name} does not exist"
    return found.raw


async def test_yaml_that_pyyaml_misreads_applies_as_helm_reads_it(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str
) -> None:
    first = await reconcile(reconciler, cluster, "yaml-quirks", namespace)
    assert first.ok, first.error
    crd = await live(
        cluster, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "filters.quirks.example.io"
    )
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema["properties"]["spec"]["properties"]["operator"]["enum"][:2] == ["=", "=="]
    filter_ = await live(cluster, "quirks.example.io/v1", "Filter", "yaml-quirks-equals", namespace)
    assert filter_["spec"] == {"operator": "=", "since": "2024-01-01"}
    data = (await live(cluster, "v1", "ConfigMap", "yaml-quirks-quirks", namespace))["data"]
    assert data == {"released": "2024-01-01", "time": "12:30", "mode": "0755", "answer": "yes"}
    again = await reconcile(reconciler, cluster, "yaml-quirks", namespace)
    assert again.ok, again.error
    assert again.changed == []
