"""cluster health beside the wire status

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-27 08:30:00

`cluster_heads.health` (healthy, progressing, failing, unreachable, disabled, deleted; see
`model/health.py`) with the evidence of the latest finished run it is derived from: `result`,
`result_config_version`, `failing_since`, `consecutive_failures`, the root cause
(`cause_component`, `cause_reason`) and `last_success`. `cluster_statuses.health`: the health
from each status change on, for the history. Existing clusters get what their status says: a
ready one is healthy (its last success: when it became ready), a failed one failing (one failed
run, since its status changed), a disabled one disabled, anything else progressing.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

FAILED = "('error', 'delete_error', 'reconcile_error_retryable', 'delete_error_retryable')"


def upgrade() -> None:
    with op.batch_alter_table("cluster_heads") as batch:
        batch.add_column(
            sa.Column("health", sa.String(16), nullable=False, server_default="progressing")
        )
        batch.add_column(sa.Column("result", sa.String(16), nullable=True))
        batch.add_column(sa.Column("result_config_version", sa.BigInteger, nullable=True))
        batch.add_column(sa.Column("failing_since", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(
            sa.Column("consecutive_failures", sa.Integer, nullable=False, server_default="0")
        )
        batch.add_column(
            sa.Column("cause_component", sa.String(63), nullable=False, server_default="")
        )
        batch.add_column(sa.Column("cause_reason", sa.Text, nullable=False, server_default=""))
        batch.add_column(sa.Column("last_success", sa.DateTime(timezone=True), nullable=True))
        batch.create_index("ix_cluster_heads_health", ["health"])
    with op.batch_alter_table("cluster_statuses") as batch:
        batch.add_column(sa.Column("health", sa.String(16), nullable=True))
    op.execute(
        "UPDATE cluster_heads SET health = 'healthy', result = 'healthy',"
        " result_config_version = config_version, last_success = status_changed"
        " WHERE status = 'ready'"
    )
    op.execute(
        "UPDATE cluster_heads SET health = 'failing', result = 'failing',"
        " result_config_version = config_version, failing_since = status_changed,"
        f" consecutive_failures = 1 WHERE status IN {FAILED}"
    )
    op.execute("UPDATE cluster_heads SET health = 'disabled' WHERE status = 'reconcile_disabled'")
    op.execute("UPDATE cluster_heads SET health = 'deleted' WHERE status = 'deleted'")


def downgrade() -> None:
    with op.batch_alter_table("cluster_statuses") as batch:
        batch.drop_column("health")
    with op.batch_alter_table("cluster_heads") as batch:
        batch.drop_index("ix_cluster_heads_health")
        for column in (
            "last_success",
            "cause_reason",
            "cause_component",
            "consecutive_failures",
            "failing_since",
            "result_config_version",
            "result",
            "health",
        ):
            batch.drop_column(column)
