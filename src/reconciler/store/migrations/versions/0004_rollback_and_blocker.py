"""rollback origin of configuration versions; blocking object of operations

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24 15:45:00

`cluster_configs.restored_from`: the configuration version a rollback copied (NULL for a version
a client sent), so the history shows a rollback as one. `operations.blocker`: the latest object
that kept the operation from being ready and its condition (`deployment ns/x: 0/1 replicas
available`), as the component reconciler reported it; empty when nothing blocks.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("cluster_configs") as batch:
        batch.add_column(sa.Column("restored_from", sa.BigInteger, nullable=True))
    with op.batch_alter_table("operations") as batch:
        batch.add_column(sa.Column("blocker", sa.Text, nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("operations") as batch:
        batch.drop_column("blocker")
    with op.batch_alter_table("cluster_configs") as batch:
        batch.drop_column("restored_from")
