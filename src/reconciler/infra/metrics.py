"""Prometheus metrics of the infrastructure manager (KIM's set): each Runtime's state, each
kubeconfig's expiry, Gardener requests by operation and outcome, passes that stopped
unexpectedly, and how long a pass took. State series are replaced, not added to."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from reconciler.observability.metrics import process_registry

DURATION_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class InfraMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or process_registry("infrastructure-manager")
        r = self.registry
        self.runtime_state = Gauge(
            "reconciler_infra_runtime_state",
            "1 for the current state of each Runtime (label state).",
            ["namespace", "runtime", "state"],
            registry=r,
        )
        self.kubeconfig_expiry = Gauge(
            "reconciler_infra_kubeconfig_expiration_timestamp_seconds",
            "When each Runtime's current kubeconfig expires (Unix time).",
            ["namespace", "runtime"],
            registry=r,
        )
        self.gardener_requests = Counter(
            "reconciler_infra_gardener_requests",
            "Requests to Gardener by operation and outcome (ok, an HTTP status, unreachable).",
            ["operation", "outcome"],
            registry=r,
        )
        self.unexpected_stops = Counter(
            "reconciler_infra_unexpected_stops",
            "Passes over a Runtime that ended in an unexpected exception.",
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
        self._states: dict[tuple[str, str], str] = {}

    def watch_queue(self, size: Callable[[], int]) -> None:
        self.queue_depth.set_function(lambda: float(size()))

    def gardener_request(self, operation: str, outcome: str) -> None:
        self.gardener_requests.labels(operation, outcome).inc()

    def set_state(self, namespace: str, runtime: str, state: str) -> None:
        key = (namespace, runtime)
        old = self._states.get(key)
        if old is not None and old != state:
            self.runtime_state.remove(namespace, runtime, old)
        self.runtime_state.labels(namespace, runtime, state).set(1)
        self._states[key] = state

    def set_expiry(self, namespace: str, runtime: str, expires: dt.datetime) -> None:
        self.kubeconfig_expiry.labels(namespace, runtime).set(expires.timestamp())

    def forget_expiry(self, namespace: str, runtime: str) -> None:
        with contextlib.suppress(KeyError):  # never written
            self.kubeconfig_expiry.remove(namespace, runtime)

    def forget(self, namespace: str, runtime: str) -> None:
        old = self._states.pop((namespace, runtime), None)
        if old is not None:
            self.runtime_state.remove(namespace, runtime, old)
        self.forget_expiry(namespace, runtime)
