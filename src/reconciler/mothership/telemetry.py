"""Keeps the state metrics of this instance current (see observability/metrics.py)."""

from __future__ import annotations

import asyncio
from collections import Counter

from sqlalchemy.ext.asyncio import AsyncEngine

from reconciler.mothership.loops import run_every
from reconciler.mothership.workers import WorkerPool
from reconciler.observability.metrics import HealthSample, Metrics
from reconciler.store.inventory import InventoryRepository
from reconciler.store.reconciliations import ReconciliationRepository


class MetricsRefresher:
    def __init__(
        self,
        metrics: Metrics,
        inventory: InventoryRepository,
        repo: ReconciliationRepository,
        workers: WorkerPool,
        db: AsyncEngine,
        interval: float = 5.0,
    ) -> None:
        self.metrics = metrics
        self.inventory = inventory
        self.repo = repo
        self.workers = workers
        self.db = db
        self.interval = interval

    async def refresh(self) -> None:
        statuses = await self.inventory.statuses()
        self.metrics.set_cluster_statuses(statuses)
        self.metrics.replace_counts(
            self.metrics.clusters, "status", dict(Counter(s for _, s in statuses))
        )
        self.metrics.set_cluster_healths(
            HealthSample(
                h.runtime_id,
                h.health.value,
                h.evidence.consecutive_failures,
                h.evidence.last_success.timestamp() if h.evidence.last_success else None,
            )
            for h in await self.inventory.healths()
        )
        by_state, active = await self.repo.counts()
        self.metrics.replace_counts(self.metrics.operations, "state", by_state)
        self.metrics.reconciliations_active.set(active)
        self.metrics.worker_occupancy.set(self.workers.occupancy)
        pool = self.db.pool
        for kind in ("size", "checkedout", "overflow"):
            reader = getattr(pool, kind, None)
            if callable(reader):
                # a queue pool counts its overflow from -size up: only what is beyond is overflow
                value = max(0, reader()) if kind == "overflow" else reader()
                self.metrics.db_pool.labels(kind=kind).set(value)

    async def run(self, stop: asyncio.Event) -> None:
        await run_every("metrics refresh", self.interval, self.refresh, stop)
