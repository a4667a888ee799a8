"""per-task callback secret hash on operations

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24 12:40:00

Each hand-over of an operation to a component reconciler carries a fresh random callback
secret; only its SHA-256 is kept here, so callbacks can be checked without the database ever
holding a usable secret. NULL: the operation was never handed to a component reconciler.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("operations") as batch:
        batch.add_column(sa.Column("callback_secret_hash", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("operations") as batch:
        batch.drop_column("callback_secret_hash")
