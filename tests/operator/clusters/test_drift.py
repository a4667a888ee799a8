"""Drift on the remote cluster is reverted within seconds through the metadata watch, long
before the periodic requeue (30 s in these tests); the metrics show the states meanwhile."""

from __future__ import annotations

import time

from prometheus_client import generate_latest

from reconciler.kube.client import FIELD_MANAGER
from reconciler.model.lifecycle import API_VERSION, module_object_name
from reconciler.operator.clusters.drift import own_write
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
    expected = [  # the exposition sorts labels by name
        f'reconciler_operator_kyma_state{{kyma="k9",namespace="{ns}",state="Ready"}} 1.0',
        f'reconciler_operator_module_state{{kyma="k9",module="beta",namespace="{ns}",state="Ready"}}',
        "reconciler_operator_remote_clients 1.0",
        'reconciler_operator_requeues_total{kind="Manifest",reason="success"}',
    ]

    async def metrics_show_it() -> bool:  # set right after the status write the test saw
        assert world.operator is not None
        text = generate_latest(world.operator.metrics.registry).decode()
        return all(line in text for line in expected)

    await world.until(metrics_show_it, f"metrics {expected}", timeout=5)

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
    manifest = await world.get("Manifest", module_object_name("k9", "beta"))
    assert manifest is not None
    assert manifest["apiVersion"] == API_VERSION


def _entry(manager: str, time: str, subresource: str | None = None) -> dict[str, str]:
    entry = {"manager": manager, "operation": "Apply", "time": time}
    if subresource:
        entry["subresource"] = subresource
    return entry


def test_only_the_echo_of_our_own_apply_is_ignored_by_the_drift_watch() -> None:
    ours, later = "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z"
    assert own_write({"managedFields": [_entry(FIELD_MANAGER, ours)]})
    assert own_write({"managedFields": [_entry("kubectl", ours), _entry(FIELD_MANAGER, later)]})
    # someone else wrote after us, in the same second, or a controller updated the status
    assert not own_write({"managedFields": [_entry(FIELD_MANAGER, ours), _entry("x", later)]})
    assert not own_write({"managedFields": [_entry(FIELD_MANAGER, ours), _entry("x", ours)]})
    status = _entry("kube-controller-manager", later, "status")
    assert not own_write({"managedFields": [_entry(FIELD_MANAGER, ours), status]})
    assert not own_write({"managedFields": []})
