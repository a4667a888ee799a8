"""Remote connections are per cluster, not per Kyma: a fleet of Kymas on one cluster shares one."""

from __future__ import annotations

import base64

from reconciler.kube.cluster import Cluster
from reconciler.operator.clusters.control import ControlPlane
from reconciler.operator.clusters.targets import TargetClusters
from tests.conftest import KubeTarget
from tests.operator import modules


async def test_kymas_on_one_cluster_share_one_connection_until_it_fails(
    kube_cluster: KubeTarget, namespace: str
) -> None:
    async with await Cluster.connect(kube_cluster.kubeconfig) as control:
        for kyma in ("k1", "k2", "k3"):  # the test-bed cluster stands in for the remote one
            await control.apply(modules.kubeconfig_secret(namespace, kyma, kube_cluster.kubeconfig))
        targets = TargetClusters(ControlPlane(control), control)
        try:
            first = await targets.get(namespace, "k1", remote=True)
            assert await targets.get(namespace, "k2", remote=True) is first
            assert await targets.get(namespace, "k3", remote=True) is first
            assert len(targets) == 1

            # k3 moves to other credentials (same server here): a connection of its own
            other = modules.kubeconfig_secret(namespace, "k3", kube_cluster.kubeconfig)
            text = base64.b64decode(other["data"]["config"]) + b"\n# rotated\n"
            other["data"]["config"] = base64.b64encode(text).decode()
            await control.apply(other)
            third = await targets.get(namespace, "k3", remote=True)
            assert third is not first
            assert len(targets) == 2

            # a connection error drops the shared connection for every Kyma using it
            await targets.evict(namespace, "k1")
            assert len(targets) == 1
            again = await targets.get(namespace, "k2", remote=True)
            assert again is not first
            assert await targets.get(namespace, "k1", remote=True) is again
            assert await again.version()
        finally:
            await targets.aclose()
        assert len(targets) == 0
