"""The live index against the real apiserver: metadata-only reads of managed objects."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from reconciler.kube.cluster import Cluster
from reconciler.kube.live import LiveIndex, Observed, observe, signature
from reconciler.kube.transform import prepare
from reconciler.model.kube_object import KubeObject
from tests.conftest import KubeTarget


@pytest.fixture
async def cluster(kube_cluster: KubeTarget) -> AsyncIterator[Cluster]:
    async with await Cluster.connect(kube_cluster.kubeconfig) as connected:
        yield connected


def configmap(name: str, namespace: str) -> KubeObject:
    raw = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "1"}}
    ready, _ = prepare(
        KubeObject(raw), namespace=namespace, namespaced=True, version="1", component="live"
    )
    return ready


@pytest.mark.parametrize("shared", [True, False])
async def test_observes_what_exists_and_is_ours_and_nothing_of_empty_kinds(
    cluster: Cluster, namespace: str, shared: bool
) -> None:
    mine = await cluster.apply(configmap("mine", namespace))
    missing = configmap("missing", namespace)
    secret = KubeObject(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": namespace}}
    )
    found = await LiveIndex(shared=shared).observe(cluster, [mine, missing, secret], "live")
    assert found == {mine.key: observe(mine)}
    assert await LiveIndex(shared=shared).observe(cluster, [mine], "someone-else") == {}


async def test_signature_moves_when_someone_else_takes_a_field_over(
    cluster: Cluster, namespace: str
) -> None:
    applied = await cluster.apply(configmap("taken", namespace))
    await cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "taken", "namespace": namespace},
            "data": {"a": "2"},
        },
        field_manager="someone-else",
    )
    (now,) = (await LiveIndex(shared=False).observe(cluster, [applied], "live")).values()
    assert now.resource_version != observe(applied).resource_version
    assert now.signature != observe(applied).signature


def listed_metadata(resource_version: str, fields: dict[str, object]) -> dict[str, object]:
    entry = {"manager": "reconciler", "operation": "Apply", "apiVersion": "v1", "fieldsV1": fields}
    return {"uid": "u1", "resourceVersion": resource_version, "managedFields": [entry]}


def test_an_object_whose_resource_version_did_not_move_is_not_digested() -> None:
    """A no-op compares resourceVersions first: the fields are digested only when it moved
    (fields that cannot be encoded would fail the digest, so passing proves it never ran)."""
    undigestable = Observed("7", metadata=listed_metadata("7", {"f:data": object()}))
    assert undigestable.same_as("7", "any-recorded-signature")
    with pytest.raises(TypeError):
        undigestable.same_as("8", "any-recorded-signature")


def test_a_lazy_signature_equals_the_recorded_one() -> None:
    meta = listed_metadata("7", {"f:data": {"f:a": {}}})
    lazy = Observed("7", metadata=meta)
    assert lazy.signature == signature(meta)
    assert lazy == Observed("7", signature(meta))
    assert lazy.same_as("9", signature(meta))  # moved, same fields: status writes, no drift
    assert not Observed("9", metadata=meta).same_as("7", "another-signature")


async def test_a_run_in_few_namespaces_lists_only_those(
    cluster: Cluster, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shared index of a run in few namespaces reads those namespaces only: 1,000 simulated
    clusters on one apiserver each read all 1,000 clusters' objects (16 GiB at 500 runs)."""
    mine = await cluster.apply(configmap("mine", namespace))
    paths: list[str] = []
    request = cluster.client.request

    async def recording(method: str, path: str, **kwargs: Any) -> Any:
        paths.append(path)
        return await request(method, path, **kwargs)

    monkeypatch.setattr(cluster.client, "request", recording)
    scoped = LiveIndex(namespaces={namespace})
    assert await scoped.observe(cluster, [mine], "live") == {mine.key: observe(mine)}
    await scoped.record(cluster, configmap("record", namespace))
    listed = [path for path in paths if path.endswith("/configmaps")]
    assert listed == [f"/api/v1/namespaces/{namespace}/configmaps"] * 2, paths

    paths.clear()  # a run in many namespaces: one cluster-wide listing per kind
    wide = LiveIndex(namespaces={namespace, "a", "b", "c"})
    assert await wide.observe(cluster, [mine], "live") == {mine.key: observe(mine)}
    assert [path for path in paths if path.endswith("/configmaps")] == ["/api/v1/configmaps"]
