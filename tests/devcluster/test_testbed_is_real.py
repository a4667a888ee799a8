"""The test bed is a real control plane and a real database, not a stand-in."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest
from lightkube import AsyncClient, KubeConfig
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import ConfigMap, Namespace

from reconciler.devcluster import PostgresServer
from reconciler.util.polling import poll_until
from tests.conftest import ClusterFactory

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.testbed.example.com"},
    "spec": {
        "group": "testbed.example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}
                        },
                    }
                },
            }
        ],
    },
}


def deployment(namespace: str) -> Deployment:
    labels = {"app": "web"}
    return Deployment.from_dict(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [
                            {
                                "name": "web",
                                "image": "nginx:1.25",
                                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            }
                        ]
                    },
                },
            },
        }
    )


async def test_custom_resource_of_a_new_crd_can_be_created(
    kube_client: AsyncClient, namespace: str
) -> None:
    await kube_client.apply(
        CustomResourceDefinition.from_dict(WIDGET_CRD), field_manager="test", force=True
    )

    async def established() -> bool:
        crd = await kube_client.get(CustomResourceDefinition, "widgets.testbed.example.com")
        conditions = crd.status.conditions if crd.status else None
        return any(c.type == "Established" and c.status == "True" for c in conditions or [])

    await poll_until(established, timeout=30, what="CRD widgets to be Established")
    widget_cls = create_namespaced_resource("testbed.example.com", "v1", "Widget", "widgets")
    await kube_client.create(
        widget_cls(metadata=ObjectMeta(name="w1"), spec={"size": 3}), namespace=namespace
    )
    stored = await kube_client.get(widget_cls, "w1", namespace=namespace)
    assert stored["spec"] == {"size": 3}


async def test_second_server_side_apply_changes_no_resource_version(
    kube_client: AsyncClient, namespace: str
) -> None:
    await kube_client.apply(deployment(namespace), field_manager="test", force=True)

    # The controller-manager is real: its controllers create the ReplicaSet and Pods and write
    # the Deployment's status (which bumps resourceVersion), so wait until that has settled.
    async def settled() -> bool:
        live = await kube_client.get(Deployment, "web", namespace=namespace)
        return bool(live.status and live.status.observedGeneration == 1 and live.status.replicas)

    await poll_until(settled, timeout=30, what="the deployment controller to observe web")
    first = await kube_client.apply(deployment(namespace), field_manager="test", force=True)
    second = await kube_client.apply(deployment(namespace), field_manager="test", force=True)
    assert first.metadata is not None
    assert second.metadata is not None
    assert first.metadata.resourceVersion == second.metadata.resourceVersion


async def test_watch_delivers_the_event_of_a_new_object(
    kube_client: AsyncClient, namespace: str
) -> None:
    async def first_added() -> str:
        async for event, obj in kube_client.watch(ConfigMap, namespace=namespace):
            assert obj.metadata is not None
            if event == "ADDED" and obj.metadata.name == "watched":
                return event
        raise AssertionError("watch ended")

    watcher = asyncio.create_task(first_added())
    await kube_client.create(
        ConfigMap(metadata=ObjectMeta(name="watched"), data={"a": "b"}), namespace=namespace
    )
    assert await asyncio.wait_for(watcher, timeout=30) == "ADDED"


async def test_deleted_namespace_disappears(kube_client: AsyncClient) -> None:
    await kube_client.create(Namespace(metadata=ObjectMeta(name="doomed")))
    await kube_client.create(
        ConfigMap(metadata=ObjectMeta(name="content"), data={}), namespace="doomed"
    )
    await kube_client.delete(Namespace, "doomed")

    async def gone() -> bool:
        names = [ns.metadata.name async for ns in kube_client.list(Namespace) if ns.metadata]
        return "doomed" not in names

    # only the controller-manager's namespace controller finalizes a namespace
    await poll_until(gone, timeout=60, what="namespace doomed to be finalized")


async def test_extra_clusters_are_independent(
    kube_client: AsyncClient, cluster_factory: ClusterFactory
) -> None:
    other = await cluster_factory()
    other_client = AsyncClient(config=KubeConfig.from_file(other.kubeconfig))
    try:
        await other_client.create(Namespace(metadata=ObjectMeta(name="only-in-other")))
        with pytest.raises(Exception, match="not found"):
            await kube_client.get(Namespace, "only-in-other")
        assert (await other_client.get(Namespace, "only-in-other")).metadata is not None
    finally:
        await other_client.close()


async def test_postgres_round_trip(postgres_server: PostgresServer, postgres_url: str) -> None:
    dsn = postgres_url.replace("postgresql+asyncpg", "postgresql")
    connection = await asyncpg.connect(dsn)
    try:
        await connection.execute("CREATE TABLE t (id serial PRIMARY KEY, v text)")
        await connection.execute("INSERT INTO t (v) VALUES ($1)", "hello")
        assert await connection.fetchval("SELECT v FROM t") == "hello"
        assert "PostgreSQL" in await connection.fetchval("SELECT version()")
    finally:
        await connection.close()
