"""Cluster clients are shared by the tasks of one process, discovery is not."""

from __future__ import annotations

import pytest

from reconciler.errors import ClusterUnreachable, KubeconfigError
from reconciler.kube.clients import ClientCache
from tests.conftest import KubeTarget
from tests.remote.test_client import UNREACHABLE


@pytest.fixture
def kubeconfig_text(kube_cluster: KubeTarget) -> str:
    return kube_cluster.kubeconfig.read_text()


async def test_tasks_for_one_cluster_share_a_client_but_not_discovery(
    kubeconfig_text: str,
) -> None:
    cache = ClientCache(idle_seconds=60)
    try:
        async with cache.cluster(kubeconfig_text) as first:
            await first.mapper.resolve("v1", "ConfigMap")
        async with cache.cluster(kubeconfig_text) as second:
            assert second.client is first.client
            assert second.mapper is not first.mapper
        assert len(cache) == 1
    finally:
        await cache.aclose()
    assert len(cache) == 0


async def test_idle_clients_are_closed_and_bad_kubeconfigs_cache_nothing(
    kubeconfig_text: str,
) -> None:
    cache = ClientCache(idle_seconds=0)
    try:
        async with cache.cluster(kubeconfig_text):
            assert len(cache) == 1
        assert len(cache) == 0
        with pytest.raises(KubeconfigError):
            async with cache.cluster("not: [a kubeconfig\n"):
                pass
        with pytest.raises(ClusterUnreachable):
            async with cache.cluster(UNREACHABLE):
                pass
        assert len(cache) == 0
    finally:
        await cache.aclose()
