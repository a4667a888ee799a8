"""SyncResources on two real apiservers: a module manager's objects are applied to the Kyma's
remote cluster with per-object status, dropped ones pruned, refused content applies nothing;
never to the control plane, never for a module the Kyma lacks, nothing that grants permissions,
nothing another component owns."""

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


def _sync_resource(
    world: World,
    name: str,
    objects: list[dict[str, Any]],
    kyma: str = "s1",
    module: str = "alpha",
) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "SyncResource",
        "metadata": {"name": name, "namespace": world.namespace},
        "spec": {"kyma": kyma, "module": module, "objects": objects},
    }


async def _kyma(world: World) -> None:
    await world.control.apply(
        modules.kubeconfig_secret(world.namespace, "s1", world.remote_kubeconfig)
    )
    await world.control.apply(modules.kyma(world.namespace, "s1", "regular", [{"name": "alpha"}]))


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


async def test_never_the_control_plane_nor_a_module_the_kyma_lacks(world: World) -> None:
    """Issue 26 item 4: a Kyma with sync "false" used to get the objects on the control plane
    (a kubeconfig Secret labelled for another Kyma), and any module name was accepted."""
    await _kyma(world)
    local = modules.kyma(world.namespace, "local", "regular", [{"name": "alpha"}])
    local["metadata"]["labels"] = {"operator.kyma-project.io/sync": "false"}
    await world.control.apply(local)
    planted = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "kubeconfig-victim",
            "namespace": world.namespace,
            "labels": {"operator.kyma-project.io/kyma-name": "victim"},
        },
        "stringData": {"config": "apiVersion: v1"},
    }
    await world.control.apply(_sync_resource(world, "to-control", [planted], kyma="local"))
    await world.control.apply(
        _sync_resource(world, "other-module", [_configmap("gamma-cm")], module="gamma")
    )
    status = await _state(world, "to-control", "Error", 1)
    assert "never to the control plane" in status["lastOperation"]["operation"]
    status = await _state(world, "other-module", "Error", 1)
    assert "Kyma s1 has no module gamma" in status["lastOperation"]["operation"]
    assert await world.get("Secret", "kubeconfig-victim", api_version="v1") is None
    assert await world.remote_configmap("gamma-cm") is None


async def test_nothing_that_grants_permissions_is_applied(world: World) -> None:
    """Issue 26 item 5: a privileged hostPath DaemonSet running as a cluster-admin
    ServiceAccount and a service-account-token Secret used to be applied."""
    await _kyma(world)
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "node-agent"},
        "spec": {
            "selector": {"matchLabels": {"app": "a"}},
            "template": {
                "metadata": {"labels": {"app": "a"}},
                "spec": {
                    "serviceAccountName": "cluster-admin-sa",
                    "hostPID": True,
                    "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
                    "containers": [
                        {
                            "name": "agent",
                            "image": "busybox",
                            "securityContext": {"privileged": True},
                        }
                    ],
                },
            },
        },
    }
    token = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/service-account-token",
        "metadata": {
            "name": "admin-token",
            "annotations": {"kubernetes.io/service-account.name": "cluster-admin-sa"},
        },
    }
    objects = [_configmap("fine"), daemonset, token]
    await world.control.apply(_sync_resource(world, "privileged", objects))
    status = await _state(world, "privileged", "Error", 1)
    message = status["lastOperation"]["operation"]
    where = "spec.objects[1] (DaemonSet node-agent)"
    for rule in (
        "container agent: privileged containers are not allowed",
        "hostPID is not allowed",
        "hostPath volume root is not allowed",
        "serviceAccountName cluster-admin-sa is neither default nor created by this",
    ):
        assert f"{where}: {rule}" in message or f"{where} {rule}" in message, rule
    assert (
        "spec.objects[2] (Secret admin-token): Secrets of type "
        "kubernetes.io/service-account-token are not allowed" in message
    )
    assert await world.remote_configmap("fine") is None


async def test_another_components_object_is_refused_and_never_deleted(world: World) -> None:
    """Issue 26 item 6: a SyncResource listing the watcher's TLS Secret took it over (blanked
    it) and deleted it with itself."""
    await _kyma(world)
    await world.remote.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kyma-system"}}
    )
    tls = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "watcher-tls",
            "namespace": "kyma-system",
            "labels": {"reconciler.kyma-project.io/component": "watcher"},
        },
        "data": {"tls.crt": "Y2VydA=="},
    }
    await world.remote.apply(tls)
    blank = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "watcher-tls"}}
    await world.control.apply(_sync_resource(world, "grab", [_configmap("mine"), blank]))
    status = await _state(world, "grab", "Error", 1)
    message = status["lastOperation"]["operation"]
    assert "secret kyma-system/watcher-tls: exists and belongs to component watcher" in message
    assert await world.remote_configmap("mine") is None

    await world.control.delete(_sync_resource(world, "grab", []))

    async def removed() -> bool:
        return await world.get("SyncResource", "grab") is None

    await world.until(removed, "the SyncResource gone")
    live = await world.get(
        "Secret", "watcher-tls", remote=True, namespace="kyma-system", api_version="v1"
    )
    assert live is not None
    assert live["data"] == {"tls.crt": "Y2VydA=="}
