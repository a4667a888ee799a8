"""The operator end to end on two real apiservers: the control plane (Kyma, catalog, Manifests)
and the remote cluster the modules go to."""

from __future__ import annotations

from typing import Any

from reconciler.model.lifecycle import (
    API_VERSION,
    KYMA_FINALIZER,
    MANIFEST_FINALIZER,
    module_object_name,
)
from tests.operator import modules
from tests.operator.conftest import World


async def test_kyma_installs_upgrades_prunes_and_removes_modules_on_the_remote_cluster(
    world: World,
) -> None:
    await world.catalog()
    await world.control.apply(
        modules.kubeconfig_secret(world.namespace, "k1", world.remote_kubeconfig)
    )
    spec_modules = [{"name": "alpha", "managed": True}, {"name": "beta", "managed": True}]
    await world.control.apply(modules.kyma(world.namespace, "k1", "regular", spec_modules))

    kyma = await world.kyma_state("k1", "Ready")
    status = kyma["status"]
    assert status["activeChannel"] == "regular"
    assert {m["name"]: (m["state"], m["version"]) for m in status["modules"]} == {
        "alpha": ("Ready", "1.0.0"),
        "beta": ("Ready", "1.0.0"),
    }
    assert KYMA_FINALIZER in kyma["metadata"]["finalizers"]
    manifest = await world.get("Manifest", module_object_name("k1", "alpha"))
    assert manifest is not None
    assert manifest["metadata"]["ownerReferences"][0]["name"] == "k1"
    assert manifest["metadata"]["labels"]["operator.kyma-project.io/module-name"] == "alpha"
    assert MANIFEST_FINALIZER in manifest["metadata"]["finalizers"]
    synced = {(s["kind"], s["name"]) for s in manifest["status"]["synced"]}
    assert {("ConfigMap", "alpha-a"), ("ConfigMap", "alpha-b")} <= synced
    # as the lifecycle manager writes them: "" for the core group and cluster-scoped objects
    entries = {(s["kind"], s["name"]): s for s in manifest["status"]["synced"]}
    assert entries["ConfigMap", "alpha-a"]["group"] == ""
    assert entries["ConfigMap", "alpha-a"]["namespace"] != ""
    crd = next(s for s in manifest["status"]["synced"] if s["kind"] == "CustomResourceDefinition")
    assert (crd["group"], crd["namespace"]) == ("apiextensions.k8s.io", "")
    assert await world.remote_configmap("alpha-b") is not None
    assert (
        await world.get(
            "Alpha",
            "default-alpha",
            remote=True,
            namespace="kyma-system",
            api_version=f"{modules.CRD_GROUP}/v1",
        )
        is not None
    )

    # channel switch: upgrade to 1.1.0, which no longer has alpha-b
    spec_modules[0]["channel"] = "fast"
    await world.control.apply(modules.kyma(world.namespace, "k1", "regular", spec_modules))

    async def upgraded() -> bool:
        cm = await world.remote_configmap("alpha-a")
        return bool(cm and cm["data"]["version"] == "1.1.0") and (
            await world.remote_configmap("alpha-b") is None
        )

    await world.until(upgraded, "alpha upgraded to 1.1.0, alpha-b pruned")
    await world.kyma_state("k1", "Ready")

    # a module removed from the Kyma: its Manifest and objects go
    await world.control.apply(modules.kyma(world.namespace, "k1", "regular", spec_modules[:1]))

    async def beta_gone() -> bool:
        return await world.get("Manifest", module_object_name("k1", "beta")) is None and (
            await world.remote_configmap("beta-a") is None
        )

    await world.until(beta_gone, "module beta removed")

    # the Kyma deleted: everything removed, finalizers done
    await world.control.delete(
        {
            "apiVersion": API_VERSION,
            "kind": "Kyma",
            "metadata": {"name": "k1", "namespace": world.namespace},
        }
    )

    async def all_gone() -> bool:
        return (
            await world.get("Kyma", "k1") is None
            and await world.get("Manifest", module_object_name("k1", "alpha")) is None
            and await world.remote_configmap("alpha-a") is None
        )

    await world.until(all_gone, "Kyma, Manifests and module objects removed")


async def test_missing_template_and_missing_secret_are_errors_that_recover_once_fixed(
    world: World,
) -> None:
    ns = world.namespace
    await world.control.apply(
        modules.kyma(ns, "k2", "regular", [{"name": "beta", "managed": True}])
    )
    kyma = await world.kyma_state("k2", "Error")
    assert "beta" in kyma["status"]["modules"][0]["message"]

    beta = modules.module_chart(world.charts, "beta", "1.0.0", ["beta-a"])
    await world.control.apply(modules.template(ns, "beta", "1.0.0", beta))
    await world.control.apply(modules.release_meta(ns, "beta", {"regular": "1.0.0"}))

    async def secret_missing() -> dict[str, Any] | None:
        manifest = await world.get("Manifest", module_object_name("k2", "beta"))
        status = (manifest or {}).get("status") or {}
        return manifest if status.get("state") == "Error" else None

    manifest = await world.until(secret_missing, "Manifest in Error without the Secret")
    assert (
        "no Secret labelled operator.kyma-project.io/kyma-name=k2"
        in (manifest["status"]["lastOperation"]["operation"])
    )
    await world.kyma_state("k2", "Error")

    await world.control.apply(modules.kubeconfig_secret(ns, "k2", world.remote_kubeconfig))
    await world.kyma_state("k2", "Ready")
    assert await world.remote_configmap("beta-a") is not None
