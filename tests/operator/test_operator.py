"""The operator end to end on two real apiservers: the control plane (Kyma, catalog, Manifests)
and the remote cluster the modules go to."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reconciler.charts.sources import ChartCache
from reconciler.kube.cluster import Cluster
from reconciler.operator.install import install_crds
from reconciler.operator.resources import API_VERSION, KYMA_FINALIZER, MANIFEST_FINALIZER
from reconciler.operator.runtime import Operator
from reconciler.operator.settings import OperatorSettings
from reconciler.util.polling import poll_until
from tests.conftest import ClusterFactory, KubeTarget
from tests.operator import modules

SETTINGS = OperatorSettings(
    success_interval=30,
    busy_interval=0.5,
    warning_interval=2,
    error_interval=0.5,
    error_max_interval=2,
    timeout=60,
)


@dataclass
class World:
    control: Cluster
    remote: Cluster
    remote_kubeconfig: Path
    namespace: str
    charts: Path

    async def get(
        self,
        kind: str,
        name: str,
        *,
        remote: bool = False,
        namespace: str | None = None,
        api_version: str = API_VERSION,
    ) -> dict[str, Any] | None:
        cluster = self.remote if remote else self.control
        live = await cluster.get(
            {
                "apiVersion": api_version,
                "kind": kind,
                "metadata": {"name": name, "namespace": namespace or self.namespace},
            }
        )
        return None if live is None else live.raw

    async def until(
        self, check: Callable[[], Awaitable[Any]], what: str, timeout: float = 90
    ) -> Any:
        return await poll_until(check, timeout=timeout, what=what, interval=0.2)

    async def kyma_state(self, name: str, state: str) -> dict[str, Any]:
        async def check() -> dict[str, Any] | None:
            kyma = await self.get("Kyma", name)
            return kyma if kyma and (kyma.get("status") or {}).get("state") == state else None

        async def describe() -> str:
            return str((await self.get("Kyma", name) or {}).get("status"))

        try:
            result: dict[str, Any] = await self.until(check, f"Kyma {name} {state}")
        except Exception as exc:
            raise AssertionError(f"{exc}; status: {await describe()}") from None
        return result

    async def remote_configmap(self, name: str) -> dict[str, Any] | None:
        return await self.get(
            "ConfigMap", name, remote=True, namespace="kyma-system", api_version="v1"
        )


@pytest.fixture
async def world(
    kube_cluster: KubeTarget, namespace: str, cluster_factory: ClusterFactory, tmp_path: Path
) -> AsyncIterator[World]:
    remote_target = await cluster_factory(controller_manager=True)  # namespaces finalize
    async with (
        await Cluster.connect(kube_cluster.kubeconfig) as control,
        await Cluster.connect(remote_target.kubeconfig) as remote,
    ):
        await install_crds(control)
        operator = Operator(control, ChartCache(tmp_path / "cache"), SETTINGS)
        stop, ready = asyncio.Event(), asyncio.Event()
        task = asyncio.create_task(
            operator.run(kube_cluster.kubeconfig, namespace=namespace, stop=stop, ready=ready)
        )
        await asyncio.wait_for(ready.wait(), 30)
        try:
            yield World(control, remote, remote_target.kubeconfig, namespace, tmp_path / "charts")
        finally:
            stop.set()
            await asyncio.wait_for(task, 60)  # prompt: the run cancels its watchers


async def _catalog(world: World) -> None:
    ns = world.namespace
    alpha1 = modules.module_chart(world.charts, "alpha", "1.0.0", ["alpha-a", "alpha-b"])
    alpha2 = modules.module_chart(world.charts, "alpha", "1.1.0", ["alpha-a"])
    beta = modules.module_chart(world.charts, "beta", "1.0.0", ["beta-a"])
    for body in (
        modules.template(ns, "alpha", "1.0.0", alpha1),
        modules.template(ns, "alpha", "1.1.0", alpha2),
        modules.template(ns, "beta", "1.0.0", beta),
        modules.release_meta(ns, "alpha", {"regular": "1.0.0", "fast": "1.1.0"}),
        modules.release_meta(ns, "beta", {"regular": "1.0.0", "fast": "1.0.0"}),
    ):
        await world.control.apply(body)


async def test_kyma_installs_upgrades_prunes_and_removes_modules_on_the_remote_cluster(
    world: World,
) -> None:
    await _catalog(world)
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
    manifest = await world.get("Manifest", "k1-alpha")
    assert manifest is not None
    assert manifest["metadata"]["ownerReferences"][0]["name"] == "k1"
    assert manifest["metadata"]["labels"]["operator.kyma-project.io/module-name"] == "alpha"
    assert MANIFEST_FINALIZER in manifest["metadata"]["finalizers"]
    synced = {(s["kind"], s["name"]) for s in manifest["status"]["synced"]}
    assert {("ConfigMap", "alpha-a"), ("ConfigMap", "alpha-b")} <= synced
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
        return await world.get("Manifest", "k1-beta") is None and (
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
            and await world.get("Manifest", "k1-alpha") is None
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
        manifest = await world.get("Manifest", "k2-beta")
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
