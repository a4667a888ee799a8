"""The scheduler: turns clusters that need work into reconciliations.

`reconcile_pending` / `delete_pending` clusters are picked up as soon as a change wakes the
scheduler (in-process event, or LISTEN/NOTIFY on PostgreSQL); `ready` clusters whose status is
older than the reconcile interval, and `*_error_retryable` ones older than the retry interval, on
the periodic sweep, which is also the safety net for lost wake-ups. Pending clusters come first,
and no more than `max_active_reconciliations` run at once, so the operation queue stays short at
any fleet size. Creating a reconciliation takes the cluster's lock; a second scheduler (another
instance) simply loses that race.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools

import structlog

from reconciler.errors import ReconcilerError
from reconciler.model.cluster import Head
from reconciler.model.health import RunOutcome
from reconciler.model.status import ClusterStatus, OperationType
from reconciler.mothership.loops import each, run_every
from reconciler.mothership.notifier import Channel, Notifier
from reconciler.mothership.planner import Planner
from reconciler.mothership.settings import Settings
from reconciler.store.inventory import InventoryRepository
from reconciler.store.reconciliations import ReconciliationRepository

log = structlog.get_logger()
S = ClusterStatus


class Scheduler:
    def __init__(
        self,
        settings: Settings,
        inventory: InventoryRepository,
        repo: ReconciliationRepository,
        planner: Planner,
        notifier: Notifier,
    ) -> None:
        self.settings = settings
        self.inventory = inventory
        self.repo = repo
        self.planner = planner
        self.notifier = notifier

    async def run(self, stop: asyncio.Event) -> None:
        await run_every(
            "scheduler sweep",
            self.settings.sweep_interval,
            self.sweep,
            stop,
            pause=functools.partial(self.notifier.wait, Channel.CLUSTERS),
        )

    async def sweep(self) -> int:
        """Schedule everything due now; return how many reconciliations were created."""
        active = await self.repo.active_count()
        room = max(self.settings.max_active_reconciliations - active, 0)
        if room == 0:
            return 0  # at the limit: reading the due clusters would only be thrown away
        now = self.inventory.clock()
        due: list[Head] = []
        for statuses, interval in (
            ((S.RECONCILE_PENDING, S.DELETE_PENDING), None),
            ((S.READY,), self.settings.reconcile_interval),
            ((S.RECONCILE_ERROR_RETRYABLE, S.DELETE_ERROR_RETRYABLE), self.settings.retry_interval),
        ):
            if len(due) >= room:
                break
            before = None if interval is None else now - dt.timedelta(seconds=interval)
            due += await self.inventory.heads(
                statuses, changed_before=before, limit=room - len(due)
            )
        created = 0

        async def schedule(head: Head) -> None:
            nonlocal created
            if await self.schedule(head):
                created += 1
                await self.notifier.notify(Channel.OPERATIONS)  # workers start on it at once

        await each("scheduling a cluster", due, schedule, lambda h: {"runtime_id": h.runtime_id})
        return created

    async def schedule(self, head: Head) -> bool:
        task_type = OperationType.DELETE if head.status.deleting else OperationType.RECONCILE
        bound = log.bind(runtime_id=head.runtime_id)
        try:
            state = await self.inventory.latest(head.runtime_id)
            planned = self.planner.operations(state, task_type)
        except ReconcilerError as exc:
            bound.error("cannot plan reconciliation", error=str(exc))
            await self._fail_planning(head, task_type, f"cannot plan the run: {exc}")
            return False
        scheduling_id = await self.repo.create(
            head.runtime_id,
            state.cluster_version,
            state.config_version,
            task_type,
            planned,
            seen=(head.status, head.status_changed),
        )
        if scheduling_id is None:
            return False  # another reconciliation is active (or another instance won)
        bound.info(
            "reconciliation scheduled",
            scheduling_id=scheduling_id,
            operations=len(planned),
            type=task_type.value,
        )
        return True

    async def _fail_planning(self, head: Head, task_type: OperationType, reason: str) -> None:
        working, failed = (
            (S.DELETING, S.DELETE_ERROR)
            if task_type is OperationType.DELETE
            else (S.RECONCILING, S.ERROR)
        )
        try:
            async with self.inventory.exclusive(head.runtime_id) as conn:
                await self.inventory.set_status(head.runtime_id, working, conn=conn)
                await self.inventory.record_result(
                    head.runtime_id, RunOutcome.failed(head.config_version, reason), conn
                )
                await self.inventory.set_status(head.runtime_id, failed, conn=conn)
        except ReconcilerError as exc:
            log.warning(
                "cannot record planning failure", runtime_id=head.runtime_id, error=str(exc)
            )
