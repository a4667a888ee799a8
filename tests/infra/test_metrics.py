"""The manager's metrics: KIM's series under KIM's names and labels (KCP's dashboards and alerts
for KIM read them), one series per Runtime, replaced on change, gone with it."""

from __future__ import annotations

import datetime as dt

from reconciler.infra.metrics import InfraMetrics


def _value(metrics: InfraMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def _names(metrics: InfraMetrics) -> set[str]:
    return {sample.name for family in metrics.registry.collect() for sample in family.samples}


def test_kims_series_keep_one_value_per_runtime_until_it_is_forgotten() -> None:
    metrics = InfraMetrics()
    state = "infrastructure_manager_im_runtime_state"
    common = {"runtimeId": "id-1", "runtimeName": "rt", "shoot": "s", "provider": "aws"}
    metrics.set_state("ns", "rt", "Pending", runtime_id="id-1", shoot="s", provider="aws")
    metrics.set_state(
        "ns", "rt", "Ready", runtime_id="id-1", shoot="s", provider="aws", message="done"
    )
    assert _value(metrics, state, **common, state="Ready", message="done") == 1
    assert _value(metrics, state, **common, state="Pending", message="") is None

    expires = dt.datetime(2026, 11, 25, tzinfo=dt.UTC)
    stamp = str(int(expires.timestamp()))
    metrics.set_expiry(
        "ns", "rt", expires, runtime_id="id-1", shoot="s", rotation=51840, validity=86400
    )
    expiry = "infrastructure_manager_im_kubeconfig_expiration"
    labels = {"runtimeId": "id-1", "shoot": "s", "expires": stamp}
    labels |= {"rotationDuration": "51840", "expirationDuration": "86400"}
    assert _value(metrics, expiry, **labels) == expires.timestamp()
    metrics.set_cluster_state("ns", "rt", "id-1", "s", "Ready", "KubeconfigSecretCreated")
    metrics.set_cluster_state("ns", "rt", "id-1", "s", "Ready", "KubeconfigSecretRotated")
    clusters = "infrastructure_manager_im_gardener_clusters_state"
    cluster = {"runtimeId": "id-1", "shoot": "s", "state": "Ready"}
    assert _value(metrics, clusters, **cluster, reason="KubeconfigSecretRotated") == 1
    assert _value(metrics, clusters, **cluster, reason="KubeconfigSecretCreated") is None

    metrics.unexpected_stops.inc()
    assert _value(metrics, "unexpected_stops_total") == 1
    metrics.gardener_request("apply", "429")
    requests = "reconciler_infra_gardener_requests_total"
    assert _value(metrics, requests, operation="apply", outcome="429") == 1

    metrics.forget("ns", "rt")
    assert _value(metrics, state, **common, state="Ready", message="done") is None
    assert _value(metrics, expiry, **labels) is None
    assert _value(metrics, clusters, **cluster, reason="KubeconfigSecretRotated") is None


def test_the_series_carry_kims_names() -> None:
    names = _names(InfraMetrics())
    assert "unexpected_stops_total" in names
    metrics = InfraMetrics()
    metrics.set_state("ns", "rt", "Ready")
    metrics.set_expiry("ns", "rt", dt.datetime(2026, 11, 25, tzinfo=dt.UTC))
    metrics.set_cluster_state("ns", "rt", "rt", "s", "Ready", "KubeconfigSecretCreated")
    assert {
        "infrastructure_manager_im_runtime_state",
        "infrastructure_manager_im_kubeconfig_expiration",
        "infrastructure_manager_im_gardener_clusters_state",
    } <= _names(metrics)
