"""Cluster access against the real test-bed apiserver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reconciler.errors import ApplyError, ClusterUnreachable, KubeconfigError
from reconciler.kube.cluster import Cluster
from reconciler.kube.delete import delete_objects
from reconciler.model.kube_object import KubeObject
from tests.conftest import KubeTarget


@pytest.fixture
async def cluster(kube_cluster: KubeTarget) -> Any:
    async with await Cluster.connect(kube_cluster.kubeconfig) as connected:
        yield connected


def configmap(namespace: str, name: str = "cm", **data: str) -> KubeObject:
    return KubeObject(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            "data": data,
        }
    )


def big_crd(kilobytes: int) -> KubeObject:
    properties = {
        f"field{i:05d}": {"type": "string", "description": "x" * 1000} for i in range(kilobytes)
    }
    return KubeObject(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "bigs.test.example.com"},
            "spec": {
                "group": "test.example.com",
                "scope": "Namespaced",
                "names": {"plural": "bigs", "singular": "big", "kind": "Big"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "properties": {
                                    "spec": {"type": "object", "properties": properties}
                                },
                            }
                        },
                    }
                ],
            },
        }
    )


async def test_reapplying_an_unchanged_object_keeps_its_resource_version(
    cluster: Cluster, namespace: str
) -> None:
    first = await cluster.apply(configmap(namespace, a="1"))
    second = await cluster.apply(configmap(namespace, a="1"))
    assert first.metadata["resourceVersion"] == second.metadata["resourceVersion"]
    changed = await cluster.apply(configmap(namespace, a="2"))
    assert changed.metadata["resourceVersion"] != second.metadata["resourceVersion"]


async def test_crd_larger_than_256_kib_applies(cluster: Cluster) -> None:
    crd = big_crd(300)
    assert len(str(crd.raw)) > 256 * 1024
    live = await cluster.apply(crd)
    assert live.name == "bigs.test.example.com"
    assert "kubectl.kubernetes.io/last-applied-configuration" not in live.annotations
    await cluster.delete(crd)


async def test_unknown_kind_names_kind_and_served_versions(cluster: Cluster) -> None:
    unknown = KubeObject(
        {
            "apiVersion": "batch/v1",
            "kind": "NoSuchKind",
            "metadata": {"name": "x", "namespace": "default"},
        }
    )
    with pytest.raises(
        ApplyError, match=r"NoSuchKind in batch/v1 .* serves batch versions v1, .*none with kind"
    ):
        await cluster.apply(unknown)


async def test_kind_of_a_newer_kubernetes_names_the_version_the_cluster_serves_it_in(
    cluster: Cluster,
) -> None:
    cronjob = KubeObject(  # batch/v1 CronJob is Kubernetes 1.21+; the test bed is 1.20
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "x", "namespace": "default"},
        }
    )
    with pytest.raises(
        ApplyError, match=r"CronJob in batch/v1 is not .* serves CronJob in batch/v1beta1 \("
    ):
        await cluster.apply(cronjob)


async def test_rejected_object_names_the_object_and_the_reason(
    cluster: Cluster, namespace: str
) -> None:
    bad = configmap(namespace, name="Not_A_Valid_Name")
    with pytest.raises(ApplyError, match=r"configmap .*/Not_A_Valid_Name: rejected .*Invalid"):
        await cluster.apply(bad)


async def test_namespace_holding_foreign_objects_is_kept(cluster: Cluster) -> None:
    ns = KubeObject({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shared-ns"}})
    ours = configmap("shared-ns", name="ours")
    foreign = configmap("shared-ns", name="someone-elses")
    for obj in (ns, ours, foreign):
        await cluster.apply(obj)
    warnings: list[str] = []
    deleted = await delete_objects(
        cluster, [ours, ns], component="x", timeout=30, warnings=warnings
    )
    assert [o.name for o in deleted] == ["ours"]
    assert await cluster.get(ns) is not None
    assert "someone-elses" in warnings[0]
    await cluster.delete(ns)


async def test_malformed_kubeconfig_is_named_without_its_content(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nclusters: [\n  secret-token-abc\n")
    with pytest.raises(KubeconfigError, match="not valid YAML") as raised:
        await Cluster.connect(path)
    assert "secret-token-abc" not in str(raised.value)
    with pytest.raises(KubeconfigError, match="does not exist"):
        await Cluster.connect(tmp_path / "missing")


async def test_unreachable_apiserver_is_reported(kube_cluster: KubeTarget, tmp_path: Path) -> None:
    from reconciler.devcluster.ports import free_ports

    text = kube_cluster.kubeconfig.read_text()
    server = next(line.split()[-1] for line in text.splitlines() if "server:" in line)
    dead = tmp_path / "dead"
    dead.write_text(text.replace(server, f"https://127.0.0.1:{free_ports(1)[0]}"))
    with pytest.raises(ClusterUnreachable, match="cannot reach the apiserver"):
        await Cluster.connect(dead)
