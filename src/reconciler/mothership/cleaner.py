"""The cleaner: retention for finished reconciliations and old status history."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt

import structlog

from reconciler.mothership.settings import Settings
from reconciler.store.inventory import InventoryRepository
from reconciler.store.reconciliations import ReconciliationRepository

log = structlog.get_logger()


class Cleaner:
    def __init__(
        self, settings: Settings, repo: ReconciliationRepository, inventory: InventoryRepository
    ) -> None:
        self.settings = settings
        self.repo = repo
        self.inventory = inventory

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.clean()
            except Exception as exc:
                log.exception("cleaning failed", error=str(exc))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.settings.cleaner_interval)

    async def clean(self) -> tuple[int, int]:
        keep = self.settings.keep_reconciliations
        reconciliations = await self.repo.purge(
            dt.timedelta(days=self.settings.reconciliation_retention_days), keep
        )
        statuses = await self.inventory.purge_statuses(
            dt.timedelta(days=self.settings.status_retention_days), keep
        )
        if reconciliations or statuses:
            log.info("purged history", reconciliations=reconciliations, statuses=statuses)
        return reconciliations, statuses
