"""The cleaner: retention for finished reconciliations and old status history."""

from __future__ import annotations

import asyncio
import datetime as dt

import structlog

from reconciler.mothership.loops import each, run_every
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
        await run_every("cleaning", self.settings.cleaner_interval, self.clean, stop)

    async def clean(self) -> dict[str, int]:
        """Purge each kind of history on its own: a failure in one never keeps the other."""
        keep = self.settings.keep_reconciliations
        purges = {
            "reconciliations": lambda: self.repo.purge(
                dt.timedelta(days=self.settings.reconciliation_retention_days), keep
            ),
            "statuses": lambda: self.inventory.purge_statuses(
                dt.timedelta(days=self.settings.status_retention_days), keep
            ),
        }
        purged: dict[str, int] = {}

        async def purge(kind: str) -> None:
            purged[kind] = await purges[kind]()

        await each("purging history", purges, purge, lambda kind: {"kind": kind})
        if any(purged.values()):
            log.info("purged history", **purged)
        return purged
