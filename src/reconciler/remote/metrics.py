"""Prometheus metrics of one component reconciler service, in a registry of its own.

Everything is observed where it happens (task end, callback answer, pool change), so a scrape
costs nothing. Pool occupancy is what a load balancer or the mothership's backoff cares about;
callback failures are the first sign that the mothership is unreachable.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from reconciler.observability.metrics import process_registry

TASK_BUCKETS = (0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)


class ServiceMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or process_registry("component-reconciler")
        r = self.registry
        self.tasks = Counter(
            "reconciler_component_tasks_total",
            "Tasks finished, by component and result (success, error, cancelled, abandoned).",
            ["component", "result"],
            registry=r,
        )
        self.task_duration = Histogram(
            "reconciler_component_task_duration_seconds",
            "Time from accepting a task to its result, per component.",
            ["component"],
            buckets=TASK_BUCKETS,
            registry=r,
        )
        self.pool_busy = Gauge(
            "reconciler_component_pool_busy",
            "Tasks in the pool (accepted, final callback not yet delivered or given up).",
            registry=r,
        )
        self.pool_size = Gauge(
            "reconciler_component_pool_size", "Capacity of the worker pool.", registry=r
        )
        self.runs_rejected = Counter(
            "reconciler_component_runs_rejected_total",
            "Run requests not taken, by reason (busy, invalid, unauthorized, shutting_down).",
            ["reason"],
            registry=r,
        )
        self.callbacks = Counter(
            "reconciler_component_callbacks_total",
            "Callbacks delivered to the mothership (2xx), by status.",
            ["status"],
            registry=r,
        )
        self.callback_failures = Counter(
            "reconciler_component_callback_failures_total",
            "Callback attempts that failed, by status and reason (http status or error type).",
            ["status", "reason"],
            registry=r,
        )
