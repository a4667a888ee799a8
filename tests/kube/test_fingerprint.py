"""The capabilities fingerprint: cheap, stable while nothing changes, moved by a new kind."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter

import pytest

from reconciler.errors import ApplyError
from reconciler.kube.cluster import Cluster
from reconciler.kube.discovery import RestMapper
from tests.conftest import KubeTarget
from tests.helpers.counting import RecordingKubeClient
from tests.helpers.crds import gadget_crd


async def test_fingerprint_is_stable_and_moves_when_a_crd_adds_a_kind(
    kube_cluster: KubeTarget,
) -> None:
    async with await Cluster.connect(kube_cluster.kubeconfig) as cluster:
        before = await RestMapper(cluster.client).fingerprint()
        assert await RestMapper(cluster.client).fingerprint() == before
        group = f"fp{uuid.uuid4().hex[:8]}.example.io"
        crd = gadget_crd(group)
        await cluster.apply(crd)
        try:
            assert await RestMapper(cluster.client).fingerprint() != before
        finally:
            await cluster.delete(crd)


async def test_concurrent_resolves_share_one_discovery_request_per_group_version(
    kube_cluster: KubeTarget,
) -> None:
    async with RecordingKubeClient.from_kubeconfig(kube_cluster.kubeconfig) as client:
        mapper = RestMapper(client)
        kinds = [("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("v1", "ConfigMap")]
        found = await asyncio.gather(*(mapper.resolve(*kind) for kind in kinds * 10))
        assert {info.plural for info in found} == {"deployments", "statefulsets", "configmaps"}
        paths = Counter(path for _, path in client.sent)
        assert paths["/apis/apps/v1"] == 1
        assert paths["/api/v1"] == 1


async def test_an_unserved_kind_refreshes_only_its_own_group(kube_cluster: KubeTarget) -> None:
    """The miss re-reads the served groups and that group, not every group version known."""
    async with RecordingKubeClient.from_kubeconfig(kube_cluster.kubeconfig) as client:
        mapper = RestMapper(client)
        await mapper.api_versions()
        assert ("GET", "/apis/batch/v1") in client.take()
        with pytest.raises(ApplyError, match="kind Gadget in apps/v1 is not served"):
            await mapper.resolve("apps/v1", "Gadget")
        again = {path for _, path in client.take()}
        assert again <= {"/api", "/apis", *(f"/apis/apps/{v}" for v in ("v1", "v1beta1"))}
        await mapper.resolve("batch/v1", "Job")
        assert client.take() == []
