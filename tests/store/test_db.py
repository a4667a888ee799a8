"""Database engines: the SQLite file is private to its owner; its pool is as large as asked."""

from __future__ import annotations

import asyncio
import contextlib
import stat
from pathlib import Path

import sqlalchemy as sa

from reconciler.store.db import make_engine, migrate


async def test_sqlite_database_and_its_wal_files_are_created_owner_only(tmp_path: Path) -> None:
    database = tmp_path / "reconciler.db"
    engine = make_engine(f"sqlite+aiosqlite:///{database}")
    try:
        await migrate(engine)
        async with engine.begin() as conn:
            await conn.execute(sa.text("CREATE TABLE probe (id INTEGER)"))
        files = sorted(database.parent.glob("reconciler.db*"))
        assert database in files
        assert {f.name: stat.S_IMODE(f.stat().st_mode) for f in files} == {
            f.name: 0o600 for f in files
        }
    finally:
        await engine.dispose()


async def test_sqlite_pool_holds_as_many_connections_as_asked_for(tmp_path: Path) -> None:
    """Every running operation may hold a connection for its heartbeat and one for its result
    while writers wait for SQLite's lock; 16 workers once exhausted the default 5 + 10."""
    engine = make_engine(f"sqlite+aiosqlite:///{tmp_path / 'pool.db'}", pool_size=16)
    try:
        async with contextlib.AsyncExitStack() as stack:
            for _ in range(32):  # a checkout beyond the pool would wait 30 s
                conn = await asyncio.wait_for(stack.enter_async_context(engine.connect()), 10)
                await conn.execute(sa.text("SELECT 1"))
    finally:
        await engine.dispose()
