"""Drift on the remote cluster is reverted within seconds through the metadata watch, long
before the periodic requeue (30 s in these tests)."""

from __future__ import annotations

import time

from reconciler.operator.resources import API_VERSION
from tests.operator import modules
from tests.operator.conftest import SETTINGS, World

REVERT_WITHIN = 10.0


async def test_an_edited_and_a_deleted_object_on_the_remote_cluster_are_reverted_within_seconds(
    world: World,
) -> None:
    assert SETTINGS.success_interval > 2 * REVERT_WITHIN
    await world.catalog()
    ns = world.namespace
    await world.control.apply(modules.kubeconfig_secret(ns, "k9", world.remote_kubeconfig))
    await world.control.apply(
        modules.kyma(ns, "k9", "regular", [{"name": "beta", "managed": True}])
    )
    await world.kyma_state("k9", "Ready")

    edited = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "beta-a", "namespace": "kyma-system"},
        "data": {"version": "tampered"},
    }
    await world.remote.apply(edited, field_manager="someone-else")
    started = time.monotonic()

    async def reverted() -> bool:
        configmap = await world.remote_configmap("beta-a")
        return bool(configmap and configmap["data"]["version"] == "1.0.0")

    await world.until(reverted, "beta-a reverted", timeout=REVERT_WITHIN)
    assert time.monotonic() - started < REVERT_WITHIN

    await world.remote.delete(edited)
    await world.until(reverted, "beta-a re-created", timeout=REVERT_WITHIN)
    manifest = await world.get("Manifest", "k9-beta")
    assert manifest is not None
    assert manifest["apiVersion"] == API_VERSION
