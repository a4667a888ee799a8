"""The manager's metrics: one state series per Runtime, replaced on change, gone with it."""

from __future__ import annotations

import datetime as dt

from reconciler.infra.metrics import InfraMetrics


def _value(metrics: InfraMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_a_runtime_has_one_state_series_and_its_kubeconfig_expiry_until_it_is_forgotten() -> None:
    metrics = InfraMetrics()
    state = "reconciler_infra_runtime_state"
    metrics.set_state("ns", "rt", "Pending")
    metrics.set_state("ns", "rt", "Ready")
    assert _value(metrics, state, namespace="ns", runtime="rt", state="Ready") == 1
    assert _value(metrics, state, namespace="ns", runtime="rt", state="Pending") is None
    expires = dt.datetime(2026, 11, 25, tzinfo=dt.UTC)
    metrics.set_expiry("ns", "rt", expires)
    expiry = "reconciler_infra_kubeconfig_expiration_timestamp_seconds"
    assert _value(metrics, expiry, namespace="ns", runtime="rt") == expires.timestamp()
    metrics.gardener_request("apply", "429")
    assert (
        _value(
            metrics, "reconciler_infra_gardener_requests_total", operation="apply", outcome="429"
        )
        == 1
    )
    metrics.forget("ns", "rt")
    assert _value(metrics, state, namespace="ns", runtime="rt", state="Ready") is None
    assert _value(metrics, expiry, namespace="ns", runtime="rt") is None
