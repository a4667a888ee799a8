"""A request that arrives while a cluster is being reconciled is never lost and blocks nothing.

A status change or a new configuration during a run is newer than the run's outcome: when the
run ends it releases the lock, the cluster stays pending and the next run follows at once. One
row that cannot be finished or scheduled never holds up the rest of the fleet.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
import sqlalchemy as sa

from reconciler.model.status import ClusterStatus
from reconciler.mothership.engine import Engine
from reconciler.store.tables import cluster_configs, cluster_heads
from tests.api.support import Gate
from tests.helpers.invokers import cluster_spec
from tests.mothership.conftest import SettingsFactory
from tests.mothership.test_engine import wait_for

S = ClusterStatus
COMPONENTS = ("cluster-essentials", "istio", "eventing")
MORE = (*COMPONENTS, "serverless")


async def force_run(engine: Engine) -> None:
    await engine.service.set_status("rt-busy", S.RECONCILE_PENDING)


async def new_configuration(engine: Engine) -> None:
    await engine.service.upsert_cluster(cluster_spec("rt-busy", MORE))


async def deletion(engine: Engine) -> None:
    await engine.service.delete_cluster("rt-busy")


@pytest.mark.parametrize(
    ("change", "expected"),
    [(force_run, S.READY), (new_configuration, S.READY), (deletion, S.DELETED)],
    ids=["forced-run", "new-configuration", "deletion"],
)
async def test_request_during_a_run_is_run_next_and_other_clusters_still_converge(
    store_settings: SettingsFactory,
    change: Callable[[Engine], Awaitable[None]],
    expected: ClusterStatus,
) -> None:
    gate = Gate("istio")
    async with Engine(store_settings(), invoker=gate.factory) as engine:
        await engine.service.upsert_cluster(cluster_spec("rt-busy", COMPONENTS))
        await gate.entered.wait()
        assert (await engine.service.cluster("rt-busy")).status is S.RECONCILING
        await change(engine)
        (first,) = await engine.service.reconciliations(runtime_ids=["rt-busy"])
        gate.release.set()

        await wait_for(engine, "rt-busy", {expected}, timeout=30)
        runs = await engine.service.reconciliations(runtime_ids=["rt-busy"])
        assert [r.scheduling_id for r in runs][-1] == first.scheduling_id
        assert len(runs) == 2, "the pending request got a run of its own"
        assert not any(r.active for r in runs)
        if change is new_configuration:
            latest = await engine.service.cluster("rt-busy")
            assert runs[0].config_version == latest.config_version > first.config_version

        await engine.service.upsert_cluster(cluster_spec("rt-after", COMPONENTS))
        await wait_for(engine, "rt-after", {S.READY}, timeout=30)


async def test_a_cluster_that_cannot_be_scheduled_or_finished_blocks_no_other(
    store_settings: SettingsFactory,
) -> None:
    gate = Gate("istio")
    async with Engine(store_settings(), invoker=gate.factory) as engine:
        assert engine.db is not None
        # a run that cannot be finished: its cluster's status row reads as garbage
        await engine.service.upsert_cluster(cluster_spec("rt-broken-head", COMPONENTS))
        await gate.entered.wait()
        # a cluster that cannot be planned: its stored configuration is unreadable
        await engine.service.set_status("rt-broken-head", S.RECONCILE_DISABLED)
        async with engine.db.begin() as conn:
            await conn.execute(
                cluster_heads.update()
                .where(cluster_heads.c.runtime_id == "rt-broken-head")
                .values(status="no-such-status")
            )
        gate.release.set()
        await engine.service.upsert_cluster(cluster_spec("rt-broken-config", COMPONENTS))
        await wait_for(engine, "rt-broken-config", {S.READY}, timeout=30)
        async with engine.db.begin() as conn:
            await conn.execute(
                cluster_configs.update()
                .where(cluster_configs.c.runtime_id == "rt-broken-config")
                .values(components=[{"no": "component"}])
            )
            await conn.execute(
                cluster_heads.update()
                .where(cluster_heads.c.runtime_id == "rt-broken-config")
                .values(status=S.RECONCILE_PENDING.value)
            )

        for i in range(3):
            await engine.service.upsert_cluster(cluster_spec(f"rt-fine-{i}", COMPONENTS))
        for i in range(3):
            await wait_for(engine, f"rt-fine-{i}", {S.READY}, timeout=30)
        async with engine.db.connect() as conn:
            pending = await conn.execute(
                sa.select(cluster_heads.c.status).where(
                    cluster_heads.c.runtime_id == "rt-broken-config"
                )
            )
            assert pending.scalar_one() == S.RECONCILE_PENDING
