"""A migrated database per test, on SQLite and on PostgreSQL alike."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from reconciler.devcluster import PostgresServer
from reconciler.store.crypto import Cipher
from reconciler.store.db import make_engine, migrate
from reconciler.store.inventory import InventoryRepository
from reconciler.store.reconciliations import ReconciliationRepository


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Sync on purpose: the session's PostgreSQL server starts outside any test's event loop."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return asyncio.run(server.create_database(f"store_{uuid.uuid4().hex[:12]}"))


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(db_url)
    await migrate(engine)
    try:
        yield engine
    finally:
        await engine.dispose()


@pytest.fixture
def cipher() -> Cipher:
    return Cipher(b"k" * 32)


@pytest.fixture
def inventory(db: AsyncEngine, cipher: Cipher) -> InventoryRepository:
    return InventoryRepository(db, cipher)


@pytest.fixture
def repo(db: AsyncEngine, inventory: InventoryRepository) -> ReconciliationRepository:
    return ReconciliationRepository(db, inventory)
