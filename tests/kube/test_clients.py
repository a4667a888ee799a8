"""Cluster clients and discovery are shared by the tasks of one process; each task still sees
the cluster as it is when it starts."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections import Counter

import pytest

from reconciler.errors import ClusterUnreachable, KubeconfigError
from reconciler.kube.client import KubeClient
from reconciler.kube.clients import ClientCache
from reconciler.kube.cluster import Cluster
from reconciler.util.polling import poll_until
from tests.conftest import KubeTarget
from tests.helpers.counting import RecordingKubeClient
from tests.helpers.crds import gadget_crd
from tests.remote.test_client import UNREACHABLE

GROUP_VERSION = re.compile(r"/api/v1|/apis/[^/]+/[^/]+")
"""A discovery request for one group version's kinds."""


@pytest.fixture
def kubeconfig_text(kube_cluster: KubeTarget) -> str:
    return kube_cluster.kubeconfig.read_text()


def discovery(client: RecordingKubeClient) -> list[str]:
    """The group-version discovery requests since the last call."""
    return [path for _, path in client.take() if GROUP_VERSION.fullmatch(path)]


async def test_tasks_for_one_cluster_share_its_client_and_discovery(
    kubeconfig_text: str,
) -> None:
    """A first install's `.Capabilities` used to read the whole discovery (one request per group
    version, ~37 on the test bed) in every task; the next task now reads only the version and
    the 4-request fingerprint, as long as that stands still (other tests on the shared test bed
    may be creating or deleting CRDs: then the discovery must be read again, and is)."""
    cache = ClientCache(idle_seconds=60, client_type=RecordingKubeClient)
    try:
        for _ in range(5):
            async with cache.cluster(kubeconfig_text) as first:
                assert isinstance(first.client, RecordingKubeClient)
                await first.mapper.api_versions()
                before = await first.mapper.fingerprint()
                discovery(first.client)
            async with cache.cluster(kubeconfig_text) as second:
                assert second.client is first.client
                assert second.mapper is first.mapper
                await second.mapper.api_versions()
                await second.mapper.resolve("apps/v1", "Deployment")
                after = await second.mapper.fingerprint()
                again = discovery(first.client)
            if before == after:
                assert again == []
                break
            assert again  # the cluster changed in between: read afresh
        else:
            pytest.fail("the test bed's capabilities never stood still for two tasks")
        assert len(cache) == 1
    finally:
        await cache.aclose()
    assert len(cache) == 0


async def test_a_crd_created_between_tasks_is_in_the_next_tasks_capabilities(
    kube_cluster: KubeTarget, kubeconfig_text: str
) -> None:
    """Shared discovery must never hide a kind that appeared before the task started, even
    when this process did not create it (another controller, a remote worker)."""
    group = f"share{uuid.uuid4().hex[:8]}.example.io"
    cache = ClientCache(idle_seconds=60)
    async with await Cluster.connect(kube_cluster.kubeconfig) as other:
        try:
            async with cache.cluster(kubeconfig_text) as cluster:
                assert f"{group}/v1/Gadget" not in await cluster.mapper.api_versions()
            await other.apply(gadget_crd(group))

            async def served() -> bool:
                return f"{group}/v1" in await Cluster(other.client).mapper.api_versions()

            await poll_until(served, timeout=30.0, what=f"{group}/v1 served", interval=0.2)
            async with cache.cluster(kubeconfig_text) as cluster:
                assert f"{group}/v1/Gadget" in await cluster.mapper.api_versions()
        finally:
            await other.delete(gadget_crd(group))
            await cache.aclose()


async def test_tasks_arriving_together_share_one_refresh(kubeconfig_text: str) -> None:
    cache = ClientCache(idle_seconds=60, client_type=RecordingKubeClient)

    async def task() -> None:
        async with cache.cluster(kubeconfig_text) as cluster:
            await cluster.mapper.api_versions()

    try:
        await task()
        async with cache.cluster(kubeconfig_text) as cluster:
            assert isinstance(cluster.client, RecordingKubeClient)
            cluster.client.take()
        await asyncio.gather(*(task() for _ in range(12)))
        sent = Counter(path for _, path in cluster.client.take())
        assert sent["/version"] <= 2  # the refresh running when they arrived, and one more
        assert sent["/apis/apiextensions.k8s.io/v1/customresourcedefinitions"] <= 2
    finally:
        await cache.aclose()


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


async def test_concurrent_requests_to_a_cluster_share_one_connection(
    kube_cluster: KubeTarget,
) -> None:
    """HTTP/2, as client-go speaks it: over HTTP/1.1 every concurrent request held a connection
    of its own (a TLS handshake each, and a pool that scanned all its idle connections for
    every request: the largest CPU cost of a mothership sweep in the profile)."""
    async with KubeClient.from_kubeconfig(kube_cluster.kubeconfig) as client:
        await asyncio.gather(*(client.request("GET", "/api/v1/namespaces") for _ in range(32)))
        pool = client._http._transport._pool  # type: ignore[attr-defined]  # no public view
        assert len(pool.connections) == 1
