"""`helm.sh/resource-policy: keep` in `delete_objects`: what a kept object takes with it (its
namespace, a CRD's custom resources) stays too, and the warnings say why."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from reconciler.kube.apply import apply_objects
from reconciler.kube.cluster import Cluster
from reconciler.kube.delete import delete_objects, keeps
from reconciler.model.kube_object import KubeObject
from tests.conftest import KubeTarget

KEEP = {"helm.sh/resource-policy": "keep"}


@pytest.fixture
async def cluster(kube_cluster: KubeTarget) -> AsyncIterator[Cluster]:
    async with await Cluster.connect(kube_cluster.kubeconfig) as connected:
        yield connected


def obj(api_version: str, kind: str, name: str, namespace: str = "", **extra: Any) -> KubeObject:
    meta: dict[str, Any] = {"name": name, **({"namespace": namespace} if namespace else {})}
    if "annotations" in extra:
        meta["annotations"] = extra.pop("annotations")
    return KubeObject({"apiVersion": api_version, "kind": kind, "metadata": meta, **extra})


def test_the_policy_value_is_read_as_helm_uninstall_reads_it() -> None:
    assert keeps(obj("v1", "ConfigMap", "a", annotations={"helm.sh/resource-policy": " Keep "}))
    assert not keeps(obj("v1", "ConfigMap", "a", annotations={"helm.sh/resource-policy": "no"}))
    assert not keeps(obj("v1", "ConfigMap", "a"))


async def test_a_namespace_holding_a_kept_object_is_kept(cluster: Cluster) -> None:
    name = f"kept-{uuid.uuid4().hex[:8]}"
    ns = obj("v1", "Namespace", name)
    kept = obj("v1", "ConfigMap", "kept", name, annotations=KEEP)
    gone = obj("v1", "ConfigMap", "gone", name)
    for each in (ns, kept, gone):
        await cluster.apply(each)
    phases: list[str] = []
    warnings: list[str] = []

    deleted = await delete_objects(
        cluster,
        [ns, kept, gone],
        component="c",
        timeout=30,
        on_phase=phases.append,
        warnings=warnings,
    )

    assert [o.name for o in deleted] == ["gone"]
    assert await cluster.get(kept) is not None
    assert await cluster.get(ns) is not None
    assert phases[0] == "keeping 1 objects (helm.sh/resource-policy: keep)"
    assert warnings[0] == f"configmap {name}/kept kept: annotated helm.sh/resource-policy: keep"
    assert f"namespace {name} kept" in warnings[1]
    assert f"configmap {name}/kept (kept)" in warnings[1]
    await cluster.delete(ns)


async def test_a_kept_crd_keeps_its_custom_resources(cluster: Cluster, namespace: str) -> None:
    group = f"k{uuid.uuid4().hex[:8]}.example.com"
    crd = obj(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        f"things.{group}",
        annotations=KEEP,
        spec={
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": "Thing", "plural": "things"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        },
    )
    thing = obj(f"{group}/v1", "Thing", "one", namespace)
    await apply_objects(cluster, [crd, thing], before={})  # waits until the CRD is established

    deleted = await delete_objects(cluster, [crd], component="c", timeout=30)

    assert deleted == []
    assert await cluster.get(thing) is not None
    await cluster.delete(crd)


async def test_a_bare_reference_is_kept_when_the_live_object_says_keep(
    cluster: Cluster, namespace: str
) -> None:
    """An inventory entry the delete's render no longer produces (other values since the last
    apply): the live object's annotations decide, as Helm's last release manifest would."""
    await cluster.apply(obj("v1", "ConfigMap", "kept", namespace, annotations=KEEP))
    await cluster.apply(obj("v1", "ConfigMap", "gone", namespace))
    references = [obj("v1", "ConfigMap", name, namespace) for name in ("kept", "gone")]
    references.append(obj("example.com/v1", "Unserved", "nothing", namespace))

    deleted = await delete_objects(cluster, references, component="c", timeout=30)

    assert [o.name for o in deleted] == ["gone"]
    assert await cluster.get(references[0]) is not None
