"""Reconciliations and their operations: creation, claiming, state changes, finishing.

At most one active reconciliation per cluster: `reconciliations.lock` holds the runtime id while
active and has a unique index. Operations are claimed with compare-and-set (`UPDATE ... WHERE
state = <seen>`), after `SELECT ... FOR UPDATE SKIP LOCKED` on PostgreSQL so concurrent engines
do not even contend; only operations of the lowest unfinished priority of their reconciliation
are claimable. Final states never change. Reads and purging: `reconciliation_queries.py`.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from reconciler.errors import ConflictError
from reconciler.model.cluster import ClusterState
from reconciler.model.health import RunOutcome
from reconciler.model.operation import Operation, PlannedOperation, Reconciliation
from reconciler.model.status import CLAIMABLE, ClusterStatus, OperationState, OperationType
from reconciler.store.inventory import InventoryRepository, StaleStatus
from reconciler.store.reconciliation_queries import (
    ReconciliationQueries,
    operation_from_row,
    reconciliation_from_row,
)
from reconciler.store.tables import operations, reconciliations
from reconciler.util.clock import Clock, utcnow

FINAL = [s.value for s in OperationState if s.final]

# Parts of the claim query, built once: constructing aliases costs more CPU than the claim's SQL.
_BUSY = operations.alias("busy")
_RUNNING = (
    sa.select(_BUSY.c.runtime_id, sa.func.count().label("running"))
    .where(_BUSY.c.state == OperationState.IN_PROGRESS.value)
    .group_by(_BUSY.c.runtime_id)
    .subquery("running")
)
_in_progress = sa.func.coalesce(_RUNNING.c.running, 0)
"""Operations of the row's cluster in progress right now (any worker, any instance)."""
_OTHER = operations.alias("other")
_LOWEST_OPEN = (
    sa.select(sa.func.min(_OTHER.c.priority))
    .where(_OTHER.c.scheduling_id == operations.c.scheduling_id)
    .where(_OTHER.c.state != OperationState.DONE.value)
    .scalar_subquery()
)
"""The lowest priority of the row's reconciliation that is not done: only it is claimable."""


class ReconciliationRepository(ReconciliationQueries):
    """Creates reconciliations, claims operations and moves them (and the cluster) along; the
    reads it inherits from `ReconciliationQueries`."""

    def __init__(
        self, engine: AsyncEngine, inventory: InventoryRepository, clock: Clock = utcnow
    ) -> None:
        super().__init__(engine, clock)
        self.inventory = inventory

    async def create(
        self,
        runtime_id: str,
        cluster_version: int,
        config_version: int,
        task_type: OperationType,
        planned: Sequence[PlannedOperation],
        *,
        seen: tuple[ClusterStatus, dt.datetime] | None = None,
    ) -> str | None:
        """Create the reconciliation and its operations and move the cluster to
        reconciling/deleting, all in one transaction; None when one is already active, or
        when the cluster's status is no longer the one the caller `seen` (another instance
        got there first)."""
        scheduling_id = f"{runtime_id}--{uuid.uuid4()}"
        status = (
            ClusterStatus.DELETING
            if task_type is OperationType.DELETE
            else ClusterStatus.RECONCILING
        )
        now = self.clock()
        try:
            async with self.inventory.exclusive(runtime_id) as conn:
                state = await self.inventory.set_status(
                    runtime_id, status, config_version=config_version, conn=conn, seen=seen
                )
                await conn.execute(
                    reconciliations.insert().values(
                        scheduling_id=scheduling_id,
                        runtime_id=runtime_id,
                        cluster_version=cluster_version,
                        config_version=state.config_version,
                        status_id=0,
                        type=task_type.value,
                        status=status.value,
                        lock=runtime_id,
                        created=now,
                        updated=now,
                    )
                )
                if planned:
                    await conn.execute(
                        operations.insert(),
                        [
                            {
                                "scheduling_id": scheduling_id,
                                "correlation_id": f"{runtime_id}--{uuid.uuid4()}",
                                "runtime_id": runtime_id,
                                "config_version": config_version,
                                "priority": op.priority,
                                "component": op.component,
                                "namespace": op.namespace,
                                "type": task_type.value,
                                "state": OperationState.NEW.value,
                                "reason": "",
                                "retries": 0,
                                "transient": False,
                                "worker": "",
                                "created": now,
                                "updated": now,
                                "not_before": now,
                            }
                            for op in planned
                        ],
                    )
        except (IntegrityError, StaleStatus):
            return None
        return scheduling_id

    async def claim(
        self, worker: str, limit: int, *, per_cluster: int = 4, exclude: Sequence[str] = ()
    ) -> list[Operation]:
        """Take up to `limit` processable operations for `worker` (state -> in_progress).

        No cluster gets more than `per_cluster` operations in progress, counting those already
        running (any worker, any instance) and not only this batch: clusters at the limit are
        left out of the candidates, so they leave room for the others too."""
        now = self.clock()
        query = (
            sa.select(operations, _in_progress.label("in_progress"))
            .outerjoin(_RUNNING, _RUNNING.c.runtime_id == operations.c.runtime_id)
            .where(operations.c.state.in_([s.value for s in CLAIMABLE]))
            .where(operations.c.not_before <= now)
            .where(operations.c.priority == _LOWEST_OPEN)
            .where(_in_progress < per_cluster)
            .order_by(operations.c.updated)
            .limit(limit * 3)
        )
        if exclude:
            query = query.where(operations.c.runtime_id.not_in(list(exclude)))
        if self.postgres:
            query = query.with_for_update(skip_locked=True, of=operations)
        async with self.engine.begin() as conn:
            rows = (await conn.execute(query)).mappings().all()
            per_runtime = {row["runtime_id"]: int(row["in_progress"]) for row in rows}
            chosen: list[Any] = []
            for row in rows:
                if len(chosen) >= limit:
                    break
                if per_runtime.get(row["runtime_id"], 0) >= per_cluster:
                    continue  # fairness: leave room for other clusters
                per_runtime[row["runtime_id"]] = per_runtime.get(row["runtime_id"], 0) + 1
                chosen.append(row)
            if not chosen:
                return []
            key = sa.tuple_(operations.c.scheduling_id, operations.c.correlation_id)
            taken = await conn.execute(
                operations.update()
                .where(key.in_([(r["scheduling_id"], r["correlation_id"]) for r in chosen]))
                .where(operations.c.state.in_([s.value for s in CLAIMABLE]))
                # a new attempt: what blocked the last one is no longer known to block
                .values(
                    state=OperationState.IN_PROGRESS.value, worker=worker, updated=now, blocker=""
                )
                .returning(operations.c.scheduling_id, operations.c.correlation_id)
            )
            won = {tuple(row) for row in taken.all()}
        # `updated` stays the time of the last state change: the worker reports the queue wait
        return [
            operation_from_row(
                {**row, "state": OperationState.IN_PROGRESS.value, "worker": worker, "blocker": ""}
            )
            for row in chosen
            if (row["scheduling_id"], row["correlation_id"]) in won
        ]

    async def update(
        self,
        key: tuple[str, str],
        state: OperationState,
        *,
        expect: Sequence[OperationState] = (OperationState.IN_PROGRESS,),
        reason: str | None = None,
        retry_after: dt.timedelta | None = None,
        transient: bool | None = None,
        worker: str | None = None,
        count_retry: bool = True,
        new_worker: str | None = None,
        blocker: str | None = None,
    ) -> bool:
        """Compare-and-set the state of one operation; False when it was not in `expect`.
        `blocker`: what keeps the component from being ready ("" clears it; None keeps it)."""
        now = self.clock()
        values: dict[str, Any] = {"state": state.value, "updated": now}
        if reason is not None:
            values["reason"] = reason
        if blocker is not None:
            values["blocker"] = blocker
        if transient is not None:
            values["transient"] = transient
        if retry_after is not None:
            if count_retry:
                values["retries"] = operations.c.retries + 1
            values["not_before"] = now + retry_after
        if new_worker is not None:
            values["worker"] = new_worker
        query = (
            operations.update()
            .where(operations.c.scheduling_id == key[0])
            .where(operations.c.correlation_id == key[1])
            .where(operations.c.state.in_([s.value for s in expect]))
            .where(operations.c.state.not_in(FINAL))
            .values(**values)
        )
        if worker is not None:
            query = query.where(operations.c.worker == worker)
        async with self.engine.begin() as conn:
            return (await conn.execute(query)).rowcount == 1

    async def heartbeat(
        self, key: tuple[str, str], worker: str, blocker: str | None = None
    ) -> bool:
        """Mark an in-progress operation as alive (it is not an orphan), with what blocks it
        now when that changed."""
        values: dict[str, Any] = {"updated": self.clock()}
        if blocker is not None:
            values["blocker"] = blocker
        async with self.engine.begin() as conn:
            result = await conn.execute(
                operations.update()
                .where(operations.c.scheduling_id == key[0])
                .where(operations.c.correlation_id == key[1])
                .where(operations.c.state == OperationState.IN_PROGRESS.value)
                .where(operations.c.worker == worker)
                .values(**values)
            )
            return result.rowcount == 1

    async def orphan_stale(self, older_than: dt.timedelta, max_retries: int = 3) -> int:
        """In-progress operations without a sign of life for `older_than` become `orphan` (and
        count an attempt); one that went silent more than `max_retries` times ends as an error,
        so an operation that kills its worker every time cannot loop forever."""
        cutoff = self.clock() - older_than
        silent = (
            operations.update()
            .where(operations.c.state == OperationState.IN_PROGRESS.value)
            .where(operations.c.updated < cutoff)
        )
        async with self.engine.begin() as conn:
            await conn.execute(
                silent.where(operations.c.retries >= max_retries).values(
                    state=OperationState.ERROR.value,
                    updated=self.clock(),
                    transient=True,
                    reason=f"no heartbeat within the orphan timeout, {max_retries + 1} times",
                )
            )
            result = await conn.execute(
                silent.values(
                    state=OperationState.ORPHAN.value,
                    updated=self.clock(),
                    retries=operations.c.retries + 1,
                    reason="no heartbeat within the orphan timeout",
                )
            )
            return int(result.rowcount)

    async def finishable(self, limit: int = 500) -> list[tuple[Reconciliation, list[Operation]]]:
        """Active reconciliations with nothing left to run: no operation is in progress, orphaned
        or waiting for a retry, and either none is new or one has failed for good (the new ones
        are then blocked behind it).

        One pass over the active reconciliations' operations, counted per state, instead of an
        EXISTS per state: SQLite answered `EXISTS (... state = 'new')` through the state index,
        reading every new operation of the fleet for each active reconciliation (0.7 s a tick
        with 500 active reconciliations and 6,000 queued operations)."""

        def count(*states: OperationState) -> sa.ColumnElement[int]:
            hit = sa.case((operations.c.state.in_([s.value for s in states]), 1), else_=0)
            return sa.func.coalesce(sa.func.sum(hit), 0)  # 0 for a plan without operations

        done = (
            sa.select(reconciliations.c.scheduling_id)
            .outerjoin(operations, operations.c.scheduling_id == reconciliations.c.scheduling_id)
            .where(reconciliations.c.lock.is_not(None))
            .group_by(reconciliations.c.scheduling_id)
            .having(
                count(OperationState.IN_PROGRESS, OperationState.ORPHAN, OperationState.FAILED) == 0
            )
            .having(
                sa.or_(
                    count(OperationState.NEW) == 0,
                    count(OperationState.ERROR, OperationState.CLIENT_ERROR) > 0,
                )
            )
            .subquery("done")
        )
        query = (
            sa.select(reconciliations)
            .join(done, done.c.scheduling_id == reconciliations.c.scheduling_id)
            .order_by(reconciliations.c.created)
            .limit(limit)
        )
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query)).mappings().all()
            return [
                (reconciliation_from_row(r), await self._operations(conn, r["scheduling_id"]))
                for r in rows
            ]

    async def cancel_blocked(self, scheduling_id: str, reason: str) -> None:
        """Operations that can never run (an earlier group failed) end as `error`."""
        async with self.engine.begin() as conn:
            await conn.execute(
                operations.update()
                .where(operations.c.scheduling_id == scheduling_id)
                .where(operations.c.state == OperationState.NEW.value)
                .values(state=OperationState.ERROR.value, reason=reason, updated=self.clock())
            )

    async def finish(
        self,
        reconciliation: Reconciliation,
        status: ClusterStatus,
        outcome: RunOutcome | None = None,
    ) -> ClusterStatus | None:
        """Release the lock and record the cluster's resulting status, in one transaction.

        The run's `outcome` always becomes the cluster's health evidence: it is what the
        cluster proved, whatever was requested meanwhile. The status, though, only replaces
        the one the run itself set (`reconciling`/`deleting`). A request that arrived while it
        ran (a new configuration, a forced run, a deletion, a disable) is newer than the
        outcome: it stays, and a pending one is scheduled at once. Returns the cluster's status
        afterwards, None when the lock was already released."""
        working = ClusterStatus.DELETING if status.deleting else ClusterStatus.RECONCILING
        async with self.inventory.exclusive(reconciliation.runtime_id) as conn:
            released = await conn.execute(
                reconciliations.update()
                .where(reconciliations.c.scheduling_id == reconciliation.scheduling_id)
                .where(reconciliations.c.lock.is_not(None))
                .values(lock=None, status=status.value, updated=self.clock())
            )
            if released.rowcount != 1:
                return None
            if outcome is not None and status is not ClusterStatus.DELETED:
                await self.inventory.record_result(reconciliation.runtime_id, outcome, conn)
            current = await self.inventory.head_status(reconciliation.runtime_id, conn)
            if current is not working:
                return current  # changed while it ran: the newer request wins
            await self.inventory.set_status(reconciliation.runtime_id, status, conn=conn)
            return status

    async def forget(self, runtime_id: str, reason: str) -> ClusterState:
        """Mark the cluster deleted without uninstalling anything (its infrastructure is gone),
        in one transaction: its active reconciliation ends (open operations as errors with
        `reason`; a worker or component reconciler still on one finds its result refused), the
        lock is released, and the inventory is marked deleted. NotFoundError when unknown."""
        now = self.clock()
        async with self.inventory.exclusive(runtime_id) as conn:
            active = (
                await conn.execute(
                    sa.select(reconciliations.c.scheduling_id).where(
                        reconciliations.c.lock == runtime_id
                    )
                )
            ).scalar_one_or_none()
            if active is not None:
                await conn.execute(
                    operations.update()
                    .where(operations.c.scheduling_id == active)
                    .where(operations.c.state.not_in(FINAL))
                    .values(state=OperationState.ERROR.value, reason=reason, updated=now)
                )
                await conn.execute(
                    reconciliations.update()
                    .where(reconciliations.c.scheduling_id == active)
                    .values(lock=None, status=ClusterStatus.DELETED.value, updated=now)
                )
            return await self.inventory.forget(runtime_id, conn)

    async def stop(self, scheduling_id: str, correlation_id: str, reason: str) -> None:
        """Stop an operation that has not started; ConflictError for any other state."""
        op = await self.operation(scheduling_id, correlation_id)
        stopped = await self.update(
            op.key,
            OperationState.ERROR,
            expect=(OperationState.NEW,),
            reason=f"stopped: {reason}" if reason else "stopped",
        )
        if not stopped:
            raise ConflictError(
                f"operation {correlation_id} is {op.state}, only a new operation can be stopped"
            )
