"""An engine killed mid-operation loses no work: its operation becomes an orphan and runs again.

A real `reconciler mothership run` process with the `slow` no-op invoker starts the slow
component's operation and is killed with SIGKILL (no graceful hand-back); a new process with a
short orphan timeout must declare the silent operation an orphan, run it again and bring the
cluster to `ready`, while every operation that had finished before the kill stays run once.
"""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from reconciler.devcluster import PostgresServer
from reconciler.model.status import OperationState
from reconciler.mothership.engine import Engine
from reconciler.store.tables import operations
from reconciler.util.polling import poll_until
from tests.helpers.invokers import (
    END,
    START,
    EngineProcess,
    Invocation,
    cluster_spec,
    control_engine,
    count_ready,
    fresh_database,
    read_invocations,
)

pytestmark = pytest.mark.slow

RUNTIME_ID = "runtime-orphan"
SLOW = "serverless"
COMPONENTS = ("cluster-essentials", "istio", SLOW, "eventing", "api-gateway")


@pytest.fixture
async def database(postgres_server: PostgresServer) -> AsyncIterator[str]:
    async with fresh_database(postgres_server, "orphan") as url:
        yield url


@pytest.fixture
async def control(database: str, tmp_path: Path) -> AsyncIterator[Engine]:
    async with control_engine(database, tmp_path / "control") as engine:
        yield engine


async def slow_operation(engine: Engine) -> sa.RowMapping:
    assert engine.db is not None
    async with engine.db.connect() as conn:
        query = sa.select(operations).where(operations.c.component == SLOW)
        return (await conn.execute(query)).mappings().one()


async def test_operation_of_a_killed_engine_is_orphaned_and_run_again(
    control: Engine, database: str, tmp_path: Path
) -> None:
    count_file = tmp_path / "invocations"
    settings = {
        "invoker": "import:tests.helpers.invokers:slow",
        "encryption_key_file": control.settings.key_file(),
        "heartbeat_interval": 1,
        "orphan_timeout": 3,
        "bookkeeping_interval": 0.5,
        "sweep_interval": 2,
        "RECONCILER_TEST_COUNT_FILE": count_file,
        "RECONCILER_TEST_SLOW_COMPONENT": SLOW,
    }
    first = EngineProcess.start(
        tmp_path / "first",
        database_url=database,
        settings={**settings, "RECONCILER_TEST_SLOW_SECONDS": 300},
    )
    second: EngineProcess | None = None
    try:
        await first.started()
        await control.service.upsert_cluster(cluster_spec(RUNTIME_ID, COMPONENTS))

        async def slow_started() -> Invocation | None:
            await count_ready(control)  # fails at once if an operation failed
            return next((i for i in read_invocations(count_file) if i.marker == START), None)

        started = await poll_until(
            slow_started, timeout=30, what=lambda: f"the slow operation to start\n{first.output()}"
        )
        first.kill(signal.SIGKILL)
        await first.exited()
        killed = await slow_operation(control)
        assert (killed["state"], killed["worker"]) == (OperationState.IN_PROGRESS, first.worker)
        assert control.db is not None
        async with control.db.connect() as conn:
            done_before_kill = {
                (r["scheduling_id"], r["correlation_id"])
                for r in (await conn.execute(sa.select(operations))).mappings().all()
                if r["state"] == OperationState.DONE
            }

        second = EngineProcess.start(
            tmp_path / "second",
            database_url=database,
            settings={**settings, "RECONCILER_TEST_SLOW_SECONDS": 0.5},
        )
        seen: set[str] = set()

        async def ready() -> bool:
            seen.add((await slow_operation(control))["state"])
            return await count_ready(control) == 1

        await poll_until(ready, timeout=40, what=lambda: f"cluster ready\n{second.output()}")
    finally:
        first.stop()
        if second is not None:
            second.stop()

    rerun = await slow_operation(control)
    key = (rerun["scheduling_id"], rerun["correlation_id"])
    assert (started.scheduling_id, started.correlation_id, started.pid) == (*key, first.pid)
    assert rerun["state"] == OperationState.DONE
    assert rerun["worker"] == second.worker, f"re-run by the new engine (states seen: {seen})"
    slow_runs = [
        (i.pid, i.marker)
        for i in read_invocations(count_file)
        if (i.scheduling_id, i.correlation_id) == key
    ]
    assert slow_runs == [(first.pid, START), (second.pid, START), (second.pid, END)]

    assert control.db is not None
    async with control.db.connect() as conn:
        rows = (await conn.execute(sa.select(operations))).mappings().all()
    runs = Counter(
        (i.scheduling_id, i.correlation_id) for i in read_invocations(count_file) if not i.marker
    )
    others = {(r["scheduling_id"], r["correlation_id"]) for r in rows if r["component"] != SLOW}
    # recorded as done before the kill: never again; killed between its work and its record:
    # run again (at least once is the guarantee; nothing is lost)
    assert {key: runs[key] for key in done_before_kill} == dict.fromkeys(done_before_kill, 1), (
        "operations finished before the kill are not run again"
    )
    assert all(runs[key] >= 1 for key in others)
