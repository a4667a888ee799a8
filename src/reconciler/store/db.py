"""Database engines and migrations for SQLite (embedded default) and PostgreSQL (production).

SQLite runs in WAL mode with a busy timeout so the API and the engine can share one file; it is
meant for one process. PostgreSQL is for several mothership instances. The same Alembic
migrations serve both; `migrate` runs them programmatically on an existing engine.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from reconciler.errors import DatabaseError

MIGRATIONS = Path(__file__).parent / "migrations"


_CONNECTION_EXCEPTION = "08"
_TRANSIENT_STATES = {
    "57P01",  # admin_shutdown
    "57P02",  # crash_shutdown
    "57P03",  # cannot_connect_now: the database system is starting up
    "53300",  # too_many_connections
    "40001",  # serialization_failure
    "40P01",  # deadlock_detected
}


def is_transient(exc: BaseException) -> bool:
    """Whether `exc` is the database being briefly unreachable (restart, failover, dropped or
    busy connection), so the same statement may succeed when tried again. Constraint
    violations and bad SQL are not."""
    if isinstance(exc, (OSError, TimeoutError)):
        return True
    if isinstance(exc, sa.exc.DBAPIError):
        state = getattr(exc.orig, "sqlstate", None) or ""
        return (
            exc.connection_invalidated
            or isinstance(exc, (sa.exc.OperationalError, sa.exc.InterfaceError))
            or state.startswith(_CONNECTION_EXCEPTION)
            or state in _TRANSIENT_STATES
        )
    return False


def is_postgres(engine: AsyncEngine) -> bool:
    return engine.dialect.name == "postgresql"


def _create_private(database: str | None) -> None:
    """Create the SQLite file readable by its owner only, like the key file: it holds the
    inventory and the encrypted secrets. SQLite gives its WAL and shared-memory files the
    same mode."""
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    path = Path(database)
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


_DRIVERS = {
    "sqlite": "sqlite+aiosqlite",
    "sqlite+aiosqlite": "sqlite+aiosqlite",
    "postgres": "postgresql+asyncpg",
    "postgresql": "postgresql+asyncpg",
    "postgresql+asyncpg": "postgresql+asyncpg",
}
_SETTING = "database_url (RECONCILER_DATABASE_URL)"


def normalize_url(url: str) -> str:
    """`url` with the async driver this project uses: `postgres://` and `postgresql://` (as
    hosting platforms hand them out) become `postgresql+asyncpg://`, `sqlite://`
    `sqlite+aiosqlite://`; any other scheme is refused by name, never with a traceback."""
    try:
        parsed = sa.engine.make_url(url)
    except sa.exc.ArgumentError:
        raise DatabaseError(
            f"{_SETTING} is not a database URL (e.g. postgresql+asyncpg://user:password@host:5432/"
            "db or sqlite+aiosqlite:///path/to/file.db)"
        ) from None
    driver = _DRIVERS.get(parsed.drivername)
    if driver is None:
        raise DatabaseError(
            f"{_SETTING}: the scheme {parsed.drivername}:// is not supported; use "
            "postgresql+asyncpg:// (or postgres://) or sqlite+aiosqlite:///"
        )
    return parsed.set(drivername=driver).render_as_string(hide_password=False)


async def check_reachable(engine: AsyncEngine) -> None:
    """Connect once, turning the ways that fails into one line that names the database (never
    its password) and the setting to check."""
    where = engine.url.render_as_string(hide_password=True)
    try:
        async with engine.connect():
            pass
    except (OSError, TimeoutError, sa.exc.DBAPIError) as exc:
        cause = exc.orig if isinstance(exc, sa.exc.DBAPIError) and exc.orig else exc
        reason = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
        raise DatabaseError(
            f"cannot use the database {where}: {reason}; check {_SETTING}"
        ) from None


def make_engine(url: str, *, pool_size: int = 10, pool_timeout: float = 30.0) -> AsyncEngine:
    """An async engine for `sqlite+aiosqlite:///path` or `postgresql+asyncpg://...` (other
    spellings of the two normalized, see `normalize_url`); a connection waited for longer than
    `pool_timeout` seconds raises sqlalchemy's TimeoutError."""
    url = normalize_url(url)
    if url.startswith("sqlite"):
        _create_private(sa.engine.make_url(url).database)
        # as many connections as PostgreSQL gets: every running operation may hold one for its
        # heartbeat and one for its result while SQLite's lock makes writers wait (busy
        # timeout), and the default 5 + 10 starved the other loops' reads at 16 workers
        engine = create_async_engine(
            url,
            connect_args={"timeout": 30},
            pool_size=pool_size,
            max_overflow=pool_size,
            pool_timeout=pool_timeout,
            hide_parameters=True,
        )

        @sa.event.listens_for(engine.sync_engine, "connect")
        def _pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()

        return engine
    # no pre-ping: it costs a round trip per checkout (10 % of engine time at scale); a dropped
    # connection fails one statement and the loops retry. Parameters stay out of error messages:
    # they hold encrypted kubeconfigs and configuration values.
    return create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_timeout=pool_timeout,
        hide_parameters=True,
    )


def _alembic_config(connection: sa.Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


async def migrate(engine: AsyncEngine, revision: str = "head") -> None:
    """Bring the schema up to `revision` (idempotent)."""
    async with engine.begin() as connection:
        await connection.run_sync(lambda sync: command.upgrade(_alembic_config(sync), revision))


async def current_revision(engine: AsyncEngine) -> str | None:
    async with engine.connect() as connection:

        def read(sync: sa.Connection) -> str | None:
            from alembic.runtime.migration import MigrationContext

            return MigrationContext.configure(sync).get_current_revision()

        return await connection.run_sync(read)
