"""A simulated Gardener per test: the session cluster acts as the garden (Shoot CRD, a project
namespace `garden-<project>`), a second real apiserver acts as every shoot."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from reconciler.devcluster.gardener import GardenerSimulator
from reconciler.infra.gardener import Gardener, RateLimiter
from reconciler.kube.client import KubeClient
from reconciler.kube.cluster import Cluster
from tests.conftest import ClusterFactory, KubeTarget


@dataclass
class Garden:
    simulator: GardenerSimulator
    gardener: Gardener
    """The manager's client, through the simulator's proxy."""
    project: str
    kubeconfig: Path
    """What the manager is given: the proxy's kubeconfig."""
    shoot: KubeTarget
    """The apiserver every Shoot's admin kubeconfig points at."""


@pytest.fixture
async def shoot_cluster(cluster_factory: ClusterFactory) -> KubeTarget:
    return await cluster_factory()


@pytest.fixture
async def garden(
    kube_cluster: KubeTarget, shoot_cluster: KubeTarget, tmp_path: Path
) -> AsyncIterator[Garden]:
    project = f"p{uuid.uuid4().hex[:8]}"
    simulator = GardenerSimulator(
        kube_cluster.kubeconfig, shoot_cluster.kubeconfig, tmp_path / "garden", duration=0.3
    )
    kubeconfig = await simulator.start()
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"garden-{project}"}}
    async with await Cluster.connect(kube_cluster.kubeconfig) as cluster:
        await cluster.apply(namespace)
        client = KubeClient.from_kubeconfig(kubeconfig)
        try:
            yield Garden(
                simulator,
                Gardener(client, project, RateLimiter(None)),
                project,
                kubeconfig,
                shoot_cluster,
            )
        finally:
            await client.aclose()
            await simulator.stop()
            await cluster.delete(namespace)
