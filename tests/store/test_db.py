"""Database engines: the SQLite file is private to its owner; its pool is as large as asked."""

from __future__ import annotations

import asyncio
import contextlib
import stat
from pathlib import Path

import pytest
import sqlalchemy as sa

from reconciler.devcluster import PostgresServer
from reconciler.devcluster.ports import free_ports
from reconciler.errors import DatabaseError
from reconciler.store.db import check_reachable, make_engine, migrate, normalize_url


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


@pytest.mark.parametrize(
    ("given", "used"),
    [
        ("postgres://u:p@db:5432/r", "postgresql+asyncpg://u:p@db:5432/r"),
        ("postgresql://u:p@db/r", "postgresql+asyncpg://u:p@db/r"),
        ("postgresql+asyncpg://u:p@db/r", "postgresql+asyncpg://u:p@db/r"),
        ("sqlite:////data/r.db", "sqlite+aiosqlite:////data/r.db"),
    ],
)
def test_the_usual_spellings_of_a_database_url_get_the_async_driver(given: str, used: str) -> None:
    assert normalize_url(given) == used


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("mysql://u:p@db/r", "the scheme mysql:// is not supported"),
        ("not a url", "is not a database URL"),
    ],
)
def test_an_unusable_database_url_is_named_with_its_setting(given: str, said: str) -> None:
    with pytest.raises(DatabaseError, match=said) as refused:
        normalize_url(given)
    assert "RECONCILER_DATABASE_URL" in str(refused.value)


async def test_an_unreachable_database_or_an_unknown_role_is_one_line_without_the_password(
    postgres_server: PostgresServer,
) -> None:
    (closed,) = free_ports(1)
    unknown_role = (
        f"postgresql+asyncpg://nobody:s3cret-pw@127.0.0.1:{postgres_server.port}/postgres"
    )
    for url, said in [
        (f"postgresql+asyncpg://u:s3cret-pw@127.0.0.1:{closed}/db", "Connect call failed"),
        (unknown_role, 'role "nobody" does not exist'),
    ]:
        engine = make_engine(url)
        try:
            with pytest.raises(DatabaseError) as refused:
                await check_reachable(engine)
        finally:
            await engine.dispose()
        message = str(refused.value)
        assert said in message
        assert "s3cret-pw" not in message
        assert message.endswith("check database_url (RECONCILER_DATABASE_URL)")
        assert "\n" not in message
