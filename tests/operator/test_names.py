"""Manifest and ModuleConfig names (issue 26 item 16): `<kyma>-<module>` let `t` + `api-gw` and
`t-api` + `gw` share one Manifest; names are `<kyma>-<module>-<hash>` now, and a Manifest named
the old way is found by its labels and adopted, never duplicated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reconciler.model.lifecycle import API_VERSION, KYMA_NAME, MODULE_NAME, module_object_name
from tests.operator import modules
from tests.operator.conftest import World


def _plain_module(world: World, module: str) -> tuple[Path, list[dict[str, Any]]]:
    """A module without a custom resource: one ConfigMap `<module>-cm`."""
    chart = world.charts / f"{module}-1.0.0"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {module}\nversion: 1.0.0\n")
    (chart / "templates" / "cm.yaml").write_text(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {module}-cm\n"
    )
    template = modules.template(world.namespace, module, "1.0.0", chart)
    del template["spec"]["data"]
    meta = modules.release_meta(world.namespace, module, {"regular": "1.0.0"})
    return chart, [template, meta]


async def _manifests(world: World, kyma: str) -> list[dict[str, Any]]:
    return [
        m.raw
        for m in await world.control.list(
            await world.control.mapper.resolve(API_VERSION, "Manifest"),
            namespace=world.namespace,
            label_selector=f"{KYMA_NAME}={kyma}",
        )
    ]


def test_names_tell_apart_pairs_that_join_the_same_and_stay_bounded() -> None:
    assert module_object_name("t", "api-gw") != module_object_name("t-api", "gw")
    assert module_object_name("t", "api-gw") == module_object_name("t", "api-gw")
    assert module_object_name("t", "api-gw").startswith("t-api-gw-")
    long = module_object_name("k" * 253, "m" * 60)
    assert len(long) <= 253
    assert long[0].isalnum()
    assert long[-1].isalnum()


async def test_kymas_whose_names_join_alike_get_a_manifest_each(world: World) -> None:
    for module in ("api-gw", "gw"):
        for body in _plain_module(world, module)[1]:
            await world.control.apply(body)
    for kyma, module in (("t", "api-gw"), ("t-api", "gw")):
        await world.control.apply(
            modules.kubeconfig_secret(world.namespace, kyma, world.remote_kubeconfig)
        )
        body = modules.kyma(world.namespace, kyma, "regular", [{"name": module}])
        await world.control.apply(body)
    for kyma, module in (("t", "api-gw"), ("t-api", "gw")):
        await world.kyma_state(kyma, "Ready")
        found = await _manifests(world, kyma)
        assert [m["metadata"]["name"] for m in found] == [module_object_name(kyma, module)]
        assert found[0]["metadata"]["labels"][MODULE_NAME] == module
        assert await world.remote_configmap(f"{module}-cm") is not None


async def test_a_manifest_named_the_old_way_is_adopted_not_duplicated(world: World) -> None:
    chart, catalog = _plain_module(world, "solo")
    for body in catalog:
        await world.control.apply(body)
    old = {
        "apiVersion": API_VERSION,
        "kind": "Manifest",
        "metadata": {
            "name": "kad-solo",
            "namespace": world.namespace,
            "labels": {KYMA_NAME: "kad", MODULE_NAME: "solo"},
        },
        "spec": {
            "remote": True,
            "version": "0.9.0",
            "install": {"name": "chart", "source": {"type": "helm-chart", "url": str(chart)}},
        },
    }
    await world.control.apply(old)
    await world.control.apply(
        modules.kubeconfig_secret(world.namespace, "kad", world.remote_kubeconfig)
    )
    await world.control.apply(modules.kyma(world.namespace, "kad", "regular", [{"name": "solo"}]))
    await world.kyma_state("kad", "Ready")
    found = await _manifests(world, "kad")
    assert [m["metadata"]["name"] for m in found] == ["kad-solo"]
    assert found[0]["spec"]["version"] == "1.0.0"  # adopted: the Kyma's spec written into it
    assert await world.remote_configmap("solo-cm") is not None
