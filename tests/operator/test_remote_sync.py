"""Remote Kyma and catalog sync on two real apiservers: the remote cluster gets our CRDs, a
Kyma `kyma-system/default` whose modules remote users edit, the catalog of its channel and the
control plane's status; deleting the control-plane Kyma takes all of that away again."""

from __future__ import annotations

from typing import Any

from reconciler.model.lifecycle import API_VERSION, MANAGED_BY, module_object_name
from reconciler.operator.controllers.remote_merge import MAX_REMOTE_MODULES
from tests.operator import modules
from tests.operator.conftest import World
from tests.operator.remote import remote_kyma, remote_kyma_ready, set_remote_modules

CRDS = ("kymas.operator.kyma-project.io", "moduletemplates.operator.kyma-project.io")


async def _crd(world: World, name: str) -> dict[str, Any] | None:
    return await world.get(
        "CustomResourceDefinition",
        name,
        remote=True,
        namespace="",
        api_version="apiextensions.k8s.io/v1",
    )


async def _remote_templates(world: World) -> set[str]:
    info = await world.remote.mapper.resolve(API_VERSION, "ModuleTemplate")
    return {t.name for t in await world.remote.list(info, namespace="kyma-system")}


async def test_the_remote_cluster_gets_our_crds_a_kyma_and_the_catalog_of_its_channel(
    world: World,
) -> None:
    await remote_kyma_ready(world, "r1", [])
    for name in CRDS:
        crd = await _crd(world, name)
        assert crd is not None
        assert crd["metadata"]["labels"][MANAGED_BY] == "kyma-operator"
    mirror = await remote_kyma(world)
    assert mirror is not None
    assert mirror["spec"]["channel"] == "regular"
    assert mirror["metadata"]["annotations"]["operator.kyma-project.io/owner"] == (
        f"{world.namespace}/r1"
    )

    async def regular_catalog() -> bool:
        return await _remote_templates(world) == {"alpha-1.0.0", "beta-1.0.0"}

    await world.until(regular_catalog, "alpha 1.0.0 and beta 1.0.0 offered remotely")
    await world.control.apply(modules.kyma(world.namespace, "r1", "fast", []))

    async def fast_catalog() -> bool:
        return await _remote_templates(world) == {"alpha-1.1.0", "beta-1.0.0"}

    await world.until(fast_catalog, "alpha 1.1.0 instead of 1.0.0 once the channel is fast")

    async def mirrored() -> bool:
        status = ((await remote_kyma(world)) or {}).get("status") or {}
        return status.get("state") == "Ready" and status.get("activeChannel") == "fast"

    await world.until(mirrored, "the control plane's status mirrored to the remote Kyma")


async def test_a_module_a_remote_user_adds_is_installed_and_pruned_when_removed(
    world: World,
) -> None:
    await remote_kyma_ready(world, "r2", [{"name": "alpha", "managed": True}])
    await world.kyma_state("r2", "Ready")
    # beta is the remote user's; alpha is the platform's already and stays the platform's
    await set_remote_modules(world.remote, [{"name": "beta"}, {"name": "alpha"}])

    async def installed() -> dict[str, Any] | None:
        status = ((await remote_kyma(world)) or {}).get("status") or {}
        states = {m["name"]: m["state"] for m in status.get("modules") or []}
        beta = await world.remote_configmap("beta-a")
        done = status.get("state") == "Ready" and states == {"alpha": "Ready", "beta": "Ready"}
        return beta if done else None

    assert await world.until(installed, "beta installed remotely, the remote Kyma Ready")
    kyma = await world.get("Kyma", "r2")
    assert kyma is not None
    assert [m["name"] for m in kyma["spec"]["modules"]] == ["alpha", "beta"]
    annotations = kyma["metadata"]["annotations"]
    assert annotations["operator.kyma-project.io/remote-modules"] == '["beta"]'

    await set_remote_modules(world.remote, [])

    async def pruned() -> bool:
        status = ((await remote_kyma(world)) or {}).get("status") or {}
        names = [m["name"] for m in status.get("modules") or []]
        gone = await world.remote_configmap("beta-a") is None
        return gone and names == ["alpha"] and status.get("state") == "Ready"

    await world.until(pruned, "beta pruned remotely; alpha, the platform's, kept")
    kyma = await world.get("Kyma", "r2")
    assert kyma is not None
    assert [m["name"] for m in kyma["spec"]["modules"]] == ["alpha"]
    assert await world.remote_configmap("alpha-a") is not None


async def test_deleting_the_kyma_removes_the_remote_kyma_catalog_and_crds(world: World) -> None:
    await remote_kyma_ready(world, "r3", [])
    await world.until(_remote_templates_present(world), "the catalog copied")
    await world.control.delete(
        {
            "apiVersion": API_VERSION,
            "kind": "Kyma",
            "metadata": {"name": "r3", "namespace": world.namespace},
        }
    )

    async def all_gone() -> bool:
        crds = [await _crd(world, name) for name in CRDS]
        return crds == [None, None] and await world.get("Kyma", "r3") is None

    await world.until(all_gone, "our CRDs gone from the remote cluster and the Kyma deleted")


def _remote_templates_present(world: World) -> Any:
    async def check() -> bool:
        return bool(await _remote_templates(world))

    return check


async def test_a_beta_module_is_refused_to_an_unlabelled_kyma_and_not_offered_remotely(
    world: World,
) -> None:
    await world.catalog()
    flagged = modules.release_meta(world.namespace, "beta", {"regular": "1.0.0"})
    flagged["spec"]["beta"] = True
    await world.control.apply(flagged)
    await world.control.apply(
        modules.kubeconfig_secret(world.namespace, "r9", world.remote_kubeconfig)
    )
    await world.control.apply(
        modules.kyma(world.namespace, "r9", "regular", [{"name": "beta", "managed": True}])
    )

    kyma = await world.kyma_state("r9", "Error")
    (module,) = kyma["status"]["modules"]
    assert module["state"] == "Error"
    assert module["message"] == (
        "module beta is beta: offered only to Kymas labelled operator.kyma-project.io/beta=true"
    )
    assert await world.get("Manifest", module_object_name("r9", "beta")) is None

    await world.until(lambda: remote_kyma(world), "the remote Kyma kyma-system/default")

    async def catalog_without_beta() -> bool:
        return await _remote_templates(world) == {"alpha-1.0.0"}

    await world.until(catalog_without_beta, "only alpha offered remotely")


async def test_a_remote_admin_cannot_grow_the_control_plane_kyma_past_the_cap(
    world: World,
) -> None:
    """Issue 26 item 19: 2,500 remote entries used to be copied whole into the control-plane
    Kyma (1.36 MB, near etcd's limit). Only the first MAX_REMOTE_MODULES are taken, and the
    remote Kyma's status says what was left out."""
    await remote_kyma_ready(world, "r9", [])
    entries = [{"name": f"m{index}"} for index in range(MAX_REMOTE_MODULES + 50)]
    await set_remote_modules(world.remote, entries)

    async def capped() -> list[str] | None:
        kyma = await world.get("Kyma", "r9")
        names = [m["name"] for m in ((kyma or {}).get("spec") or {}).get("modules") or []]
        return names if names else None

    names = await world.until(capped, "remote entries merged into the control-plane Kyma")
    assert names == [f"m{index}" for index in range(MAX_REMOTE_MODULES)]

    async def reported() -> str | None:
        status = ((await remote_kyma(world)) or {}).get("status") or {}
        found = [c for c in status.get("conditions") or [] if c.get("type") == "RemoteModules"]
        return found[0]["message"] if found else None

    message = await world.until(reported, "the remote Kyma's RemoteModules condition")
    assert f"{MAX_REMOTE_MODULES + 50} entries, more than {MAX_REMOTE_MODULES}" in message
