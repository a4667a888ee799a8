"""Module lifecycle rules of the Kyma and Manifest controllers on two real apiservers:
unmanaged modules stay, downgrades are refused, custom resources left behind block deletion."""

from __future__ import annotations

from typing import Any

from reconciler.model.lifecycle import API_VERSION, module_object_name
from tests.operator import modules
from tests.operator.conftest import World


async def _kyma_ready(world: World, name: str, spec_modules: list[dict[str, Any]]) -> None:
    await world.catalog()
    await world.control.apply(
        modules.kubeconfig_secret(world.namespace, name, world.remote_kubeconfig)
    )
    await world.control.apply(modules.kyma(world.namespace, name, "regular", spec_modules))
    await world.kyma_state(name, "Ready")


async def test_an_unmanaged_module_loses_its_manifest_but_stays_installed(world: World) -> None:
    await _kyma_ready(world, "k3", [{"name": "beta", "managed": True}])
    await world.control.apply(
        modules.kyma(world.namespace, "k3", "regular", [{"name": "beta", "managed": False}])
    )

    async def released() -> bool:
        kyma = await world.get("Kyma", "k3")
        states = [m["state"] for m in ((kyma or {}).get("status") or {}).get("modules", [])]
        return (
            states == ["Unmanaged"]
            and await world.get("Manifest", module_object_name("k3", "beta")) is None
        )

    await world.until(released, "beta Unmanaged and its Manifest gone")
    await world.kyma_state("k3", "Ready")
    assert await world.remote_configmap("beta-a") is not None


async def test_a_channel_that_would_downgrade_is_refused_with_both_versions(world: World) -> None:
    await _kyma_ready(world, "k4", [{"name": "alpha", "managed": True, "channel": "fast"}])
    await world.control.apply(
        modules.kyma(world.namespace, "k4", "regular", [{"name": "alpha", "managed": True}])
    )
    kyma = await world.kyma_state("k4", "Error")
    message = kyma["status"]["modules"][0]["message"]
    assert "offers 1.0.0, older than the installed 1.1.0; downgrades are refused" in message
    configmap = await world.remote_configmap("alpha-a")
    assert configmap is not None
    assert configmap["data"]["version"] == "1.1.0"


async def test_custom_resources_left_behind_block_deletion_and_are_named(world: World) -> None:
    await _kyma_ready(world, "k5", [{"name": "alpha", "managed": True}])
    mine = {
        "apiVersion": f"{modules.CRD_GROUP}/v1",
        "kind": "Alpha",
        "metadata": {"name": "mine", "namespace": "default"},
    }
    await world.remote.apply(mine)
    await world.control.delete(
        {
            "apiVersion": API_VERSION,
            "kind": "Kyma",
            "metadata": {"name": "k5", "namespace": world.namespace},
        }
    )

    async def blocked() -> str | None:
        manifest = await world.get("Manifest", module_object_name("k5", "alpha"))
        status = (manifest or {}).get("status") or {}
        message = str((status.get("lastOperation") or {}).get("operation", ""))
        return (
            message
            if status.get("state") == "Deleting" and "Alpha default/mine" in message
            else None
        )

    message = await world.until(blocked, "deletion blocked by Alpha default/mine")
    assert message.startswith("waiting for module crs deletion")  # the lifecycle manager's
    assert (
        await world.get(
            "Alpha",
            "default-alpha",
            remote=True,
            namespace="kyma-system",
            api_version=f"{modules.CRD_GROUP}/v1",
        )
        is not None
    )  # as the lifecycle manager: nothing is removed while the module's CRs block
    await world.remote.delete(mine)

    async def gone() -> bool:
        return (
            await world.get("Kyma", "k5") is None
            and await world.remote_configmap("alpha-a") is None
        )

    await world.until(gone, "Kyma and module removed once the custom resource is gone")


async def test_an_unreachable_remote_is_an_error_until_the_secret_is_fixed(world: World) -> None:
    await world.catalog()
    good = modules.kubeconfig_secret(world.namespace, "k6", world.remote_kubeconfig)
    text = world.remote_kubeconfig.read_text()
    server = next(
        line.split("server:")[1].strip() for line in text.splitlines() if "server:" in line
    )
    unreachable = world.remote_kubeconfig.parent / "unreachable.kubeconfig"
    unreachable.write_text(text.replace(server, "https://127.0.0.1:1"))
    await world.control.apply(modules.kubeconfig_secret(world.namespace, "k6", unreachable))
    await world.control.apply(
        modules.kyma(world.namespace, "k6", "regular", [{"name": "beta", "managed": True}])
    )
    kyma = await world.kyma_state("k6", "Error")
    assert (
        "cannot reach the apiserver at https://127.0.0.1:1"
        in kyma["status"]["modules"][0]["message"]
    )
    assert "client-key-data" not in str(kyma["status"])

    await world.control.apply(good)  # the Secret changed: the next attempt uses it at once
    await world.kyma_state("k6", "Ready")
    assert await world.remote_configmap("beta-a") is not None


async def test_the_skip_label_stops_reconciliation_of_a_kyma(world: World) -> None:
    await _kyma_ready(world, "k7", [{"name": "beta", "managed": True}])
    skipped = modules.kyma(world.namespace, "k7", "regular", [])
    skipped["metadata"]["labels"] = {"operator.kyma-project.io/skip-reconciliation": "true"}
    await world.control.apply(skipped)
    # a module added to another Kyma is handled meanwhile: proof the operator did look around
    await world.control.apply(
        modules.kubeconfig_secret(world.namespace, "k8", world.remote_kubeconfig)
    )
    await world.control.apply(
        modules.kyma(world.namespace, "k8", "regular", [{"name": "alpha", "managed": True}])
    )
    await world.kyma_state("k8", "Ready")
    assert (
        await world.get("Manifest", module_object_name("k7", "beta")) is not None
    )  # not removed while skipped

    del skipped["metadata"]["labels"]["operator.kyma-project.io/skip-reconciliation"]
    skipped["metadata"]["labels"]["operator.kyma-project.io/skip-reconciliation"] = "false"
    await world.control.apply(skipped)

    async def removed() -> bool:
        return await world.get("Manifest", module_object_name("k7", "beta")) is None

    await world.until(removed, "beta removed once the skip label is gone")


async def test_a_raw_manifest_module_is_installed_and_upgraded(world: World) -> None:
    ns = world.namespace
    world.charts.mkdir(parents=True, exist_ok=True)
    links = {}
    for version, names in (("1.0.0", ["raw-a", "raw-b"]), ("2.0.0", ["raw-a"])):
        path = world.charts / f"raw-{version}.yaml"
        path.write_text(
            "".join(
                f"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"
                f"  namespace: kyma-system\ndata:\n  version: '{version}'\n"
                for name in names
            )
        )
        links[version] = path
        body = modules.template(ns, "raw", version, path)
        body["spec"]["resources"] = [{"name": "rawManifest", "link": str(path)}]
        del body["spec"]["data"]
        await world.control.apply(body)
    await world.control.apply(
        modules.release_meta(ns, "raw", {"regular": "1.0.0", "fast": "2.0.0"})
    )
    await world.control.apply(modules.kubeconfig_secret(ns, "k10", world.remote_kubeconfig))
    await world.control.apply(
        modules.kyma(ns, "k10", "regular", [{"name": "raw", "managed": True}])
    )
    await world.kyma_state("k10", "Ready")
    assert await world.remote_configmap("raw-b") is not None

    await world.control.apply(modules.kyma(ns, "k10", "fast", [{"name": "raw", "managed": True}]))

    async def upgraded() -> bool:
        configmap = await world.remote_configmap("raw-a")
        return bool(configmap and configmap["data"]["version"] == "2.0.0") and (
            await world.remote_configmap("raw-b") is None
        )

    await world.until(upgraded, "raw module upgraded to 2.0.0, raw-b pruned")


async def test_a_kyma_whose_remote_secret_is_gone_can_still_be_deleted(world: World) -> None:
    await _kyma_ready(world, "k11", [{"name": "beta", "managed": True}])
    secret = modules.kubeconfig_secret(world.namespace, "k11", world.remote_kubeconfig)
    await world.control.delete(secret)
    await world.control.delete(
        {
            "apiVersion": API_VERSION,
            "kind": "Kyma",
            "metadata": {"name": "k11", "namespace": world.namespace},
        }
    )

    async def gone() -> bool:
        return (
            await world.get("Kyma", "k11") is None
            and await world.get("Manifest", module_object_name("k11", "beta")) is None
        )

    await world.until(gone, "Kyma and Manifest gone although the remote cluster's Secret is")
