"""The capabilities fingerprint: cheap, stable while nothing changes, moved by a new kind."""

from __future__ import annotations

import uuid

from reconciler.kube.cluster import Cluster
from reconciler.kube.discovery import RestMapper
from tests.conftest import KubeTarget


async def test_fingerprint_is_stable_and_moves_when_a_crd_adds_a_kind(
    kube_cluster: KubeTarget,
) -> None:
    async with await Cluster.connect(kube_cluster.kubeconfig) as cluster:
        before = await RestMapper(cluster.client).fingerprint()
        assert await RestMapper(cluster.client).fingerprint() == before
        group = f"fp{uuid.uuid4().hex[:8]}.example.io"
        crd = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"gadgets.{group}"},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {"openAPIV3Schema": {"type": "object"}},
                    }
                ],
            },
        }
        await cluster.apply(crd)
        try:
            assert await RestMapper(cluster.client).fingerprint() != before
        finally:
            await cluster.delete(crd)
