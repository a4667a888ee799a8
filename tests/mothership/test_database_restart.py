"""A PostgreSQL restart in the middle of a run costs no operation a second run.

Heartbeats and final writes that hit the outage are tried again with backoff (up to the orphan
timeout), so no operation is orphaned and re-run while its first run goes on; LISTEN is
established again afterwards, so other instances' wake-ups still arrive.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from reconciler.devcluster import PostgresServer
from reconciler.model.cluster import ClusterState
from reconciler.model.operation import Operation
from reconciler.model.status import ClusterStatus, OperationState
from reconciler.mothership.engine import Engine
from reconciler.mothership.invoker import CallableInvoker, Invoker, InvokeResult
from reconciler.mothership.loops import retry_transient
from reconciler.mothership.notifier import PostgresNotifier
from reconciler.mothership.planner import Planner
from reconciler.mothership.settings import Settings
from reconciler.store.tables import operations
from reconciler.util.polling import poll_until
from tests.conftest import running_postgres
from tests.helpers.invokers import cluster_spec, new_key_file
from tests.mothership.test_engine import wait_for

pytestmark = pytest.mark.slow

S = ClusterStatus
SECONDS = {"alpha": 1.0, "beta": 2.0, "gamma": 3.0, "delta": 5.0, "epsilon": 7.0, "zeta": 9.0}
OUTAGE = 3.0


@pytest.fixture
def server() -> Iterator[PostgresServer]:
    """A server of this test's own: pausing the session's would disturb other tests."""
    yield from running_postgres("reconciler-pg-restart-")


class Recorder:
    """Runs each component for its time in SECONDS; records every start."""

    def __init__(self) -> None:
        self.started: list[tuple[str, str]] = []

    def factory(self, _planner: Planner) -> Invoker:
        async def invoke(op: Operation, _state: ClusterState) -> InvokeResult:
            self.started.append(op.key)
            await asyncio.sleep(SECONDS.get(op.component, 0.0))
            return InvokeResult(True)

        return CallableInvoker(invoke)


@pytest.fixture
async def settings(server: PostgresServer, tmp_path: Path) -> Settings:
    return Settings(
        database_url=await server.create_database("restart"),
        encryption_key_file=new_key_file(tmp_path / "key"),
        data_dir=tmp_path / "data",
        workers=10,
        per_cluster=10,
        heartbeat_interval=0.3,
        orphan_timeout=12,
        bookkeeping_interval=0.5,
        sweep_interval=60,  # only wake-ups schedule promptly
        reconcile_interval=3600,
    )


async def test_operations_run_exactly_once_across_a_database_restart(
    server: PostgresServer, settings: Settings
) -> None:
    recorder = Recorder()
    async with (
        Engine(settings, invoker=recorder.factory) as engine,
        Engine(settings, run_loops=False) as control,
    ):
        await control.service.upsert_cluster(cluster_spec("rt-restart", tuple(SECONDS)))

        async def all_started() -> bool:
            return len(recorder.started) == len(SECONDS)

        await poll_until(all_started, timeout=30, what="every operation to start")
        await server.pause()
        await asyncio.sleep(OUTAGE)  # the outage itself: operations finish and beat meanwhile
        await server.resume()

        await wait_for(engine, "rt-restart", {S.READY, S.ERROR}, timeout=60)
        assert engine.db is not None
        async with engine.db.connect() as conn:
            rows = (await conn.execute(sa.select(operations))).mappings().all()
        assert {r["component"]: r["state"] for r in rows} == dict.fromkeys(
            SECONDS, OperationState.DONE
        )
        assert {r["retries"] for r in rows} == {0}, "nothing was orphaned"
        runs = Counter(recorder.started)
        assert sorted(runs.values()) == [1] * len(SECONDS), runs

        # LISTEN again: a wake-up from another instance arrives well before the 60 s sweep
        assert isinstance(engine.notifier, PostgresNotifier)
        notifier = engine.notifier

        async def listening_again() -> bool:
            return notifier.listens >= 2

        await poll_until(listening_again, timeout=20, what="LISTEN to be re-established")
        # the control engine's pool still holds connections from before the restart
        await retry_transient(
            "upsert",
            lambda: control.service.upsert_cluster(cluster_spec("rt-after-restart", ("alpha",))),
            give_up_at=time.monotonic() + 10,
        )
        await wait_for(engine, "rt-after-restart", {S.READY}, timeout=20)
