"""Prometheus metrics of the infrastructure manager.

KIM's four series under KIM's names and labels, so the dashboards and alerts KCP keeps for KIM
read this manager unchanged: `infrastructure_manager_im_runtime_state` (1 per Runtime for its
state), `infrastructure_manager_im_gardener_clusters_state` (1 per GardenerCluster),
`infrastructure_manager_im_kubeconfig_expiration` (the kubeconfig's expiry, Unix time) and
`unexpected_stops_total`. Ours besides (no KIM counterpart): Gardener requests by operation and
outcome, how long a pass took, the work queue's depth. A Runtime's series are replaced, not
added to, and go with it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from reconciler.observability.metrics import process_registry

DURATION_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
KIM = "infrastructure_manager"
"""KIM's metric subsystem: its series are exported as `infrastructure_manager_im_...`."""


class InfraMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or process_registry("infrastructure-manager")
        r = self.registry
        self.runtime_state = Gauge(
            "im_runtime_state",
            "Exposes current Status.state for Runtime CRs",
            ["runtimeId", "runtimeName", "shoot", "provider", "state", "message"],
            subsystem=KIM,
            registry=r,
        )
        self.gardener_cluster_state = Gauge(
            "im_gardener_clusters_state",
            "Indicates the Status.state for GardenerCluster CRs",
            ["runtimeId", "shoot", "state", "reason"],
            subsystem=KIM,
            registry=r,
        )
        self.kubeconfig_expiry = Gauge(
            "im_kubeconfig_expiration",
            "Exposes current kubeconfig expiration value in epoch timestamp value format",
            ["runtimeId", "shoot", "expires", "rotationDuration", "expirationDuration"],
            subsystem=KIM,
            registry=r,
        )
        self.unexpected_stops = Counter(
            "unexpected_stops",
            "Exposes the number of unexpected state machine stop events",
            registry=r,
        )
        self.gardener_requests = Counter(
            "reconciler_infra_gardener_requests",
            "Requests to Gardener by operation and outcome (ok, an HTTP status, unreachable).",
            ["operation", "outcome"],
            registry=r,
        )
        self.duration = Histogram(
            "reconciler_infra_reconcile_duration_seconds",
            "Time one pass over a Runtime took.",
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.queue_depth = Gauge(
            "reconciler_infra_queue_depth", "Runtimes waiting in the work queue.", registry=r
        )
        self._series: dict[tuple[str, str], dict[Gauge, tuple[str, ...]]] = {}
        """(namespace, Runtime) -> metric -> the label values of its one current series."""

    def watch_queue(self, size: Callable[[], int]) -> None:
        self.queue_depth.set_function(lambda: float(size()))

    def gardener_request(self, operation: str, outcome: str) -> None:
        self.gardener_requests.labels(operation, outcome).inc()

    def _set(
        self, key: tuple[str, str], gauge: Gauge, values: tuple[str, ...], value: float
    ) -> None:
        """The one series of `gauge` for this Runtime: the previous one (other labels) goes."""
        series = self._series.setdefault(key, {})
        old = series.get(gauge)
        if old is not None and old != values:
            with contextlib.suppress(KeyError):
                gauge.remove(*old)
        gauge.labels(*values).set(value)
        series[gauge] = values

    def _unset(self, key: tuple[str, str], gauge: Gauge) -> None:
        old = self._series.get(key, {}).pop(gauge, None)
        if old is not None:
            with contextlib.suppress(KeyError):
                gauge.remove(*old)

    def set_state(
        self,
        namespace: str,
        runtime: str,
        state: str,
        *,
        runtime_id: str = "",
        shoot: str = "",
        provider: str = "",
        message: str = "",
    ) -> None:
        """KIM's labels: the runtime id, the Runtime's name, shoot, provider, state and the
        message of its last condition."""
        values = (runtime_id or runtime, runtime, shoot, provider, state, message)
        self._set((namespace, runtime), self.runtime_state, values, 1)

    def set_cluster_state(
        self, namespace: str, runtime: str, runtime_id: str, shoot: str, state: str, reason: str
    ) -> None:
        values = (runtime_id, shoot, state, reason)
        self._set((namespace, runtime), self.gardener_cluster_state, values, 1)

    def set_expiry(
        self,
        namespace: str,
        runtime: str,
        expires: dt.datetime,
        *,
        runtime_id: str = "",
        shoot: str = "",
        rotation: float = 0.0,
        validity: float = 0.0,
    ) -> None:
        """KIM's labels: runtime id, shoot, the expiry as a label too, the rotation period and
        the validity in seconds."""
        stamp = int(expires.timestamp())
        values = (runtime_id or runtime, shoot, str(stamp), f"{rotation:g}", f"{validity:g}")
        self._set((namespace, runtime), self.kubeconfig_expiry, values, float(stamp))

    def forget_expiry(self, namespace: str, runtime: str) -> None:
        self._unset((namespace, runtime), self.kubeconfig_expiry)
        self._unset((namespace, runtime), self.gardener_cluster_state)

    def forget(self, namespace: str, runtime: str) -> None:
        self.forget_expiry(namespace, runtime)
        self._unset((namespace, runtime), self.runtime_state)
        self._series.pop((namespace, runtime), None)
