"""The bookkeeper: declares silent operations orphans and finishes reconciliations.

A reconciliation is finished when nothing is left to run. All operations done → the cluster is
`ready` (or `deleted`); an operation failed for good → operations blocked behind it end as
errors naming it, and the cluster is `error` (`reconcile_error_retryable` when every failure was
transient, so the scheduler tries again after the retry interval).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools

import structlog

from reconciler.model.health import NOT_RUN, RunOutcome
from reconciler.model.operation import Operation, Reconciliation
from reconciler.model.status import ClusterStatus, OperationState, OperationType
from reconciler.mothership.loops import each, run_every
from reconciler.mothership.notifier import Channel, Notifier
from reconciler.mothership.settings import Settings
from reconciler.store.reconciliations import ReconciliationRepository

log = structlog.get_logger()
S = ClusterStatus
FAILED_FOR_GOOD = (OperationState.ERROR, OperationState.CLIENT_ERROR)


def outcome(reconciliation: Reconciliation, ops: list[Operation]) -> ClusterStatus:
    """The cluster status a finished reconciliation leads to."""
    deleting = reconciliation.type is OperationType.DELETE
    failures = [op for op in ops if op.state in FAILED_FOR_GOOD]
    if not failures:
        return S.DELETED if deleting else S.READY
    if all(op.transient for op in failures):
        return S.DELETE_ERROR_RETRYABLE if deleting else S.RECONCILE_ERROR_RETRYABLE
    return S.DELETE_ERROR if deleting else S.ERROR


class Bookkeeper:
    def __init__(
        self, settings: Settings, repo: ReconciliationRepository, notifier: Notifier
    ) -> None:
        self.settings = settings
        self.repo = repo
        self.notifier = notifier

    async def run(self, stop: asyncio.Event) -> None:
        await run_every(
            "bookkeeping",
            self.settings.bookkeeping_interval,
            self.tick,
            stop,
            pause=functools.partial(self.notifier.wait, Channel.FINISHED),
        )

    async def tick(self) -> int:
        orphans = await self.repo.orphan_stale(dt.timedelta(seconds=self.settings.orphan_timeout))
        if orphans:
            log.warning("operations orphaned", count=orphans)
            await self.notifier.notify(Channel.OPERATIONS)
        finished = await each(
            "finishing a reconciliation",
            await self.repo.finishable(),
            self._finish,
            lambda item: {
                "runtime_id": item[0].runtime_id,
                "scheduling_id": item[0].scheduling_id,
            },
        )
        if finished:
            await self.notifier.notify(Channel.CLUSTERS)
        return finished

    async def _finish(self, item: tuple[Reconciliation, list[Operation]]) -> None:
        reconciliation, ops = item
        failed = [op for op in ops if op.state in FAILED_FOR_GOOD]
        if failed and any(op.state is OperationState.NEW for op in ops):
            await self.repo.cancel_blocked(
                reconciliation.scheduling_id,
                f"{NOT_RUN}{failed[0].component} failed",
            )
        status = outcome(reconciliation, ops)
        result = await self.repo.finish(
            reconciliation, status, RunOutcome.of(reconciliation.config_version, ops)
        )
        log.info(
            "reconciliation finished",
            runtime_id=reconciliation.runtime_id,
            scheduling_id=reconciliation.scheduling_id,
            status=status.value,
            cluster_status=result.value if result else None,
        )
