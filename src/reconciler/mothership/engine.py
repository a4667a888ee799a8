"""Wiring: one mothership instance = database + repositories + scheduler + workers +
bookkeeper + cleaner, started and stopped together.

Several instances may share one PostgreSQL database (claims and locks keep them apart); SQLite
is for one instance. `Engine.service` is the Python API for the REST layer and tests.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable, Coroutine
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from reconciler.charts.sources import ChartCache
from reconciler.core.actions import ActionRegistry
from reconciler.core.charts import HelmChartProvider
from reconciler.core.runner import ComponentReconciler
from reconciler.mothership.bookkeeper import Bookkeeper
from reconciler.mothership.cleaner import Cleaner
from reconciler.mothership.invoker import InProcessInvoker, Invoker
from reconciler.mothership.notifier import Notifier, PostgresNotifier
from reconciler.mothership.planner import Planner
from reconciler.mothership.remote_invoker import RemoteInvoker
from reconciler.mothership.scheduler import Scheduler
from reconciler.mothership.service import MothershipService
from reconciler.mothership.settings import Settings, SettingsError
from reconciler.mothership.telemetry import MetricsRefresher
from reconciler.mothership.workers import WorkerPool
from reconciler.observability.metrics import Metrics
from reconciler.store.callback_secrets import CallbackSecrets
from reconciler.store.crypto import Cipher
from reconciler.store.db import check_reachable, is_postgres, make_engine, migrate
from reconciler.store.inventory import InventoryRepository
from reconciler.store.reconciliations import ReconciliationRepository

log = structlog.get_logger()
InvokerFactory = Callable[[Planner], Invoker]


def _configured_invoker(name: str) -> InvokerFactory | None:
    if name in ("inprocess", "remote"):
        return None
    prefix, _, target = name.partition(":")
    module_name, _, attribute = target.partition(":")
    if prefix != "import" or not module_name or not attribute:
        raise SettingsError(
            f"invoker {name!r}: expected 'inprocess' or 'import:package.module:factory'"
        )
    factory: InvokerFactory = getattr(importlib.import_module(module_name), attribute)
    return factory


def build_invoker(
    settings: Settings,
    planner: Planner,
    metrics: Metrics,
    db: AsyncEngine,
    factory: InvokerFactory | None = None,
) -> Invoker:
    """The invoker `settings.invoker` names (or `factory`, for tests and benchmarks)."""
    factory = factory or _configured_invoker(settings.invoker)
    if factory is not None:
        return factory(planner)
    if settings.invoker == "remote":
        return RemoteInvoker(planner, settings, CallbackSecrets(db), metrics)
    return InProcessInvoker(
        planner,
        ComponentReconciler(
            HelmChartProvider(
                ChartCache(settings.charts_cache, max_bytes=settings.charts_cache_max_bytes)
            ),
            ActionRegistry.from_entry_points(),
            full_after=settings.full_reconcile_after,
        ),
        timeout=settings.operation_timeout,
    )


class Engine:
    """One mothership instance, complete once constructed: every collaborator is built here, in
    one place. `start` only does what needs the event loop and the database (migrations,
    LISTEN, the loops); `stop` undoes it."""

    def __init__(
        self,
        settings: Settings,
        *,
        invoker: InvokerFactory | None = None,
        worker: str | None = None,
        run_loops: bool = True,
    ) -> None:
        self.settings = settings
        self._run_loops = run_loops
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.db: AsyncEngine = make_engine(
            settings.sqlalchemy_url(), pool_size=max(settings.workers, 5)
        )
        self.api_db: AsyncEngine = make_engine(
            settings.sqlalchemy_url(),
            pool_size=settings.api_pool_size,
            pool_timeout=settings.api_pool_timeout,
        )
        """The REST API's own connections (`service`): a flood of readers waits for these,
        never for the engine's loops' connections."""
        cipher = Cipher.from_file(settings.key_file(), create=not settings.database_url)
        self.inventory = InventoryRepository(self.db, cipher)
        self.repo = ReconciliationRepository(self.db, self.inventory)
        api_inventory = self.inventory.on(self.api_db)
        api_repo = ReconciliationRepository(self.api_db, api_inventory)
        self.notifier: Notifier = PostgresNotifier(self.db) if is_postgres(self.db) else Notifier()
        self.planner = Planner(settings)
        self.metrics = Metrics()
        self.invoker = build_invoker(settings, self.planner, self.metrics, self.db, invoker)
        self.service = MothershipService(api_inventory, api_repo, self.notifier)
        self.scheduler = Scheduler(settings, self.inventory, self.repo, self.planner, self.notifier)
        self.workers = WorkerPool(
            settings, self.repo, self.inventory, self.invoker, self.notifier, worker, self.metrics
        )
        self.telemetry = MetricsRefresher(
            self.metrics,
            self.inventory,
            self.repo,
            self.workers,
            self.db,
            interval=settings.metrics_interval,
        )
        self.bookkeeper = Bookkeeper(settings, self.repo, self.notifier)
        self.cleaner = Cleaner(settings, self.repo, self.inventory)

    async def start(self) -> Engine:
        await check_reachable(self.db)
        if self.settings.migrate_on_start:
            await migrate(self.db)
        await self.notifier.start()
        if self._run_loops:
            loops: list[Callable[[asyncio.Event], Coroutine[Any, Any, None]]] = [
                self.scheduler.run,
                self.workers.run,
                self.bookkeeper.run,
                self.cleaner.run,
                self.telemetry.run,  # the state gauges: refreshed at once, then every interval
            ]
            self._tasks = [asyncio.create_task(loop(self._stop)) for loop in loops]
        log.info(
            "mothership engine started", worker=self.workers.worker, database=self.db.dialect.name
        )
        return self

    async def stop(self) -> None:
        """Stop the loops; running operations are handed back as orphans (resumable)."""
        self._stop.set()
        self.notifier.wake_all()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await self.notifier.stop()
        await self.invoker.aclose()
        await self.db.dispose()
        await self.api_db.dispose()

    async def __aenter__(self) -> Engine:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
