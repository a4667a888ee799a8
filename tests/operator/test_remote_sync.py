"""Remote Kyma and catalog sync on two real apiservers: the remote cluster gets our CRDs, a
Kyma `kyma-system/default` whose modules remote users edit, the catalog of its channel and the
control plane's status; deleting the control-plane Kyma takes all of that away again."""

from __future__ import annotations

from typing import Any

from reconciler.model.lifecycle import API_VERSION, MANAGED_BY, module_object_name
from reconciler.operator.controllers.remote_merge import MAX_REMOTE_MODULES
from tests.operator import modules
from tests.operator.conftest import World
from tests.operator.remote import (
    KYMAS,
    MERGE,
    remote_kyma,
    remote_kyma_ready,
    set_remote_modules,
)

CRDS = (
    "kymas.operator.kyma-project.io",
    "moduletemplates.operator.kyma-project.io",
    "modulereleasemetas.operator.kyma-project.io",
)


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

    async def catalog() -> bool:
        return await _remote_templates(world) == {"alpha-1.0.0", "alpha-1.1.0", "beta-1.0.0"}

    await world.until(catalog, "every channel's templates offered remotely, as LM's sync")
    info = await world.remote.mapper.resolve(API_VERSION, "ModuleReleaseMeta")
    metas = {m.name: m.raw for m in await world.remote.list(info, namespace="kyma-system")}
    assert set(metas) == {"alpha", "beta"}
    assert metas["alpha"]["spec"]["channels"] == [
        {"channel": "regular", "version": "1.0.0"},
        {"channel": "fast", "version": "1.1.0"},
    ]
    # CRD defaults as the lifecycle manager's: stored objects read the same under both
    assert (metas["alpha"]["spec"]["beta"], metas["alpha"]["spec"]["internal"]) == (False, False)
    await world.control.apply(modules.kyma(world.namespace, "r1", "fast", [{"name": "beta"}]))
    kyma = await world.get("Kyma", "r1")
    assert kyma is not None
    assert kyma["spec"]["modules"] == [
        {"name": "beta", "managed": True, "customResourcePolicy": "CreateAndDelete"}
    ]

    async def pushed() -> bool:  # only the platform moved: the remote Kyma follows
        spec = ((await remote_kyma(world)) or {}).get("spec") or {}
        return spec.get("channel") == "fast" and [m["name"] for m in spec["modules"]] == ["beta"]

    await world.until(pushed, "the control plane's edit on the remote Kyma")

    async def mirrored() -> bool:
        status = ((await remote_kyma(world)) or {}).get("status") or {}
        return status.get("state") == "Ready" and status.get("activeChannel") == "fast"

    await world.until(mirrored, "the control plane's status mirrored to the remote Kyma")


async def test_the_skr_users_kyma_is_the_truth_adds_removes_and_switches_channel(
    world: World,
) -> None:
    """Issue 28 item 2, as the lifecycle manager's "replace spec": the remote Kyma starts with
    the control plane's spec, then the SKR user's module list and channel win; its status,
    labels and namespace read as the lifecycle manager writes them."""
    await world.catalog()
    shield = modules.module_chart(world.charts, "shield", "1.0.0", ["shield-a"])
    mandatory = modules.release_meta(world.namespace, "shield", {})
    mandatory["spec"]["mandatory"] = {"version": "1.0.0"}
    for extra in (modules.template(world.namespace, "shield", "1.0.0", shield), mandatory):
        await world.control.apply(extra)
    await world.control.apply(
        modules.kubeconfig_secret(world.namespace, "r2", world.remote_kubeconfig)
    )
    body = modules.kyma(world.namespace, "r2", "regular", [{"name": "alpha"}])
    body["metadata"]["labels"] = {
        "kyma-project.io/runtime-id": "rt-2",
        "kyma-project.io/global-account-id": "ga-2",
        "kyma-project.io/subaccount-id": "sa-2",
    }
    await world.control.apply(body)
    await world.kyma_state("r2", "Ready")
    # item 7: the mandatory module is installed though no Kyma lists it, labelled so, not in
    # the Kyma's status, not in the remote catalog (no user picks it)
    await world.until(lambda: world.remote_configmap("shield-a"), "the mandatory module")
    manifest = await world.get("Manifest", module_object_name("r2", "shield"))
    assert manifest is not None
    assert manifest["metadata"]["labels"]["operator.kyma-project.io/mandatory-module"] == "true"
    mirror = await world.until(lambda: remote_kyma(world), "the remote Kyma")
    assert [m["name"] for m in mirror["spec"]["modules"]] == ["alpha"]
    labels = mirror["metadata"]["labels"]
    assert labels["operator.kyma-project.io/watched-by"] == "kyma"
    assert labels["operator.kyma-project.io/managed-by"] == "kyma"
    assert labels["kyma-project.io/runtime-id"] == "rt-2"
    assert labels["kyma-project.io/global-account-id"] == "ga-2"
    assert labels["kyma-project.io/subaccount-id"] == "sa-2"
    namespace = await world.get(
        "Namespace", "kyma-system", remote=True, namespace="", api_version="v1"
    )
    assert namespace is not None
    assert {
        k: namespace["metadata"]["labels"].get(k)
        for k in (
            "istio-injection",
            "namespaces.warden.kyma-project.io/validate",
            "operator.kyma-project.io/managed-by",
        )
    } == {
        "istio-injection": "enabled",
        "namespaces.warden.kyma-project.io/validate": "enabled",
        "operator.kyma-project.io/managed-by": "kyma",
    }

    # the SKR user adds beta
    await set_remote_modules(world.remote, [{"name": "alpha"}, {"name": "beta"}])

    async def installed() -> dict[str, Any] | None:
        status = ((await remote_kyma(world)) or {}).get("status") or {}
        states = {m["name"]: m["state"] for m in status.get("modules") or []}
        beta = await world.remote_configmap("beta-a")
        done = status.get("state") == "Ready" and states == {"alpha": "Ready", "beta": "Ready"}
        return status if done and beta else None

    status = await world.until(installed, "beta installed remotely, the remote Kyma Ready")
    assert "shield-1.0.0" not in await _remote_templates(world)
    for module in status["modules"]:  # the SKR's view: its catalog copy, no Manifest
        assert module["template"]["metadata"]["namespace"] == "kyma-system"
        assert "manifest" not in module
    kyma = await world.get("Kyma", "r2")
    assert kyma is not None
    assert [m["name"] for m in kyma["spec"]["modules"]] == ["alpha", "beta"]

    # the SKR user removes alpha, the control plane's own entry: uninstalled all the same;
    # and switches to fast: beta (1.0.0 on fast too) stays
    await world.remote.client.request(
        "PATCH",
        f"{KYMAS}/default",
        body={"spec": {"channel": "fast", "modules": [{"name": "beta"}]}},
        content_type=MERGE,
    )

    async def replaced() -> bool:
        status = ((await remote_kyma(world)) or {}).get("status") or {}
        names = [m["name"] for m in status.get("modules") or []]
        gone = await world.remote_configmap("alpha-a") is None
        return gone and names == ["beta"] and status.get("activeChannel") == "fast"

    await world.until(replaced, "alpha uninstalled, the remote Kyma on fast")
    kyma = await world.get("Kyma", "r2")
    assert kyma is not None
    assert kyma["spec"]["channel"] == "fast"
    assert [m["name"] for m in kyma["spec"]["modules"]] == ["beta"]

    # the SKR user adds alpha back on fast: 1.1.0 (no alpha-b) is what fast offers
    await set_remote_modules(world.remote, [{"name": "beta"}, {"name": "alpha"}])

    async def fast_alpha() -> bool:
        status = ((await remote_kyma(world)) or {}).get("status") or {}
        versions = {m["name"]: (m.get("version"), m["state"]) for m in status.get("modules") or []}
        return versions.get("alpha") == ("1.1.0", "Ready")

    await world.until(fast_alpha, "alpha 1.1.0 from fast installed")
    assert await world.remote_configmap("alpha-b") is None
    # the SKR user lists the mandatory module unmanaged, then removes it: it stays managed
    await set_remote_modules(
        world.remote,
        [{"name": "beta"}, {"name": "alpha"}, {"name": "shield", "managed": False}],
    )

    async def listed() -> bool:
        status = ((await remote_kyma(world)) or {}).get("status") or {}
        states = {m["name"]: m["state"] for m in status.get("modules") or []}
        return states.get("shield") == "Ready"  # not Unmanaged

    await world.until(listed, "the listed mandatory module in the status")
    await set_remote_modules(world.remote, [{"name": "beta"}, {"name": "alpha"}])

    async def unlisted() -> bool:
        status = ((await remote_kyma(world)) or {}).get("status") or {}
        return [m["name"] for m in status.get("modules") or []] == ["beta", "alpha"]

    await world.until(unlisted, "the mandatory module unlisted")
    manifest = await world.get("Manifest", module_object_name("r2", "shield"))
    assert manifest is not None
    assert not manifest["metadata"].get("deletionTimestamp")
    assert "operator.kyma-project.io/unmanaged" not in manifest["metadata"]["labels"]
    assert manifest["metadata"]["labels"]["operator.kyma-project.io/mandatory-module"] == "true"
    assert await world.remote_configmap("shield-a") is not None
    mirror = await remote_kyma(world)
    assert mirror is not None
    assert mirror["spec"]["channel"] == "fast"  # never reverted


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
        return crds == [None, None, None] and await world.get("Kyma", "r3") is None

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
        return await _remote_templates(world) == {"alpha-1.0.0", "alpha-1.1.0"}

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
