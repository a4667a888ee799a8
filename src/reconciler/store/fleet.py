"""The fleet as a console lists it: one page of clusters, filtered, sorted and counted by the
database, so a fleet of 10,000 clusters costs one page of rows, not 10,000 loaded states.

A page row joins the inventory's head with its configuration (Kyma version) and cluster rows
(runtime name); the latest reconciliation and the failed components are looked up for the rows
of the page only. Statuses are filtered and counted as API clients see them (`*_retryable`
counts as `reconciling`/`deleting`); healths (`model/health.py`) as stored with the head. Read
only; secrets (kubeconfig, configuration values) are never selected.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from reconciler.model.health import SHOWN, Health, RunEvidence
from reconciler.model.status import ClusterStatus, OperationState
from reconciler.store.inventory import EVIDENCE, evidence_from
from reconciler.store.tables import (
    cluster_configs,
    cluster_heads,
    clusters,
    operations,
    reconciliations,
)
from reconciler.util.clock import aware

SORT_KEYS = ("runtime", "status", "health", "kyma", "changed")
FAILED_STATUSES = (
    ClusterStatus.ERROR,
    ClusterStatus.DELETE_ERROR,
    ClusterStatus.RECONCILE_ERROR_RETRYABLE,
    ClusterStatus.DELETE_ERROR_RETRYABLE,
)
PUBLIC_STATUSES: tuple[ClusterStatus, ...] = tuple(
    s for s in ClusterStatus if s.public is s and s is not ClusterStatus.DELETED
)


@dataclass(frozen=True)
class FleetQuery:
    """What a console asks for: a public status and/or a health (or none), a text contained in
    the runtime ID, name or Kyma version, a sort key of SORT_KEYS, and a page."""

    status: ClusterStatus | None = None
    health: Health | None = None
    text: str = ""
    sort: str = "runtime"
    descending: bool = False
    page: int = 1
    size: int = 50

    def __post_init__(self) -> None:
        if self.sort not in SORT_KEYS:
            raise ValueError(f"sort must be one of {', '.join(SORT_KEYS)}, not {self.sort!r}")
        if self.page < 1 or not 1 <= self.size <= 500:
            raise ValueError("page must be >= 1 and size between 1 and 500")


@dataclass(frozen=True)
class LastRun:
    scheduling_id: str
    config_version: int
    status: ClusterStatus
    created: dt.datetime


@dataclass(frozen=True)
class FleetRow:
    runtime_id: str
    runtime_name: str
    status: ClusterStatus
    status_changed: dt.datetime
    kyma_version: str
    config_version: int
    last_run: LastRun | None = None
    failures: tuple[str, ...] = ()
    """Components whose operations failed in the latest run of this configuration."""
    health: Health = Health.PROGRESSING
    evidence: RunEvidence = field(default_factory=RunEvidence)
    """What the latest finished run proved (root cause, failing since, last success)."""


@dataclass(frozen=True)
class FleetPage:
    rows: list[FleetRow]
    total: int
    """Clusters matching the query (all pages)."""
    counts: dict[ClusterStatus, int] = field(default_factory=dict)
    """Clusters per public status matching the text (whatever the status filter)."""
    health_counts: dict[Health, int] = field(default_factory=dict)
    """Clusters per health matching the text (whatever the filters)."""

    @property
    def all(self) -> int:
        return sum(self.counts.values())


def _raw(status: ClusterStatus) -> list[str]:
    return [s.value for s in ClusterStatus if s.public is status]


def _like(text: str) -> str:
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


async def _count(
    conn: AsyncConnection,
    column: sa.Column[str],
    source: sa.FromClause,
    where: list[sa.ColumnElement[bool]],
) -> list[tuple[str, int]]:
    """How many rows of `source` matching `where` have each value of `column`."""
    query = sa.select(column, sa.func.count()).select_from(source).where(*where).group_by(column)
    return [(value, int(count)) for value, count in (await conn.execute(query)).all()]


class FleetQueries:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def page(self, query: FleetQuery) -> FleetPage:
        joined = cluster_heads.join(
            cluster_configs, cluster_configs.c.version == cluster_heads.c.config_version
        ).join(clusters, clusters.c.version == cluster_configs.c.cluster_version)
        live = [cluster_heads.c.status != ClusterStatus.DELETED.value]
        if query.text:
            pattern = _like(query.text)
            live.append(
                sa.or_(
                    *(
                        sa.func.lower(column).like(pattern, escape="\\")
                        for column in (
                            cluster_heads.c.runtime_id,
                            clusters.c.runtime_name,
                            cluster_configs.c.kyma_version,
                        )
                    )
                )
            )
        wanted = list(live)
        if query.status is not None:
            wanted.append(cluster_heads.c.status.in_(_raw(query.status)))
        if query.health is not None:
            wanted.append(cluster_heads.c.health == query.health.value)
        order = {
            "runtime": cluster_heads.c.runtime_id,
            "status": cluster_heads.c.status,
            "health": cluster_heads.c.health,
            "kyma": cluster_configs.c.kyma_version,
            "changed": cluster_heads.c.status_changed,
        }[query.sort]
        rows_query = (
            sa.select(
                cluster_heads.c.runtime_id,
                cluster_heads.c.status,
                cluster_heads.c.status_changed,
                cluster_heads.c.config_version,
                cluster_configs.c.kyma_version,
                clusters.c.runtime_name,
                cluster_heads.c.health,
                *EVIDENCE,
            )
            .select_from(joined)
            .where(*wanted)
            .order_by(order.desc() if query.descending else order, cluster_heads.c.runtime_id)
            .offset((query.page - 1) * query.size)
            .limit(query.size)
        )
        # without a text, the heads alone answer the counts (their status and health indexes)
        counted_from = joined if query.text else cluster_heads
        async with self.engine.connect() as conn:
            counts: dict[ClusterStatus, int] = dict.fromkeys(PUBLIC_STATUSES, 0)
            for status, count in await _count(conn, cluster_heads.c.status, counted_from, live):
                public = ClusterStatus(status).public
                counts[public] = counts.get(public, 0) + count
            health_counts: dict[Health, int] = dict.fromkeys(SHOWN, 0)
            for health, count in await _count(conn, cluster_heads.c.health, counted_from, live):
                health_counts[Health(health)] = count
            if query.status is not None and query.health is not None:
                both = sa.select(sa.func.count()).select_from(joined).where(*wanted)
                total = int((await conn.execute(both)).scalar_one())
            elif query.health is not None:
                total = health_counts.get(query.health, 0)
            elif query.status is not None:
                total = counts.get(query.status, 0)
            else:
                total = sum(counts.values())
            found = (await conn.execute(rows_query)).mappings().all()
            runs = await self._last_runs(conn, [r["runtime_id"] for r in found])
            # as the API's failures: only when the latest run worked on the current version
            failing = {
                r["runtime_id"]: run.scheduling_id
                for r in found
                if ClusterStatus(r["status"]) in FAILED_STATUSES
                and (run := runs.get(r["runtime_id"])) is not None
                and run.config_version == r["config_version"]
            }
            failed = await self._failures(conn, list(failing.values()))
        rows = [
            FleetRow(
                runtime_id=r["runtime_id"],
                runtime_name=r["runtime_name"],
                status=ClusterStatus(r["status"]).public,
                status_changed=aware(r["status_changed"]),
                kyma_version=r["kyma_version"],
                config_version=r["config_version"],
                last_run=runs.get(r["runtime_id"]),
                failures=tuple(failed.get(failing.get(r["runtime_id"], ""), ())),
                health=Health(r["health"]),
                evidence=evidence_from(r),
            )
            for r in found
        ]
        return FleetPage(rows, total, counts, health_counts)

    async def _last_runs(
        self, conn: AsyncConnection, runtime_ids: Sequence[str]
    ) -> dict[str, LastRun]:
        if not runtime_ids:
            return {}
        ranked = (
            sa.select(
                reconciliations.c.runtime_id,
                reconciliations.c.scheduling_id,
                reconciliations.c.config_version,
                reconciliations.c.status,
                reconciliations.c.created,
                sa.func.row_number()
                .over(
                    partition_by=reconciliations.c.runtime_id,
                    order_by=reconciliations.c.created.desc(),
                )
                .label("rank"),
            )
            .where(reconciliations.c.runtime_id.in_(list(runtime_ids)))
            .subquery()
        )
        rows = await conn.execute(sa.select(ranked).where(ranked.c.rank == 1))
        return {
            r.runtime_id: LastRun(
                r.scheduling_id, int(r.config_version), ClusterStatus(r.status), aware(r.created)
            )
            for r in rows.all()
        }

    async def _failures(
        self, conn: AsyncConnection, scheduling_ids: Sequence[str]
    ) -> dict[str, list[str]]:
        if not scheduling_ids:
            return {}
        rows = await conn.execute(
            sa.select(operations.c.scheduling_id, operations.c.component)
            .where(operations.c.scheduling_id.in_(list(scheduling_ids)))
            .where(
                operations.c.state.in_([OperationState.ERROR.value, OperationState.CLIENT_ERROR])
            )
            .order_by(operations.c.component)
        )
        failed: dict[str, list[str]] = {}
        for scheduling_id, component in rows.all():
            failed.setdefault(scheduling_id, []).append(component)
        return failed
