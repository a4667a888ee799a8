"""The inventory's history: status changes over time, version counts, and their retention.

The read-and-purge side of `inventory.py` (which writes versions and statuses); nothing here
changes a cluster.
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from reconciler.errors import NotFoundError
from reconciler.model.cluster import ConfigVersion, StatusChange
from reconciler.model.health import Health
from reconciler.model.status import ClusterStatus
from reconciler.store.retention import beyond_newest
from reconciler.store.tables import cluster_configs, cluster_heads, cluster_statuses, clusters
from reconciler.util.clock import Clock, aware, utcnow


class InventoryHistory:
    def __init__(self, engine: AsyncEngine, clock: Clock = utcnow) -> None:
        self.engine = engine
        self.clock = clock

    async def status_changes(self, runtime_id: str, since: dt.timedelta) -> list[StatusChange]:
        """Newest first; each with how long the cluster stayed in that status."""
        cutoff = self.clock() - since
        query = (
            sa.select(
                cluster_statuses.c.status,
                cluster_statuses.c.created,
                cluster_statuses.c.config_version,
                cluster_configs.c.restored_from,
                cluster_statuses.c.health,
            )
            .outerjoin(
                cluster_configs, cluster_configs.c.version == cluster_statuses.c.config_version
            )
            .where(cluster_statuses.c.runtime_id == runtime_id)
            .order_by(cluster_statuses.c.id.desc())
        )
        known = sa.select(cluster_heads.c.runtime_id).where(
            cluster_heads.c.runtime_id == runtime_id
        )
        async with self.engine.connect() as conn:
            if (await conn.execute(known)).first() is None:
                raise NotFoundError(f"cluster {runtime_id} not found")
            rows = (await conn.execute(query)).all()
        changes: list[StatusChange] = []
        until = self.clock()
        for status, created, config_version, restored_from, health in rows:
            started = aware(created)
            if started < cutoff:
                break
            changes.append(
                StatusChange(
                    ClusterStatus(status),
                    started,
                    until - started,
                    config_version,
                    restored_from,
                    Health(health) if health else None,
                )
            )
            until = started
        return changes

    async def configs(self, runtime_id: str, *, last: int = 100) -> list[ConfigVersion]:
        """The newest `last` configuration versions of the cluster, newest first, each with
        the version it restored when it is a rollback."""
        query = (
            sa.select(cluster_configs)
            .where(cluster_configs.c.runtime_id == runtime_id)
            .order_by(cluster_configs.c.version.desc())
            .limit(last)
        )
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query)).mappings().all()
        if not rows:
            raise NotFoundError(f"cluster {runtime_id} not found")
        return [
            ConfigVersion(
                version=row["version"],
                cluster_version=row["cluster_version"],
                kyma_version=row["kyma_version"],
                kyma_profile=row["kyma_profile"],
                created=aware(row["created"]),
                restored_from=row["restored_from"],
            )
            for row in rows
        ]

    async def history(self, runtime_id: str) -> dict[str, int]:
        """How many versions of each kind the inventory keeps for the cluster."""
        async with self.engine.connect() as conn:
            counts = {}
            for name, table in (
                ("clusters", clusters),
                ("configs", cluster_configs),
                ("statuses", cluster_statuses),
            ):
                counts[name] = (
                    await conn.execute(
                        sa.select(sa.func.count()).where(table.c.runtime_id == runtime_id)
                    )
                ).scalar_one()
        return counts

    async def purge_statuses(self, older_than: dt.timedelta, keep_latest: int) -> int:
        """Delete status rows older than `older_than` beyond the newest `keep_latest` per
        cluster; the row a head points at is always kept."""
        cutoff = self.clock() - older_than
        doomed = beyond_newest(
            cluster_statuses.c.id,
            cluster_statuses.c.runtime_id,
            cluster_statuses.c.id.desc(),
            keep_latest,
        )
        async with self.engine.begin() as conn:
            result = await conn.execute(
                cluster_statuses.delete()
                .where(cluster_statuses.c.id.in_(doomed))
                .where(cluster_statuses.c.created < cutoff)
                .where(cluster_statuses.c.id.not_in(sa.select(cluster_heads.c.status_id)))
            )
            return int(result.rowcount)
