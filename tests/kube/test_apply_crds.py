"""Applying CRDs with apply_objects, against the real test-bed apiserver."""

from __future__ import annotations

import uuid

from reconciler.kube.apply import apply_objects
from reconciler.kube.cluster import Cluster
from reconciler.kube.readiness import READY, readiness
from reconciler.model.kube_object import KubeObject
from reconciler.util.polling import poll_until
from tests.conftest import KubeTarget
from tests.helpers.counting import recording_cluster


def crd(group: str) -> KubeObject:
    return KubeObject(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{group}"},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [
                    {"name": "v1alpha1", "served": False, "storage": False, "schema": _schema()},
                    {"name": "v1", "served": True, "storage": True, "schema": _schema()},
                ],
            },
        }
    )


def _schema() -> dict[str, object]:
    return {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}


async def test_new_crds_are_warmed_with_one_list_each_and_established_ones_are_not(
    kube_cluster: KubeTarget,
) -> None:
    # the apiserver builds a CRD's serving state on the first request of its kind (under one
    # lock): a LIST right after Established moves that off the first applies of its objects
    cluster, client = await recording_cluster(kube_cluster)
    definition = crd(f"warm{uuid.uuid4().hex[:8]}.example.com")
    warm = ("GET", f"/apis/{definition.raw['spec']['group']}/v1/widgets")
    try:
        await apply_objects(cluster, [definition], before={})

        async def warmed() -> bool:
            return warm in client.sent

        await poll_until(warmed, timeout=10, what="the LIST that warms the new CRD")
        client.take()
        await apply_objects(cluster, [definition], before={})  # established already
        await cluster.aclose()  # lets no background request slip past the assertion
        assert warm not in client.take()
    finally:
        async with await Cluster.connect(kube_cluster.kubeconfig) as other:
            await other.delete(definition)


async def test_waiting_for_new_crds_to_be_established_watches_instead_of_polling(
    kube_cluster: KubeTarget,
) -> None:
    # polls back off (up to 2 s late, re-reading CRDs of hundreds of KB each time): a watch per
    # CRD hears Established at once and sends no GET of the CRD at all
    cluster, client = await recording_cluster(kube_cluster)
    definitions = [crd(f"est{uuid.uuid4().hex[:8]}.example.com") for _ in range(3)]
    try:
        async with cluster:
            result = await apply_objects(cluster, definitions, before={})
            sent = client.take()
            for definition in definitions:
                live = await cluster.get(definition)
                assert live is not None
                assert readiness(live) == READY
        assert len(result.live) == 3
        gets = [
            path
            for method, path in sent
            if method == "GET" and "/customresourcedefinitions/" in path
        ]
        assert gets == []
    finally:
        async with await Cluster.connect(kube_cluster.kubeconfig) as other:
            for definition in definitions:
                await other.delete(definition)


async def test_new_crds_refresh_the_discovery_of_their_group_only(kube_cluster: KubeTarget) -> None:
    # Helm's capabilities list every group version's kinds: a full discovery reset after each
    # CRD batch made the next render fetch every group version of the cluster again (~45)
    cluster, client = await recording_cluster(kube_cluster)
    definition = crd(f"disc{uuid.uuid4().hex[:8]}.example.com")
    group = definition.raw["spec"]["group"]
    try:
        async with cluster:
            before = await cluster.mapper.api_versions()
            await apply_objects(cluster, [definition], before={})
            client.take()
            after = await cluster.mapper.api_versions()
            warm = f"/apis/{group}/v1/widgets"  # the LIST that warms the CRD, not discovery
            discovery = [
                path
                for method, path in client.take()
                if method == "GET" and path not in ("/version", warm)
            ]
        # (its kinds may lag behind Established in discovery: resolve() re-asks for a kind)
        assert f"{group}/v1" in set(after) - set(before)
        assert {"/api", "/apis", f"/apis/{group}/v1"} <= set(discovery)
        # not exactly those 3: a group of an earlier test's CRD that is still being deleted may
        # be fetched again; without the group-only reset it was every group version (~40)
        assert len(discovery) < 10, discovery
    finally:
        async with await Cluster.connect(kube_cluster.kubeconfig) as other:
            await other.delete(definition)
