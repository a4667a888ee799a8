"""A Kyma aggregates a burst of its Manifests' status changes once, not once per change."""

from __future__ import annotations

import asyncio
import time

from reconciler.model.lifecycle import module_object_name
from reconciler.operator.runtime.wiring import AGGREGATE_DELAY
from tests.operator import modules
from tests.operator.conftest import World

CHANGES = 10
SPACING = 0.01


def _kyma_reconciles(world: World) -> float:
    assert world.operator is not None
    value = world.operator.metrics.registry.get_sample_value(
        "reconciler_operator_reconcile_duration_seconds_count", {"kind": "Kyma", "result": "ok"}
    )
    return value or 0.0


async def test_a_burst_of_manifest_status_changes_costs_few_kyma_reconciles(world: World) -> None:
    await world.catalog()
    ns = world.namespace
    await world.control.apply(modules.kubeconfig_secret(ns, "kb", world.remote_kubeconfig))
    spec = [{"name": "alpha", "managed": True}, {"name": "beta", "managed": True}]
    await world.control.apply(modules.kyma(ns, "kb", "regular", spec))
    await world.kyma_state("kb", "Ready")

    operator = world.operator
    assert operator is not None
    manifests = [
        await world.get("Manifest", name)
        for name in (module_object_name("kb", "alpha"), module_object_name("kb", "beta"))
    ]
    before = _kyma_reconciles(world)
    started = time.monotonic()
    for i in range(CHANGES):  # status changes as kopf reports them, a little apart
        body = manifests[i % 2]
        assert body is not None
        operator._manifest_event(body, "MODIFIED")
        await asyncio.sleep(SPACING)
    burst = time.monotonic() - started

    async def aggregated() -> bool:
        return _kyma_reconciles(world) > before

    await world.until(aggregated, "the Kyma aggregating the burst")
    await asyncio.sleep(3 * AGGREGATE_DELAY)  # a late extra reconcile would show here
    reconciles = _kyma_reconciles(world) - before
    # at most one per AGGREGATE_DELAY window the burst spanned (plus the one it ended in), not
    # one per change (a slow machine stretches the burst over more windows, so the bound grows)
    assert reconciles <= burst / AGGREGATE_DELAY + 2, (reconciles, burst)
