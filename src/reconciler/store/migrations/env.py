"""Alembic environment: runs on the connection `store.db.migrate` hands over."""

from __future__ import annotations

from alembic import context

from reconciler.store.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through reconciler.store.db.migrate")
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
