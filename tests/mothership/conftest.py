"""Engine settings on SQLite and on PostgreSQL alike (a fresh database per test)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any, Protocol

import pytest

from reconciler.devcluster import PostgresServer
from reconciler.mothership.settings import Settings
from tests.helpers.invokers import new_key_file


class SettingsFactory(Protocol):
    def __call__(self, **overrides: Any) -> Settings: ...


@pytest.fixture(params=["sqlite", "postgres"])
def store_settings(request: pytest.FixtureRequest, tmp_path: Path) -> SettingsFactory:
    """Settings for a fast engine (no workspace, short intervals) on the parametrised store.

    Sync on purpose: the session's PostgreSQL server starts outside any test's event loop."""
    base: dict[str, Any] = {
        "data_dir": tmp_path / "data",
        "sweep_interval": 0.5,
        "bookkeeping_interval": 0.5,
        "retry_backoff": 0.1,
        "max_retries": 1,
        "reconcile_interval": 3600,
    }
    if request.param == "postgres":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        base["database_url"] = asyncio.run(
            server.create_database(f"engine_{uuid.uuid4().hex[:12]}")
        )
        base["encryption_key_file"] = new_key_file(tmp_path / "key")

    def make(**overrides: Any) -> Settings:
        return Settings(**{**base, **overrides})

    return make
