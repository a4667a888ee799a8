"""SyncResources on two real apiservers: a module manager's objects are applied to the Kyma's
remote cluster with per-object status, dropped ones pruned, refused content applies nothing."""

from __future__ import annotations

from typing import Any

from reconciler.model.lifecycle import API_VERSION
from tests.operator import modules
from tests.operator.conftest import World


def _configmap(name: str, namespace: str | None = None, **data: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def _sync_resource(world: World, name: str, objects: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "SyncResource",
        "metadata": {"name": name, "namespace": world.namespace},
        "spec": {"kyma": "s1", "module": "alpha", "objects": objects},
    }


async def _kyma(world: World) -> None:
    await world.control.apply(
        modules.kubeconfig_secret(world.namespace, "s1", world.remote_kubeconfig)
    )
    await world.control.apply(modules.kyma(world.namespace, "s1", "regular", []))


async def _state(world: World, name: str, state: str, generation: int) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        body = await world.get("SyncResource", name)
        status = (body or {}).get("status") or {}
        done = status.get("state") == state and status.get("observedGeneration") == generation
        return status if done else None

    result: dict[str, Any] = await world.until(check, f"SyncResource {name} {state}")
    return result


async def test_objects_are_applied_remotely_with_per_object_status_and_dropped_ones_pruned(
    world: World,
) -> None:
    await _kyma(world)
    objects = [_configmap("sync-a", greeting="hi"), _configmap("sync-b", "default", x="1")]
    await world.control.apply(_sync_resource(world, "alpha-sync", objects))
    status = await _state(world, "alpha-sync", "Ready", 1)
    assert [(o["name"], o.get("namespace"), o["state"]) for o in status["objects"]] == [
        ("sync-a", "kyma-system", "Applied"),
        ("sync-b", "default", "Applied"),
    ]
    applied = await world.remote_configmap("sync-a")
    assert applied is not None
    assert applied["data"] == {"greeting": "hi"}

    await world.control.apply(_sync_resource(world, "alpha-sync", objects[:1]))
    await _state(world, "alpha-sync", "Ready", 2)
    gone = await world.get(
        "ConfigMap", "sync-b", remote=True, namespace="default", api_version="v1"
    )
    assert gone is None

    await world.control.delete(_sync_resource(world, "alpha-sync", []))

    async def removed() -> bool:
        return (
            await world.get("SyncResource", "alpha-sync") is None
            and await world.remote_configmap("sync-a") is None
        )

    await world.until(removed, "the SyncResource and its object gone")


async def test_forbidden_content_is_refused_by_name_and_nothing_is_applied(world: World) -> None:
    await _kyma(world)
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "everything"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
    }
    objects = [_configmap("fine"), role, _configmap("sneaky", "kube-system")]
    await world.control.apply(_sync_resource(world, "bad-sync", objects))
    status = await _state(world, "bad-sync", "Error", 1)
    message = status["lastOperation"]["operation"]
    assert "spec.objects[1] (ClusterRole everything): kind ClusterRole is not allowed" in message
    assert "spec.objects[2] (ConfigMap sneaky): namespace kube-system is Kubernetes' own" in message
    assert await world.remote_configmap("fine") is None
