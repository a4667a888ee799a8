"""Reading reconciliations and their operations, and deleting old ones (retention).

The read side of `reconciliations.py`: listings and lookups for the API and the loops, counts for
metrics, and purging. Nothing here changes an operation's state; `ReconciliationRepository`
(claiming and transitions) builds on it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from reconciler.errors import NotFoundError
from reconciler.model.operation import Operation, Reconciliation
from reconciler.model.status import ClusterStatus, OperationState, OperationType
from reconciler.store.retention import beyond_newest
from reconciler.store.tables import operations, reconciliations
from reconciler.util.clock import Clock, aware, utcnow


def operation_from_row(row: Any) -> Operation:
    return Operation(
        scheduling_id=row["scheduling_id"],
        correlation_id=row["correlation_id"],
        runtime_id=row["runtime_id"],
        config_version=row["config_version"],
        priority=row["priority"],
        component=row["component"],
        namespace=row["namespace"],
        type=OperationType(row["type"]),
        state=OperationState(row["state"]),
        reason=row["reason"],
        retries=row["retries"],
        transient=row["transient"],
        worker=row["worker"],
        created=aware(row["created"]),
        updated=aware(row["updated"]),
        blocker=row.get("blocker") or "",
    )


def reconciliation_from_row(row: Any) -> Reconciliation:
    return Reconciliation(
        scheduling_id=row["scheduling_id"],
        runtime_id=row["runtime_id"],
        cluster_version=row["cluster_version"],
        config_version=row["config_version"],
        type=OperationType(row["type"]),
        status=ClusterStatus(row["status"]),
        active=row["lock"] is not None,
        created=aware(row["created"]),
        updated=aware(row["updated"]),
    )


class ReconciliationQueries:
    def __init__(self, engine: AsyncEngine, clock: Clock = utcnow) -> None:
        self.engine = engine
        self.clock = clock

    @property
    def postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    async def _operations(self, conn: AsyncConnection, scheduling_id: str) -> list[Operation]:
        rows = (
            (
                await conn.execute(
                    sa.select(operations)
                    .where(operations.c.scheduling_id == scheduling_id)
                    .order_by(operations.c.priority, operations.c.component)
                )
            )
            .mappings()
            .all()
        )
        return [operation_from_row(r) for r in rows]

    async def get(self, scheduling_id: str) -> tuple[Reconciliation, list[Operation]]:
        async with self.engine.connect() as conn:
            row = (
                (
                    await conn.execute(
                        sa.select(reconciliations).where(
                            reconciliations.c.scheduling_id == scheduling_id
                        )
                    )
                )
                .mappings()
                .first()
            )
            if row is None:
                raise NotFoundError(f"reconciliation {scheduling_id} not found")
            return reconciliation_from_row(row), await self._operations(conn, scheduling_id)

    async def operation(self, scheduling_id: str, correlation_id: str) -> Operation:
        async with self.engine.connect() as conn:
            row = (
                (
                    await conn.execute(
                        sa.select(operations)
                        .where(operations.c.scheduling_id == scheduling_id)
                        .where(operations.c.correlation_id == correlation_id)
                    )
                )
                .mappings()
                .first()
            )
        if row is None:
            raise NotFoundError(f"operation {correlation_id} of {scheduling_id} not found")
        return operation_from_row(row)

    async def find_by_correlation(self, correlation_id: str) -> Operation:
        async with self.engine.connect() as conn:
            row = (
                (
                    await conn.execute(
                        sa.select(operations).where(operations.c.correlation_id == correlation_id)
                    )
                )
                .mappings()
                .first()
            )
        if row is None:
            raise NotFoundError(f"operation {correlation_id} not found")
        return operation_from_row(row)

    async def list(
        self,
        *,
        runtime_ids: Sequence[str] = (),
        statuses: Sequence[str] = (),
        before: dt.datetime | None = None,
        after: dt.datetime | None = None,
        last: int | None = None,
        limit: int = 1000,
    ) -> list[Reconciliation]:
        query = sa.select(reconciliations)
        if runtime_ids:
            query = query.where(reconciliations.c.runtime_id.in_(list(runtime_ids)))
        if statuses:
            query = query.where(reconciliations.c.status.in_(list(statuses)))
        if before is not None:
            query = query.where(reconciliations.c.created < before)
        if after is not None:
            query = query.where(reconciliations.c.created > after)
        query = query.order_by(reconciliations.c.created.desc()).limit(last or limit)
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query)).mappings().all()
        return [reconciliation_from_row(r) for r in rows]

    async def latest_for(self, runtime_id: str) -> Reconciliation | None:
        found = await self.list(runtime_ids=[runtime_id], last=1)
        return found[0] if found else None

    async def delete_for_cluster(self, runtime_id: str) -> int:
        """Remove the finished reconciliations of a cluster (active ones are kept)."""
        async with self.engine.begin() as conn:
            ids = sa.select(reconciliations.c.scheduling_id).where(
                reconciliations.c.runtime_id == runtime_id, reconciliations.c.lock.is_(None)
            )
            await conn.execute(operations.delete().where(operations.c.scheduling_id.in_(ids)))
            result = await conn.execute(
                reconciliations.delete()
                .where(reconciliations.c.runtime_id == runtime_id)
                .where(reconciliations.c.lock.is_(None))
            )
            return int(result.rowcount)

    async def purge(self, older_than: dt.timedelta, keep_latest: int) -> int:
        """Delete finished reconciliations older than `older_than`, keeping the newest
        `keep_latest` of each cluster."""
        cutoff = self.clock() - older_than
        doomed = beyond_newest(
            reconciliations.c.scheduling_id,
            reconciliations.c.runtime_id,
            reconciliations.c.created.desc(),
            keep_latest,
            reconciliations.c.lock.is_(None),
        )
        async with self.engine.begin() as conn:
            await conn.execute(
                operations.delete()
                .where(operations.c.scheduling_id.in_(doomed))
                .where(operations.c.created < cutoff)
            )
            result = await conn.execute(
                reconciliations.delete()
                .where(reconciliations.c.scheduling_id.in_(doomed))
                .where(reconciliations.c.created < cutoff)
            )
            return int(result.rowcount)

    async def active_count(self) -> int:
        async with self.engine.connect() as conn:
            count = await conn.execute(
                sa.select(sa.func.count()).where(reconciliations.c.lock.is_not(None))
            )
            return int(count.scalar_one())

    async def counts(self) -> tuple[dict[str, int], int]:
        """(operations by state, active reconciliations)."""
        async with self.engine.connect() as conn:
            rows = await conn.execute(
                sa.select(operations.c.state, sa.func.count()).group_by(operations.c.state)
            )
            by_state = {str(state): int(count) for state, count in rows.all()}
            active = (
                await conn.execute(
                    sa.select(sa.func.count()).where(reconciliations.c.lock.is_not(None))
                )
            ).scalar_one()
        return by_state, int(active)
