"""Database engines: the SQLite file is private to its owner."""

from __future__ import annotations

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
