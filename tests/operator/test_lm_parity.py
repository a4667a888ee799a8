"""The lifecycle manager's e2e scenario with a module built like its `template-operator`
(tests/fixtures/modules/sample-operator), on two real apiservers, one walk through its life:
install; a user edits the default resource and the operator restarts; unmanage and manage
again; remove (blocked by a user's `Sample`, then by the shipped `Managed` resource, in the
lifecycle manager's order); install again and deprovision. Each step asserts the states,
conditions, labels and objects the lifecycle manager's own e2e tests assert."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reconciler.charts.sources import ChartCache
from reconciler.model.lifecycle import API_VERSION
from reconciler.operator.runtime.wiring import Operator
from tests.conftest import ClusterFactory, KubeTarget
from tests.helpers import sample_module as sample
from tests.operator import modules
from tests.operator.conftest import SETTINGS, World, bare_world
from tests.operator.running import reconciles, running

KYMA = "kp"
MANAGED_BY = "operator.kyma-project.io/managed-by"
OWNED_BY = "deprecated-operator.kyma-project.io/owned-by"
DISCLAIMER = "operator.kyma-project.io/managed-by-reconciler-disclaimer"
PART_OF = "app.kubernetes.io/part-of"


class Walk:
    """The scenario's reads, on top of `World`."""

    def __init__(self, world: World) -> None:
        self.world = world

    async def manifest(self) -> dict[str, Any] | None:
        found = await self.world.control.list(
            await self.world.control.mapper.resolve(API_VERSION, "Manifest"),
            namespace=self.world.namespace,
            label_selector=f"operator.kyma-project.io/kyma-name={KYMA}",
        )
        return found[0].raw if found else None

    async def remote(self, api_version: str, kind: str, name: str, namespace: str = "") -> Any:
        live = await self.world.remote.get(
            {
                "apiVersion": api_version,
                "kind": kind,
                "metadata": {"name": name, "namespace": namespace},
            }
        )
        return None if live is None else live.raw

    async def default_cr(self) -> Any:
        return await self.remote(sample.VERSION, "Sample", sample.DEFAULT_CR, "kyma-system")

    async def synced(self, manifest: dict[str, Any]) -> list[Any]:
        """The live objects `status.synced` names (None for a gone one)."""
        found = []
        for item in manifest["status"]["synced"]:
            api = f"{item['group']}/{item['version']}" if item.get("group") else item["version"]
            found.append(
                await self.remote(api, item["kind"], item["name"], item.get("namespace", ""))
            )
        return found

    async def manifest_in(self, state: str, containing: str = "") -> dict[str, Any]:
        async def check() -> dict[str, Any] | None:
            manifest = await self.manifest()
            status = (manifest or {}).get("status") or {}
            message = (status.get("lastOperation") or {}).get("operation", "")
            ok = status.get("state") == state and containing in message
            return manifest if ok else None

        result: dict[str, Any] = await self.world.until(
            check, f"Manifest {state} {containing}", timeout=60
        )
        return result

    async def set_modules(self, entries: list[dict[str, Any]]) -> None:
        await self.world.control.apply(modules.kyma(self.world.namespace, KYMA, "regular", entries))


def _conditions(body: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {
        c["type"]: (c["status"], c["reason"], c["message"])
        for c in body["status"].get("conditions") or []
    }


async def test_a_module_like_template_operator_lives_as_under_the_lifecycle_manager(
    kube_cluster: KubeTarget, namespace: str, cluster_factory: ClusterFactory, tmp_path: Path
) -> None:
    async with bare_world(kube_cluster, namespace, cluster_factory, tmp_path) as world:
        control, remote = world.control, world.remote
        walk = Walk(world)

        def operator() -> Operator:
            return Operator(control, ChartCache(tmp_path / "cache"), SETTINGS)

        with sample.served(["1.0.0"]) as url:
            link = f"{url}/sample-operator-1.0.0.yaml"
            for body in (
                sample.template(namespace, "1.0.0", link),
                modules.release_meta(namespace, sample.MODULE, {"regular": "1.0.0"}),
                modules.kubeconfig_secret(namespace, KYMA, world.remote_kubeconfig),
            ):
                await control.apply(body)
            async with sample.module_alive(remote):
                async with running(operator(), kube_cluster.kubeconfig, namespace):
                    await walk.set_modules([{"name": sample.MODULE}])
                    await _installed(walk)
                    await _user_edits_default_cr(walk)
                async with running(second := operator(), kube_cluster.kubeconfig, namespace):
                    await world.until(
                        lambda: _reconciled(second), "a Manifest reconcile after the restart"
                    )
                    await world.kyma_state(KYMA, "Ready")
                    default = await walk.default_cr()
                    assert default["spec"]["resourceFilePath"] == "./edited-by-the-user"
                    await _unmanaged_and_managed_again(walk)
                    await _removed(walk)
                    await walk.set_modules([{"name": sample.MODULE}])
                    await _installed(walk)
                    await _deprovisioned(walk)


async def _reconciled(operator: Operator) -> bool:
    return reconciles(operator, "Manifest") >= 1


async def _installed(walk: Walk) -> None:
    world = walk.world
    manifest = await walk.manifest_in("Ready")

    async def listed() -> dict[str, Any] | None:
        """Ready with its module Ready and its conditions known (the remote sync's, which
        follow the Kyma's Ready by one run of it, included)."""
        kyma = await world.get("Kyma", KYMA)
        status = (kyma or {}).get("status") or {}
        states = [m.get("state") for m in status.get("modules") or []]
        known = all(c.get("status") != "Unknown" for c in status.get("conditions") or [])
        ready = status.get("state") == "Ready" and states == ["Ready"]
        return kyma if ready and known else None

    kyma = await world.until(listed, "the Kyma Ready with its module Ready, conditions known")
    meta = manifest["metadata"]
    assert meta["labels"][MANAGED_BY] == "lifecycle-manager"
    assert meta["annotations"]["operator.kyma-project.io/ocm-component-name"] == sample.COMPONENT
    assert meta["annotations"]["operator.kyma-project.io/fqdn"] == sample.COMPONENT
    assert _conditions(manifest) == {
        "Resources": ("True", "ResourcesAvailable", "resources are parsed and ready for use"),
        "Installation": ("True", "Ready", "installation is ready and resources can be used"),
        "ModuleCR": ("True", "ModuleCRCreated", "module CR was created"),
    }
    assert manifest["status"]["lastOperation"]["operation"] == "resources are ready"
    conditions = _conditions(kyma)
    assert conditions["Modules"] == ("True", "Ready", "all modules are in ready state")
    assert conditions["ModuleCatalog"] == ("True", "Ready", "module templates are synchronized")
    assert conditions["CRDsSync"] == ("True", "Ready", "CRDs are synchronized to the SKR")
    order = [c["type"] for c in kyma["status"]["conditions"]]
    assert order[:3] == ["CRDsSync", "Modules", "ModuleCatalog"]  # LM's reconciliation order
    (entry,) = kyma["status"]["modules"]
    assert entry["ocmComponentName"] == entry["fqdn"] == sample.COMPONENT
    assert entry["resource"] == {
        "apiVersion": sample.VERSION,
        "kind": "Sample",
        "metadata": {"name": sample.DEFAULT_CR, "namespace": "kyma-system"},
    }
    # every object of the module carries the lifecycle manager's marks
    owner = f"{world.namespace}/{meta['name']}"
    for live in await walk.synced(manifest):
        labels, annotations = live["metadata"]["labels"], live["metadata"]["annotations"]
        assert labels[MANAGED_BY] == "kyma", live["metadata"]["name"]
        assert labels[PART_OF] == "Kyma"
        assert labels["app.kubernetes.io/component"] == meta["name"]
        assert annotations[OWNED_BY] == owner
        assert annotations[DISCLAIMER].startswith("DO NOT EDIT")
    default = await walk.default_cr()
    assert default["status"]["state"] == "Ready"  # its controller runs: the Deployment is up


async def _user_edits_default_cr(walk: Walk) -> None:
    await walk.world.remote.client.request(
        "PATCH",
        sample.path("Sample", "kyma-system", sample.DEFAULT_CR),
        body={"spec": {"resourceFilePath": "./edited-by-the-user"}},
        content_type=sample.MERGE,
    )


async def _unmanaged_and_managed_again(walk: Walk) -> None:
    world = walk.world
    manifest = await walk.manifest()
    assert manifest is not None
    await walk.set_modules([{"name": sample.MODULE, "managed": False}])

    async def released() -> bool:
        return await walk.manifest() is None

    await world.until(released, "the Manifest removed once the module is unmanaged")
    kyma = await world.kyma_state(KYMA, "Ready")
    assert kyma["status"]["modules"] == [{"name": sample.MODULE, "state": "Unmanaged"}]
    for live in await walk.synced(manifest):
        assert live is not None  # the module stays installed
        labels, annotations = live["metadata"]["labels"], live["metadata"].get("annotations") or {}
        assert MANAGED_BY not in labels
        assert OWNED_BY not in annotations
        assert DISCLAIMER not in annotations
        assert labels[PART_OF] == "Kyma"
    default = await walk.default_cr()
    assert default is not None
    assert MANAGED_BY not in (default["metadata"].get("labels") or {})

    await walk.set_modules([{"name": sample.MODULE}])
    manifest = await walk.manifest_in("Ready")
    for live in await walk.synced(manifest):
        assert live["metadata"]["labels"][MANAGED_BY] == "kyma"
    default = await walk.default_cr()
    assert default["spec"]["resourceFilePath"] == "./edited-by-the-user"  # not created again


async def _removed(walk: Walk) -> None:
    world = walk.world
    remote = world.remote
    mine = {  # a user's own Sample: the lifecycle manager blocks on it
        "apiVersion": sample.VERSION,
        "kind": "Sample",
        "metadata": {"name": "mine", "namespace": "default"},
    }
    await remote.apply(mine)
    # the module's own shipped Managed, held by someone's finalizer
    await remote.client.request(
        "PATCH",
        sample.path("Managed", sample.NAMESPACE, sample.SHIPPED_MANAGED),
        body={"metadata": {"finalizers": ["test.example.com/blocking"]}},
        content_type=sample.MERGE,
    )
    installed = await walk.manifest()
    assert installed is not None
    await walk.set_modules([])

    blocked = await walk.manifest_in(
        "Deleting", "waiting for module crs deletion: Sample default/mine"
    )

    async def kyma_waits() -> bool:  # Processing, as the lifecycle manager's, saying why
        status = (await world.get("Kyma", KYMA) or {}).get("status") or {}
        message = (status.get("lastOperation") or {}).get("operation", "")
        return status.get("state") == "Processing" and "waiting for module crs" in message

    await world.until(kyma_waits, "the Kyma Processing while the removal is blocked")
    assert all(live is not None for live in await walk.synced(blocked))
    default = await walk.default_cr()
    assert default is not None
    assert not default["metadata"].get("deletionTimestamp")

    await remote.delete(mine)  # its controller lets it go
    waiting = await walk.manifest_in(
        "Deleting", f"Managed {sample.NAMESPACE}/{sample.SHIPPED_MANAGED}"
    )
    assert await walk.default_cr() is None  # the default resource went before the objects
    assert (
        await walk.remote("v1", "ConfigMap", "sample-operator-settings", sample.NAMESPACE) is None
    )
    # the operator's own objects stay while the module's resources are being deleted
    assert await walk.remote("apps/v1", "Deployment", sample.DEPLOYMENT, sample.NAMESPACE)
    assert await walk.remote("v1", "ServiceAccount", sample.DEPLOYMENT, sample.NAMESPACE)
    assert waiting["status"]["state"] == "Deleting"

    await remote.client.request(
        "PATCH",
        sample.path("Managed", sample.NAMESPACE, sample.SHIPPED_MANAGED),
        body={"metadata": {"finalizers": None}},
        content_type=sample.MERGE,
    )

    async def gone() -> bool:
        return await walk.manifest() is None

    await world.until(gone, "the Manifest removed with the module", timeout=90)
    kyma = await world.kyma_state(KYMA, "Ready")
    assert kyma["status"]["modules"] == []
    assert _left_behind(await walk.synced(installed)) == []


def _left_behind(synced: list[Any]) -> list[str]:
    """The module's objects neither gone nor being deleted. A Namespace deleted stays
    `Terminating` on a remote test-bed cluster (no namespace controller runs there); the SKR's
    `kyma-system`, which the module's install creates when it wins the race with the remote sync,
    is kept while it still holds others' objects (the SKR Kyma and its catalog)."""
    return [
        f"{live['kind']} {live['metadata']['name']}"
        for live in synced
        if live is not None
        and not live["metadata"].get("deletionTimestamp")
        and (live["kind"], live["metadata"]["name"]) != ("Namespace", "kyma-system")
    ]


async def _deprovisioned(walk: Walk) -> None:
    world = walk.world
    installed = await walk.manifest()
    assert installed is not None
    await world.control.delete(
        {
            "apiVersion": API_VERSION,
            "kind": "Kyma",
            "metadata": {"name": KYMA, "namespace": world.namespace},
        }
    )

    async def gone() -> bool:
        return await world.get("Kyma", KYMA) is None and await walk.manifest() is None

    await world.until(gone, "the Kyma deprovisioned", timeout=90)
    assert await walk.default_cr() is None
    assert _left_behind(await walk.synced(installed)) == []
