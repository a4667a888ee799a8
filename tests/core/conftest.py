"""What the core's tests against the test bed share: a connected cluster and a reconciler."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from reconciler.charts.sources import ChartCache
from reconciler.core.charts import HelmChartProvider
from reconciler.core.runner import ComponentReconciler
from reconciler.kube.cluster import Cluster
from tests.conftest import KubeTarget


@pytest.fixture
async def cluster(kube_cluster: KubeTarget) -> AsyncIterator[Cluster]:
    async with await Cluster.connect(kube_cluster.kubeconfig) as connected:
        yield connected


@pytest.fixture
def reconciler(tmp_path: Path) -> ComponentReconciler:
    return ComponentReconciler(HelmChartProvider(ChartCache(tmp_path / "cache")))
