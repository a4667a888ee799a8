"""The schema, in SQLAlchemy Core. Inventory tables are append-only; `cluster_heads` points at
the latest rows.

`clusters` gets a row when runtime, metadata or kubeconfig change, `cluster_configs` when the
Kyma configuration changes, `cluster_statuses` on every status change. `reconciliations.lock`
holds the runtime id while a reconciliation is active; its unique index is what guarantees at
most one active reconciliation per cluster (NULLs do not collide, on SQLite and PostgreSQL).
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "pk": "pk_%(table_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    }
)

Timestamp = sa.DateTime(timezone=True)

clusters = sa.Table(
    "clusters",
    metadata,
    sa.Column(
        "version",
        sa.BigInteger().with_variant(sa.Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
    sa.Column("runtime_id", sa.String(256), nullable=False),
    sa.Column("runtime_name", sa.String(256), nullable=False, default=""),
    sa.Column("runtime_description", sa.Text, nullable=False, default=""),
    sa.Column("metadata", sa.JSON, nullable=False),
    sa.Column("kubeconfig", sa.LargeBinary, nullable=False),
    sa.Column("fingerprint", sa.String(64), nullable=False),
    sa.Column("deleted", sa.Boolean, nullable=False, default=False),
    sa.Column("created", Timestamp, nullable=False),
    sa.Index(None, "runtime_id", "version"),
)

cluster_configs = sa.Table(
    "cluster_configs",
    metadata,
    sa.Column(
        "version",
        sa.BigInteger().with_variant(sa.Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
    sa.Column("runtime_id", sa.String(256), nullable=False),
    sa.Column("cluster_version", sa.BigInteger, sa.ForeignKey("clusters.version"), nullable=False),
    sa.Column("kyma_version", sa.String(128), nullable=False),
    sa.Column("kyma_profile", sa.String(64), nullable=False, default=""),
    sa.Column("administrators", sa.JSON, nullable=False),
    sa.Column("components", sa.JSON, nullable=False),
    sa.Column("fingerprint", sa.String(64), nullable=False),
    sa.Column("deleted", sa.Boolean, nullable=False, default=False),
    sa.Column("created", Timestamp, nullable=False),
    # the version a rollback copied (NULL: sent by a client)
    sa.Column("restored_from", sa.BigInteger, nullable=True),
    sa.Index(None, "runtime_id", "version"),
)

cluster_statuses = sa.Table(
    "cluster_statuses",
    metadata,
    sa.Column(
        "id",
        sa.BigInteger().with_variant(sa.Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
    sa.Column("runtime_id", sa.String(256), nullable=False),
    sa.Column("cluster_version", sa.BigInteger, nullable=False),
    sa.Column("config_version", sa.BigInteger, nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("deleted", sa.Boolean, nullable=False, default=False),
    sa.Column("created", Timestamp, nullable=False),
    # the cluster's health from this status on (model/health.py); NULL: written before health
    sa.Column("health", sa.String(16), nullable=True),
    sa.Index(None, "runtime_id", "id"),
    sa.Index(None, "status"),
)

cluster_heads = sa.Table(
    "cluster_heads",
    metadata,
    # A projection of the three append-only tables: the latest versions and status of each
    # cluster, written in the same transaction as the rows it points to, so the scheduler and
    # the API find current state with one indexed lookup instead of max() over history.
    sa.Column("runtime_id", sa.String(256), primary_key=True),
    sa.Column("cluster_version", sa.BigInteger, nullable=False),
    sa.Column("config_version", sa.BigInteger, nullable=False),
    sa.Column("status_id", sa.BigInteger, nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("status_changed", Timestamp, nullable=False),
    sa.Column("deleted", sa.Boolean, nullable=False, default=False),
    # Health (model/health.py): derived from the status and the evidence of the latest finished
    # run below, written with every status change and every run's result.
    sa.Column("health", sa.String(16), nullable=False, server_default="progressing"),
    sa.Column("result", sa.String(16), nullable=True),
    sa.Column("result_config_version", sa.BigInteger, nullable=True),
    sa.Column("failing_since", Timestamp, nullable=True),
    sa.Column("consecutive_failures", sa.Integer, nullable=False, server_default="0"),
    sa.Column("cause_component", sa.String(63), nullable=False, server_default=""),
    sa.Column("cause_reason", sa.Text, nullable=False, server_default=""),
    sa.Column("last_success", Timestamp, nullable=True),
    sa.Index(None, "status", "status_changed"),
    sa.Index(None, "health"),
)

reconciliations = sa.Table(
    "reconciliations",
    metadata,
    sa.Column("scheduling_id", sa.String(320), primary_key=True),
    sa.Column("runtime_id", sa.String(256), nullable=False),
    sa.Column("cluster_version", sa.BigInteger, nullable=False),
    sa.Column("config_version", sa.BigInteger, nullable=False),
    sa.Column("status_id", sa.BigInteger, nullable=False),
    sa.Column("type", sa.String(16), nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("lock", sa.String(256), nullable=True, unique=True),
    sa.Column("created", Timestamp, nullable=False),
    sa.Column("updated", Timestamp, nullable=False),
    sa.Index(None, "runtime_id", "created"),
    sa.Index(None, "created"),
)

operations = sa.Table(
    "operations",
    metadata,
    sa.Column(
        "scheduling_id",
        sa.String(320),
        sa.ForeignKey("reconciliations.scheduling_id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("correlation_id", sa.String(320), primary_key=True),
    sa.Column("runtime_id", sa.String(256), nullable=False),
    sa.Column("config_version", sa.BigInteger, nullable=False),
    sa.Column("priority", sa.Integer, nullable=False),
    sa.Column("component", sa.String(63), nullable=False),
    sa.Column("namespace", sa.String(63), nullable=False),
    sa.Column("type", sa.String(16), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("reason", sa.Text, nullable=False, default=""),
    sa.Column("retries", sa.Integer, nullable=False, default=0),
    sa.Column("transient", sa.Boolean, nullable=False, default=False),
    sa.Column("worker", sa.String(128), nullable=False, default=""),
    sa.Column("created", Timestamp, nullable=False),
    sa.Column("updated", Timestamp, nullable=False),
    sa.Column("not_before", Timestamp, nullable=False),
    # SHA-256 (hex) of the callback secret of the latest hand-over to a component reconciler
    sa.Column("callback_secret_hash", sa.String(64), nullable=True),
    # the latest object that kept the component from being ready, with its condition
    sa.Column("blocker", sa.Text, nullable=False, default="", server_default=""),
    sa.Index(None, "state", "not_before"),
    sa.Index(None, "runtime_id"),
)

# Partial indexes that keep claiming fast however long the queue is (10,000 clusters x 12
# components): the claimable operations in claim order, and the open operations per priority.
_CLAIMABLE = "state IN ('new', 'orphan', 'failed')"
_OPEN = "state <> 'done'"
sa.Index(
    "ix_operations_claimable_updated",
    operations.c.updated,
    postgresql_where=sa.text(_CLAIMABLE),
    sqlite_where=sa.text(_CLAIMABLE),
)
sa.Index(
    "ix_operations_open_priority",
    operations.c.scheduling_id,
    operations.c.priority,
    postgresql_where=sa.text(_OPEN),
    sqlite_where=sa.text(_OPEN),
)
