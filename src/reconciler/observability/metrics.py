"""Prometheus metrics of a mothership instance.

Event metrics (operation durations, queue wait) are observed where the event happens; state
metrics (cluster status and health per runtime, operations by state, active reconciliations, DB
pool) are
refreshed from the database by a background loop every few seconds, so a scrape never waits on
the database and never sees a half-updated set of series.
"""

from __future__ import annotations

import platform
from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client import (
    CollectorRegistry,
    Gauge,
    GCCollector,
    Histogram,
    Info,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)

from reconciler.version import __version__

# `_created` series double every counter's and histogram's series and nothing reads them
disable_created_metrics()  # type: ignore[no-untyped-call]

DURATION_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
WAIT_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)


def process_registry(role: str) -> CollectorRegistry:
    """A registry holding what every process of ours exports besides its own series: process
    (CPU, memory, file descriptors) and Python runtime metrics, and
    `reconciler_build_info{version, python, role}` for "which version runs where"."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    Info("reconciler_build", "The running reconciler: version and role.", registry=registry).info(
        {"version": __version__, "python": platform.python_version(), "role": role}
    )
    return registry


@dataclass(frozen=True)
class HealthSample:
    """One cluster's health as the gauges show it."""

    runtime_id: str
    health: str
    consecutive_failures: int
    last_success: float | None
    """Unix time of the last successful run; None before the first."""


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or process_registry("mothership")
        r = self.registry
        self.operation_duration = Histogram(
            "reconciler_operation_duration_seconds",
            "Time from claiming an operation to its result, per component.",
            ["component", "result"],
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.queue_wait = Histogram(
            "reconciler_operation_queue_wait_seconds",
            "Time an operation waited between becoming runnable and being claimed.",
            buckets=WAIT_BUCKETS,
            registry=r,
        )
        self.worker_occupancy = Gauge(
            "reconciler_worker_occupancy_ratio",
            "Share of this instance's worker slots in use.",
            registry=r,
        )
        self.cluster_status = Gauge(
            "reconciler_cluster_status",
            "1 for the current status of each cluster (label status).",
            ["runtime_id", "status"],
            registry=r,
        )
        self.clusters = Gauge("reconciler_clusters", "Clusters by status.", ["status"], registry=r)
        self.cluster_health = Gauge(
            "reconciler_cluster_health",
            "1 for the current health of each cluster (label health: healthy, progressing,"
            " failing, unreachable, disabled); failing stays failing while retries run.",
            ["runtime_id", "health"],
            registry=r,
        )
        self.clusters_by_health = Gauge(
            "reconciler_clusters_by_health", "Clusters by health.", ["health"], registry=r
        )
        self.consecutive_failures = Gauge(
            "reconciler_cluster_consecutive_failures",
            "Failed runs in a row of each cluster (0 once a run succeeds).",
            ["runtime_id"],
            registry=r,
        )
        self.last_success = Gauge(
            "reconciler_cluster_last_successful_reconcile_timestamp_seconds",
            "Unix time of each cluster's last successful run (absent before the first), for"
            ' "not reconciled in N h" alerts.',
            ["runtime_id"],
            registry=r,
        )
        self.operations = Gauge(
            "reconciler_operations", "Operations by state.", ["state"], registry=r
        )
        self.reconciliations_active = Gauge(
            "reconciler_reconciliations_active", "Reconciliations in progress.", registry=r
        )
        self.db_pool = Gauge(
            "reconciler_db_pool_connections",
            "Database pool connections.",
            ["kind"],
            registry=r,
        )
        self.occupancy_remote = Gauge(
            "reconciler_component_reconciler_occupancy_ratio",
            "Reported busy share of remote component-reconciler pools.",
            ["pool"],
            registry=r,
        )

    def set_cluster_statuses(self, statuses: list[tuple[str, str]]) -> None:
        """Replace the per-runtime status series with the given (runtime_id, status) pairs."""
        self.cluster_status.clear()
        for runtime_id, status in statuses:
            self.cluster_status.labels(runtime_id=runtime_id, status=status).set(1)

    def set_cluster_healths(self, samples: Iterable[HealthSample]) -> None:
        """Replace the per-runtime health series (and the counts by health)."""
        for gauge in (self.cluster_health, self.consecutive_failures, self.last_success):
            gauge.clear()
        counts: dict[str, int] = {}
        for sample in samples:
            labels = {"runtime_id": sample.runtime_id}
            self.cluster_health.labels(health=sample.health, **labels).set(1)
            self.consecutive_failures.labels(**labels).set(sample.consecutive_failures)
            if sample.last_success is not None:
                self.last_success.labels(**labels).set(sample.last_success)
            counts[sample.health] = counts.get(sample.health, 0) + 1
        self.replace_counts(self.clusters_by_health, "health", counts)

    @staticmethod
    def replace_counts(gauge: Gauge, label: str, counts: dict[str, int]) -> None:
        gauge.clear()
        for value, count in counts.items():
            gauge.labels(**{label: value}).set(count)
