"""Several mothership instances on one PostgreSQL database share the work without doubling it.

Two real `reconciler mothership run` processes with a counting no-op invoker reconcile 50 clusters
(5 components each) that this test upserts through the Python API of a third, loop-less engine;
every operation in the database must have run exactly once, and both processes must have worked.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from reconciler.devcluster import PostgresServer
from reconciler.model.status import ClusterStatus, OperationState
from reconciler.mothership.engine import Engine
from reconciler.store.tables import operations, reconciliations
from reconciler.util.polling import poll_until
from tests.helpers.invokers import (
    EngineProcess,
    cluster_spec,
    control_engine,
    count_ready,
    fresh_database,
    read_invocations,
)

pytestmark = pytest.mark.slow

CLUSTERS = 50
COMPONENTS = ("cluster-essentials", "istio", "certificates", "serverless", "eventing")


@pytest.fixture
async def database(postgres_server: PostgresServer) -> AsyncIterator[str]:
    async with fresh_database(postgres_server, "multi") as url:
        yield url


@pytest.fixture
async def control(database: str, tmp_path: Path) -> AsyncIterator[Engine]:
    async with control_engine(database, tmp_path / "control") as engine:
        yield engine


async def test_two_engine_processes_run_every_operation_exactly_once(
    control: Engine, database: str, tmp_path: Path
) -> None:
    count_file = tmp_path / "invocations"
    settings = {
        "invoker": "import:tests.helpers.invokers:counting",
        "encryption_key_file": control.settings.key_file(),
        "workers": 8,
        "sweep_interval": 2,
        "bookkeeping_interval": 1,
        "RECONCILER_TEST_COUNT_FILE": count_file,
    }
    engines = [
        EngineProcess.start(tmp_path / f"engine-{i}", database_url=database, settings=settings)
        for i in range(2)
    ]
    try:
        for engine in engines:
            await engine.started()
        for i in range(CLUSTERS):
            await control.service.upsert_cluster(cluster_spec(f"runtime-{i:03d}", COMPONENTS))

        async def all_ready() -> bool:
            return await count_ready(control) == CLUSTERS

        await poll_until(
            all_ready,
            timeout=45,
            what=lambda: (
                "all clusters ready; engine output:\n"
                + "\n".join(engine.output(2000) for engine in engines)
            ),
        )
    finally:
        for engine in engines:
            engine.stop()

    assert control.db is not None
    async with control.db.connect() as conn:
        rows = (await conn.execute(sa.select(operations))).mappings().all()
        reconciled = (
            await conn.execute(sa.select(sa.func.count(sa.distinct(reconciliations.c.runtime_id))))
        ).scalar_one()
    assert reconciled == CLUSTERS
    assert len(rows) >= CLUSTERS * len(COMPONENTS)
    assert {row["state"] for row in rows} == {OperationState.DONE.value}

    invocations = read_invocations(count_file)
    runs = Counter((i.scheduling_id, i.correlation_id) for i in invocations)
    assert runs == Counter({(row["scheduling_id"], row["correlation_id"]): 1 for row in rows})

    pid_of = {(i.scheduling_id, i.correlation_id): i.pid for i in invocations}
    worker_of_pid = {engine.pid: engine.worker for engine in engines}
    assert {i.pid for i in invocations} == set(worker_of_pid), "both processes did work"
    for row in rows:  # the database names the process that ran it
        assert row["worker"] == worker_of_pid[pid_of[(row["scheduling_id"], row["correlation_id"])]]


async def test_a_stale_sweep_of_another_instance_does_not_reconcile_the_cluster_again(
    control: Engine, tmp_path: Path
) -> None:
    """Instance B reads `reconcile_pending` heads, instance A schedules and finishes the
    cluster meanwhile; B's late attempt must lose, as it does while A's run is still active."""
    other_settings = control.settings.model_copy(update={"data_dir": tmp_path / "other"})
    async with Engine(other_settings, run_loops=False) as other:
        await control.service.upsert_cluster(cluster_spec("runtime-stale", COMPONENTS))
        (stale,) = await other.inventory.heads([ClusterStatus.RECONCILE_PENDING])

        assert await control.scheduler.sweep() == 1
        assert not await other.scheduler.schedule(stale), "loses while A's run is active"

        async def finish_run() -> ClusterStatus | None:
            for op in await control.repo.claim("a", 10, per_cluster=10):
                await control.repo.update(op.key, OperationState.DONE, worker="a")
            await control.bookkeeper.tick()
            state = await control.service.cluster("runtime-stale")
            return state.status if state.status is ClusterStatus.READY else None

        await poll_until(finish_run, timeout=10, what="cluster runtime-stale ready")

        await other.scheduler.schedule(stale)
        runs = await control.service.reconciliations(runtime_ids=["runtime-stale"])
        assert len(runs) == 1
