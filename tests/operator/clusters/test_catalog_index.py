"""The catalog is read from the watch, not listed per Kyma reconcile: at 5,000 Kymas every
reconcile listing every ModuleTemplate (descriptors of kilobytes each) would make the catalog
the control plane's biggest read. A release published later still reaches the Kymas."""

from __future__ import annotations

import sys
from typing import Any

from reconciler.operator.clusters.fleet import FleetIndex
from tests.operator import modules
from tests.operator.conftest import World
from tests.operator.running import reconciles


def test_the_index_knows_the_catalog_only_once_primed_and_tells_a_change_from_a_relisting() -> None:
    fleet = FleetIndex()
    template = {**modules.template("ns", "alpha", "1.0.0", modules.Path("/c")), "kind": "x"}
    template["metadata"]["resourceVersion"] = "1"
    assert fleet.catalog("ns", "x") is None  # not primed: callers list the catalog
    fleet.prime_catalog([template])
    assert fleet.catalog("ns", "x") == [template]
    assert fleet.catalog("other", "x") == []
    assert not fleet.catalog_item(template)  # the watch's first listing of the same version
    changed = {**template, "metadata": {**template["metadata"], "resourceVersion": "2"}}
    assert fleet.catalog_item(changed)
    assert fleet.catalog_item(changed, deleted=True)
    assert fleet.catalog("ns", "x") == []


async def test_kymas_resolve_from_the_watched_catalog_and_follow_a_new_release(
    world: World,
) -> None:
    assert world.operator is not None
    listed: list[str] = []
    control = world.operator.kymas.control
    original = control.list

    async def counting(kind: str, *args: Any, **kwargs: Any) -> Any:
        if sys._getframe(1).f_code.co_filename.endswith("kymas.py"):  # the Kyma controller's
            listed.append(kind)
        return await original(kind, *args, **kwargs)

    control.list = counting  # type: ignore[method-assign]
    await world.catalog()
    ns = world.namespace
    await world.control.apply(modules.kubeconfig_secret(ns, "k1", world.remote_kubeconfig))
    await world.control.apply(
        modules.kyma(ns, "k1", "regular", [{"name": "beta", "managed": True}])
    )
    await world.kyma_state("k1", "Ready")
    beta2 = modules.module_chart(world.charts, "beta", "1.1.0", ["beta-a"])
    await world.control.apply(modules.template(ns, "beta", "1.1.0", beta2))
    await world.control.apply(
        modules.release_meta(ns, "beta", {"regular": "1.1.0", "fast": "1.1.0"})
    )

    async def upgraded() -> bool:
        configmap = await world.remote_configmap("beta-a")
        return bool(configmap and configmap["data"]["version"] == "1.1.0")

    await world.until(upgraded, "beta upgraded to 1.1.0 on the remote cluster", timeout=30)
    await world.kyma_state("k1", "Ready")

    # each change of the Kyma is a reconcile; none of them lists the catalog
    operator = world.operator
    catalog_lists = sum(kind in ("ModuleTemplate", "ModuleReleaseMeta") for kind in listed)
    for touch in range(3):
        runs = reconciles(operator, "Kyma")
        await world.control.apply(
            {
                **modules.kyma(ns, "k1", "regular", [{"name": "beta", "managed": True}]),
                "metadata": {"name": "k1", "namespace": ns, "labels": {"touch": str(touch)}},
            }
        )

        async def reconciled(runs: float = runs) -> bool:
            return reconciles(operator, "Kyma") > runs

        await world.until(reconciled, f"Kyma reconcile {touch}", timeout=10)
    assert sum(kind in ("ModuleTemplate", "ModuleReleaseMeta") for kind in listed) == catalog_lists


async def test_a_beta_module_reaches_only_a_kyma_labelled_for_beta(world: World) -> None:
    await world.catalog()
    ns = world.namespace
    meta = modules.release_meta(ns, "beta", {"regular": "1.0.0", "fast": "1.0.0"})
    meta["spec"]["beta"] = True
    await world.control.apply(meta)
    await world.control.apply(modules.kubeconfig_secret(ns, "k2", world.remote_kubeconfig))
    kyma = modules.kyma(ns, "k2", "regular", [{"name": "beta", "managed": True}])
    await world.control.apply(kyma)
    refused = await world.kyma_state("k2", "Error")
    assert "is beta" in refused["status"]["modules"][0]["message"]
    kyma["metadata"]["labels"] = {"operator.kyma-project.io/beta": "true"}
    await world.control.apply(kyma)
    await world.kyma_state("k2", "Ready")
