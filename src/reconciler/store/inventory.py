"""The cluster inventory: append-only versions of clusters, configurations and statuses.

`upsert` writes a new cluster row only when runtime, metadata or kubeconfig changed, a new config
row only when the Kyma configuration changed, and a status row for every status change; the
`cluster_heads` projection is updated in the same transaction. Nothing is ever overwritten, so
every earlier version stays readable and a running reconciliation keeps exactly the config
version it started with. Kubeconfigs and `secret` configuration values are stored encrypted
(`sealing.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import weakref
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from reconciler.errors import ConflictError, NotFoundError
from reconciler.model.cluster import (
    ClusterSpec,
    ClusterState,
    Head,
    KymaConfig,
    Metadata,
    RuntimeInput,
)
from reconciler.model.health import ClusterHealth, Health, RunEvidence, RunOutcome, health_of
from reconciler.model.status import ClusterStatus, transition
from reconciler.store.crypto import Cipher
from reconciler.store.inventory_history import InventoryHistory
from reconciler.store.sealing import Sealer
from reconciler.store.tables import cluster_configs, cluster_heads, cluster_statuses, clusters
from reconciler.util.clock import Clock, aware, utcnow


class StaleStatus(ConflictError):
    """The cluster's status changed since the caller read it."""


EVIDENCE = (
    cluster_heads.c.result,
    cluster_heads.c.result_config_version,
    cluster_heads.c.failing_since,
    cluster_heads.c.consecutive_failures,
    cluster_heads.c.cause_component,
    cluster_heads.c.cause_reason,
    cluster_heads.c.last_success,
)


def evidence_from(row: sa.RowMapping) -> RunEvidence:
    """The run evidence of a `cluster_heads` row (selected with `EVIDENCE`)."""
    return RunEvidence(
        result=Health(row["result"]) if row["result"] else None,
        config_version=row["result_config_version"],
        failing_since=aware(row["failing_since"]) if row["failing_since"] else None,
        consecutive_failures=int(row["consecutive_failures"] or 0),
        component=row["cause_component"] or "",
        reason=row["cause_reason"] or "",
        last_success=aware(row["last_success"]) if row["last_success"] else None,
    )


def _evidence_values(evidence: RunEvidence) -> dict[str, object]:
    return {
        "result": evidence.result.value if evidence.result else None,
        "result_config_version": evidence.config_version,
        "failing_since": evidence.failing_since,
        "consecutive_failures": evidence.consecutive_failures,
        "cause_component": evidence.component,
        "cause_reason": evidence.reason,
        "last_success": evidence.last_success,
    }


class InventoryRepository(InventoryHistory):
    """Writes cluster versions and statuses and reads the current state; the history and its
    retention it inherits from `InventoryHistory`."""

    def __init__(self, engine: AsyncEngine, cipher: Cipher, clock: Clock = utcnow) -> None:
        super().__init__(engine, clock)
        self.cipher = cipher
        self.sealer = Sealer(cipher)
        self.clock = clock
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def on(self, engine: AsyncEngine) -> InventoryRepository:
        """The same repository on other connections (the REST API's own pool), sharing the
        per-cluster locks: a writer through either still excludes the other."""
        twin = InventoryRepository(engine, self.cipher, self.clock)
        twin._locks = self._locks
        return twin

    @contextlib.asynccontextmanager
    async def exclusive(self, runtime_id: str) -> AsyncIterator[AsyncConnection]:
        """A transaction that no other writer of this cluster runs alongside: a lock per
        runtime ID in this process (SQLite reads outside the write transaction) and a
        transaction-scoped advisory lock on PostgreSQL (other instances). Without it, two
        first upserts of one new cluster both see no head and both insert one."""
        lock = self._locks.get(runtime_id)
        if lock is None:
            lock = self._locks[runtime_id] = asyncio.Lock()
        async with lock, self.engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                key = sa.func.hashtextextended(runtime_id, 0)
                await conn.execute(sa.select(sa.func.pg_advisory_xact_lock(key)))
            yield conn

    # ---------------------------------------------------------------- writing
    async def upsert(self, spec: ClusterSpec) -> tuple[ClusterState, bool]:
        """Store `spec`; return the resulting state and whether anything changed.

        A change makes the cluster `reconcile_pending`, unless it is disabled (a disabled cluster
        stays disabled when the broker upserts it again) or being deleted (then it is re-created).
        """
        async with self.exclusive(spec.runtime_id) as conn:
            head = await self._head(conn, spec.runtime_id, lock=True)
            now = self.clock()
            cluster_fp = self.cipher.fingerprint(spec.cluster_fingerprint())
            config_fp = self.cipher.fingerprint(spec.kyma_config.fingerprint())
            cluster_version = head.cluster_version if head else None
            config_version = head.config_version if head else None
            fresh = head is None or head.status is ClusterStatus.DELETED
            if (
                fresh
                or cluster_version is None
                or await self._cluster_fingerprint(conn, cluster_version) != cluster_fp
            ):
                cluster_version = await self._insert_cluster(conn, spec, cluster_fp, now)
            if (
                cluster_version != (head.cluster_version if head else None)
                or await self._config_fingerprint(conn, config_version) != config_fp
            ):
                config_version = await self._insert_config(
                    conn, spec, cluster_version, config_fp, now
                )
            assert config_version is not None
            changed = head is None or (cluster_version, config_version) != (
                head.cluster_version,
                head.config_version,
            )
            if not changed:
                assert head is not None
                return await self._state(conn, head), False
            status = ClusterStatus.RECONCILE_PENDING
            if head is not None and head.status is ClusterStatus.RECONCILE_DISABLED:
                status = ClusterStatus.RECONCILE_DISABLED
            head = await self._write_status(
                conn, spec.runtime_id, cluster_version, config_version, status, now, fresh=fresh
            )
            return await self._state(conn, head), True

    async def restore(self, runtime_id: str, config_version: int) -> ClusterState:
        """Roll back: store a new configuration version equal to `config_version` (marked as
        restored from it, secret values sealed afresh) on the current kubeconfig, and make the
        cluster `reconcile_pending` (a disabled one stays disabled, as on an upsert). One
        transaction: an unknown cluster or version (NotFoundError) or a cluster being deleted
        (ConflictError) leaves nothing behind."""
        async with self.exclusive(runtime_id) as conn:
            head = await self._head(conn, runtime_id, lock=True)
            if head is None:
                raise NotFoundError(f"cluster {runtime_id} not found")
            if head.status.deleting:
                raise ConflictError(
                    f"cluster {runtime_id} is {head.status}: a deleted cluster cannot be"
                    " rolled back"
                )
            spec = (await self._state(conn, head, config_version)).spec
            now = self.clock()
            fingerprint = self.cipher.fingerprint(spec.kyma_config.fingerprint())
            restored = await self._insert_config(
                conn, spec, head.cluster_version, fingerprint, now, restored_from=config_version
            )
            status = ClusterStatus.RECONCILE_PENDING
            if head.status is ClusterStatus.RECONCILE_DISABLED:
                status = ClusterStatus.RECONCILE_DISABLED
            head = await self._write_status(
                conn, runtime_id, head.cluster_version, restored, status, now
            )
            return await self._state(conn, head)

    async def set_status(
        self,
        runtime_id: str,
        status: ClusterStatus,
        *,
        config_version: int | None = None,
        conn: AsyncConnection | None = None,
        seen: tuple[ClusterStatus, dt.datetime] | None = None,
    ) -> ClusterState:
        """Move the cluster's status along the state machine (StatusTransitionError if not).

        With `seen`, only if the status is still the one (and as old as) the caller read:
        StaleStatus otherwise, so two schedulers never act on the same status twice."""
        if conn is None:
            async with self.exclusive(runtime_id) as own:
                return await self.set_status(
                    runtime_id, status, config_version=config_version, conn=own, seen=seen
                )
        head = await self._head(conn, runtime_id, lock=True)
        if head is None:
            raise NotFoundError(f"cluster {runtime_id} not found")
        if seen is not None and (head.status, head.status_changed) != seen:
            raise StaleStatus(f"cluster {runtime_id} changed since it was read")
        if head.status is status and config_version in (None, head.config_version):
            return await self._state(conn, head)
        transition(head.status, status)
        head = await self._write_status(
            conn,
            runtime_id,
            head.cluster_version,
            config_version or head.config_version,
            status,
            self.clock(),
        )
        if status is ClusterStatus.DELETED:
            await self._mark_deleted(conn, runtime_id)
        return await self._state(conn, head)

    async def forget(self, runtime_id: str, conn: AsyncConnection) -> ClusterState:
        """Mark a cluster deleted without a delete run (its infrastructure is gone): from any
        status but `deleted`, outside the state machine on purpose. The caller (in the same
        exclusive transaction) ends the cluster's active reconciliation."""
        head = await self._head(conn, runtime_id, lock=True)
        if head is None or head.status is ClusterStatus.DELETED:
            raise NotFoundError(f"cluster {runtime_id} not found")
        head = await self._write_status(
            conn,
            runtime_id,
            head.cluster_version,
            head.config_version,
            ClusterStatus.DELETED,
            self.clock(),
        )
        await self._mark_deleted(conn, runtime_id)
        return await self._state(conn, head)

    async def _mark_deleted(self, conn: AsyncConnection, runtime_id: str) -> None:
        for table in (clusters, cluster_configs, cluster_statuses):
            await conn.execute(
                table.update().where(table.c.runtime_id == runtime_id).values(deleted=True)
            )
        await conn.execute(
            cluster_heads.update()
            .where(cluster_heads.c.runtime_id == runtime_id)
            .values(deleted=True)
        )

    async def record_result(
        self, runtime_id: str, outcome: RunOutcome, conn: AsyncConnection
    ) -> RunEvidence:
        """Add a finished run's outcome to the cluster's evidence and update its health (inside
        the caller's exclusive transaction, before the status the outcome leads to is set)."""
        row = (
            (
                await conn.execute(
                    sa.select(
                        cluster_heads.c.status, cluster_heads.c.config_version, *EVIDENCE
                    ).where(cluster_heads.c.runtime_id == runtime_id)
                )
            )
            .mappings()
            .first()
        )
        if row is None:
            raise NotFoundError(f"cluster {runtime_id} not found")
        evidence = evidence_from(row).after(outcome, self.clock())
        health = health_of(ClusterStatus(row["status"]), row["config_version"], evidence)
        await conn.execute(
            cluster_heads.update()
            .where(cluster_heads.c.runtime_id == runtime_id)
            .values(health=health.value, **_evidence_values(evidence))
        )
        return evidence

    async def _write_status(
        self,
        conn: AsyncConnection,
        runtime_id: str,
        cluster_version: int,
        config_version: int,
        status: ClusterStatus,
        now: dt.datetime,
        *,
        fresh: bool = False,
    ) -> Head:
        """Append a status row and point the head at it, with the health the status and the
        kept evidence give (`fresh`: a re-created cluster, whose old evidence is dropped)."""
        known = (
            (
                await conn.execute(
                    sa.select(*EVIDENCE).where(cluster_heads.c.runtime_id == runtime_id)
                )
            )
            .mappings()
            .first()
        )
        evidence = RunEvidence() if known is None or fresh else evidence_from(known)
        health = health_of(status, config_version, evidence)
        result = await conn.execute(
            cluster_statuses.insert().values(
                runtime_id=runtime_id,
                cluster_version=cluster_version,
                config_version=config_version,
                status=status.value,
                deleted=False,
                created=now,
                health=health.value,
            )
        )
        status_id = result.inserted_primary_key[0]  # type: ignore[index]
        values = {
            "cluster_version": cluster_version,
            "config_version": config_version,
            "status_id": status_id,
            "status": status.value,
            "status_changed": now,
            "deleted": False,
            "health": health.value,
            **(_evidence_values(evidence) if fresh else {}),
        }
        updated = await conn.execute(
            cluster_heads.update().where(cluster_heads.c.runtime_id == runtime_id).values(**values)
        )
        if updated.rowcount == 0:
            await conn.execute(cluster_heads.insert().values(runtime_id=runtime_id, **values))
        return Head(runtime_id, cluster_version, config_version, status, now)

    async def _insert_cluster(
        self, conn: AsyncConnection, spec: ClusterSpec, fingerprint: str, now: dt.datetime
    ) -> int:
        result = await conn.execute(
            clusters.insert().values(
                runtime_id=spec.runtime_id,
                runtime_name=spec.runtime_input.name,
                runtime_description=spec.runtime_input.description,
                metadata=spec.metadata.model_dump(mode="json", by_alias=True),
                kubeconfig=self.sealer.seal_kubeconfig(spec.runtime_id, spec.kubeconfig),
                fingerprint=fingerprint,
                deleted=False,
                created=now,
            )
        )
        return int(result.inserted_primary_key[0])  # type: ignore[index]

    async def _insert_config(
        self,
        conn: AsyncConnection,
        spec: ClusterSpec,
        cluster_version: int,
        fingerprint: str,
        now: dt.datetime,
        *,
        restored_from: int | None = None,
    ) -> int:
        kyma = spec.kyma_config
        result = await conn.execute(
            cluster_configs.insert().values(
                runtime_id=spec.runtime_id,
                cluster_version=cluster_version,
                kyma_version=kyma.version,
                kyma_profile=kyma.profile,
                administrators=list(kyma.administrators),
                components=self.sealer.seal_components(spec.runtime_id, kyma),
                fingerprint=fingerprint,
                deleted=False,
                created=now,
                restored_from=restored_from,
            )
        )
        return int(result.inserted_primary_key[0])  # type: ignore[index]

    # ---------------------------------------------------------------- reading
    async def _head(
        self, conn: AsyncConnection, runtime_id: str, *, lock: bool = False
    ) -> Head | None:
        query = sa.select(cluster_heads).where(cluster_heads.c.runtime_id == runtime_id)
        if lock and conn.dialect.name == "postgresql":
            query = query.with_for_update()
        row = (await conn.execute(query)).mappings().first()
        if row is None:
            return None
        return Head(
            row["runtime_id"],
            row["cluster_version"],
            row["config_version"],
            ClusterStatus(row["status"]),
            aware(row["status_changed"]),
        )

    async def _cluster_fingerprint(self, conn: AsyncConnection, version: int | None) -> str | None:
        if version is None:
            return None
        query = sa.select(clusters.c.fingerprint).where(clusters.c.version == version)
        return (await conn.execute(query)).scalar_one_or_none()

    async def _config_fingerprint(self, conn: AsyncConnection, version: int | None) -> str | None:
        if version is None:
            return None
        query = sa.select(cluster_configs.c.fingerprint).where(cluster_configs.c.version == version)
        return (await conn.execute(query)).scalar_one_or_none()

    async def _state(
        self, conn: AsyncConnection, head: Head, config_version: int | None = None
    ) -> ClusterState:
        config_row = (
            (
                await conn.execute(
                    sa.select(cluster_configs).where(
                        cluster_configs.c.version == (config_version or head.config_version),
                        cluster_configs.c.runtime_id == head.runtime_id,
                    )
                )
            )
            .mappings()
            .first()
        )
        if config_row is None:
            raise NotFoundError(
                f"configuration version {config_version} of cluster {head.runtime_id} not found"
            )
        cluster_row = (
            (
                await conn.execute(
                    sa.select(clusters).where(clusters.c.version == config_row["cluster_version"])
                )
            )
            .mappings()
            .one()
        )
        spec = ClusterSpec(
            runtime_id=head.runtime_id,
            runtime_input=RuntimeInput(
                name=cluster_row["runtime_name"], description=cluster_row["runtime_description"]
            ),
            metadata=Metadata.model_validate(cluster_row["metadata"]),
            kubeconfig=self.sealer.open_kubeconfig(head.runtime_id, cluster_row["kubeconfig"]),
            kyma_config=KymaConfig.model_validate(
                {
                    "version": config_row["kyma_version"],
                    "profile": config_row["kyma_profile"],
                    "administrators": config_row["administrators"],
                    "components": self.sealer.open_components(
                        head.runtime_id, config_row["components"]
                    ),
                }
            ),
        )
        return ClusterState(
            runtime_id=head.runtime_id,
            cluster_version=config_row["cluster_version"],
            config_version=config_row["version"],
            status=head.status,
            status_changed=head.status_changed,
            spec=spec,
            deleted=bool(config_row["deleted"]),
            restored_from=config_row["restored_from"],
        )

    async def head_status(self, runtime_id: str, conn: AsyncConnection) -> ClusterStatus | None:
        head = await self._head(conn, runtime_id, lock=True)
        return head.status if head else None

    async def latest(self, runtime_id: str) -> ClusterState:
        async with self.engine.connect() as conn:
            head = await self._head(conn, runtime_id)
            if head is None:
                raise NotFoundError(f"cluster {runtime_id} not found")
            return await self._state(conn, head)

    async def at_config(
        self, runtime_id: str, config_version: int, *, own_status: bool = False
    ) -> ClusterState:
        """The cluster as of `config_version`: with the cluster's current status, or with
        `own_status` the last status that version had (the original's `statusURL` of an older
        version reports how that version ended, not what the cluster does now)."""
        async with self.engine.connect() as conn:
            head = await self._head(conn, runtime_id)
            if head is None:
                raise NotFoundError(f"cluster {runtime_id} not found")
            if own_status and config_version != head.config_version:
                row = (
                    await conn.execute(
                        sa.select(cluster_statuses.c.status, cluster_statuses.c.created)
                        .where(
                            cluster_statuses.c.runtime_id == runtime_id,
                            cluster_statuses.c.config_version == config_version,
                        )
                        .order_by(cluster_statuses.c.id.desc())
                        .limit(1)
                    )
                ).first()
                if row is not None:
                    head = replace(
                        head, status=ClusterStatus(row.status), status_changed=aware(row.created)
                    )
            return await self._state(conn, head, config_version)

    async def heads(
        self,
        statuses: Sequence[ClusterStatus],
        *,
        changed_before: dt.datetime | None = None,
        limit: int = 1000,
    ) -> list[Head]:
        query = sa.select(cluster_heads).where(
            cluster_heads.c.status.in_([s.value for s in statuses])
        )
        if changed_before is not None:
            query = query.where(cluster_heads.c.status_changed < changed_before)
        query = query.order_by(cluster_heads.c.status_changed).limit(limit)
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query)).mappings().all()
        return [
            Head(
                r["runtime_id"],
                r["cluster_version"],
                r["config_version"],
                ClusterStatus(r["status"]),
                aware(r["status_changed"]),
            )
            for r in rows
        ]

    async def health(self, runtime_id: str) -> ClusterHealth:
        """The cluster's health with the evidence behind it (NotFoundError when unknown)."""
        async with self.engine.connect() as conn:
            rows = await self._healths(conn, cluster_heads.c.runtime_id == runtime_id)
        if not rows:
            raise NotFoundError(f"cluster {runtime_id} not found")
        return rows[0]

    async def healths(self) -> list[ClusterHealth]:
        """The health of every cluster that is not deleted."""
        async with self.engine.connect() as conn:
            return await self._healths(conn, cluster_heads.c.deleted.is_(False))

    @staticmethod
    async def _healths(conn: AsyncConnection, where: sa.ColumnElement[bool]) -> list[ClusterHealth]:
        query = sa.select(
            cluster_heads.c.runtime_id, cluster_heads.c.status, cluster_heads.c.health, *EVIDENCE
        ).where(where)
        return [
            ClusterHealth(
                row["runtime_id"],
                Health(row["health"]),
                ClusterStatus(row["status"]),
                evidence_from(row),
            )
            for row in (await conn.execute(query)).mappings().all()
        ]

    async def statuses(self) -> list[tuple[str, str]]:
        """(runtime_id, status) of every cluster that is not deleted."""
        query = sa.select(cluster_heads.c.runtime_id, cluster_heads.c.status).where(
            cluster_heads.c.deleted.is_(False)
        )
        async with self.engine.connect() as conn:
            return [(r, s) for r, s in (await conn.execute(query)).all()]
