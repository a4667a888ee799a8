"""Reconciliations and operations: locks, priority-ordered claims, compare-and-set."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util import await_only

from reconciler.errors import ConflictError
from reconciler.model.operation import PlannedOperation
from reconciler.model.status import ClusterStatus, OperationState, OperationType
from reconciler.store.inventory import InventoryRepository
from reconciler.store.reconciliations import ReconciliationRepository
from tests.helpers.clusters import cluster_spec

S = ClusterStatus
OS = OperationState
OT = OperationType
PLAN = [
    PlannedOperation("CRDs", "kyma-system", 1),
    PlannedOperation("istio", "istio-system", 2),
    PlannedOperation("a", "kyma-system", 3),
    PlannedOperation("b", "kyma-system", 3),
]


async def reconciliation(
    inventory: InventoryRepository, repo: ReconciliationRepository, runtime_id: str = "rt-1"
) -> str:
    state, _ = await inventory.upsert(cluster_spec(runtime_id))
    scheduling_id = await repo.create(
        runtime_id, state.cluster_version, state.config_version, OperationType.RECONCILE, PLAN
    )
    assert scheduling_id is not None
    return scheduling_id


async def test_only_one_active_reconciliation_per_cluster(
    inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    await reconciliation(inventory, repo)
    assert (await inventory.latest("rt-1")).status is S.RECONCILING
    second = await repo.create("rt-1", 1, 1, OperationType.RECONCILE, PLAN)
    assert second is None
    assert len(await repo.list(runtime_ids=["rt-1"])) == 1


async def test_claims_follow_priority_groups(
    inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    await reconciliation(inventory, repo)
    first = await repo.claim("w1", 10)
    assert [op.component for op in first] == ["CRDs"]
    assert await repo.claim("w1", 10) == []  # istio waits until CRDs are done
    assert await repo.update(first[0].key, OS.DONE)
    assert [op.component for op in await repo.claim("w1", 10)] == ["istio"]


async def test_final_states_never_change_and_updates_are_compare_and_set(
    inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    await reconciliation(inventory, repo)
    (op,) = await repo.claim("w1", 10)
    assert not await repo.update(op.key, OS.DONE, worker="someone-else")
    assert await repo.update(op.key, OS.ERROR, reason="boom")
    assert not await repo.update(op.key, OS.DONE, expect=(OS.ERROR,))
    assert (await repo.operation(*op.key)).state is OS.ERROR


async def test_two_workers_never_claim_the_same_operation(
    inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    for i in range(5):
        await reconciliation(inventory, repo, f"rt-{i}")
    first = await repo.claim("w1", 3)
    second = await repo.claim("w2", 10)
    assert len(first) == 3
    assert len(second) == 2
    assert not {op.key for op in first} & {op.key for op in second}


async def test_per_cluster_limit_leaves_room_for_other_clusters(
    inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    scheduling_id = await reconciliation(inventory, repo)
    _, ops = await repo.get(scheduling_id)
    for op in ops[:2]:  # CRDs and istio done: a and b are claimable together
        await repo.update(op.key, OS.DONE, expect=(OS.NEW,))
    assert len(await repo.claim("w1", 10, per_cluster=1)) == 1


async def test_per_cluster_limit_counts_operations_already_in_progress(
    inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    wide = [PlannedOperation(f"c{i}", "kyma-system", 1) for i in range(8)]
    state, _ = await inventory.upsert(cluster_spec("rt-wide"))
    await repo.create("rt-wide", state.cluster_version, state.config_version, OT.RECONCILE, wide)
    other = await reconciliation(inventory, repo, "rt-other")
    claimed = [op for _ in range(4) for op in await repo.claim("w1", 2, per_cluster=3)]
    claimed += await repo.claim("w2", 2, per_cluster=3)  # another worker counts them too
    per_cluster = {rt: sum(op.runtime_id == rt for op in claimed) for rt in ("rt-wide", "rt-other")}
    assert per_cluster == {"rt-wide": 3, "rt-other": 1}
    assert {op.scheduling_id for op in claimed if op.runtime_id == "rt-other"} == {other}


async def test_silent_operations_become_orphans_and_are_claimed_again(
    inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    await reconciliation(inventory, repo)
    (op,) = await repo.claim("w1", 10)
    assert await repo.orphan_stale(dt.timedelta(seconds=3600)) == 0
    assert await repo.orphan_stale(dt.timedelta(0)) == 1
    assert (await repo.operation(*op.key)).state is OS.ORPHAN
    (again,) = await repo.claim("w2", 10)
    assert again.key == op.key
    assert again.worker == "w2"


async def test_failed_operation_waits_for_its_backoff(
    inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    await reconciliation(inventory, repo)
    (op,) = await repo.claim("w1", 10)
    await repo.update(op.key, OS.FAILED, reason="flaky", retry_after=dt.timedelta(hours=1))
    assert await repo.claim("w1", 10) == []
    assert (await repo.operation(*op.key)).retries == 1


async def test_finishable_once_nothing_can_run(
    inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    scheduling_id = await reconciliation(inventory, repo)
    assert await repo.finishable() == []
    (op,) = await repo.claim("w1", 10)
    await repo.update(op.key, OS.ERROR, reason="broken CRD")
    ((rec, ops),) = await repo.finishable()
    assert rec.scheduling_id == scheduling_id
    await repo.cancel_blocked(scheduling_id, "not run: component CRDs failed")
    await repo.finish(rec, S.ERROR)
    _, ops = await repo.get(scheduling_id)
    assert {o.state for o in ops} == {OS.ERROR}
    assert (await inventory.latest("rt-1")).status is S.ERROR
    await inventory.set_status("rt-1", S.RECONCILE_PENDING)  # e.g. a fixed configuration
    assert await repo.create("rt-1", 1, 1, OperationType.RECONCILE, PLAN) is not None


async def test_only_new_operations_can_be_stopped(
    inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    scheduling_id = await reconciliation(inventory, repo)
    (running,) = await repo.claim("w1", 10)
    with pytest.raises(ConflictError, match="in_progress"):
        await repo.stop(*running.key, reason="ops")
    _, ops = await repo.get(scheduling_id)
    waiting = next(op for op in ops if op.component == "istio")
    await repo.stop(*waiting.key, reason="maintenance")
    stopped = await repo.operation(*waiting.key)
    assert stopped.state is OS.ERROR
    assert stopped.reason == "stopped: maintenance"


async def test_purge_keeps_active_and_the_latest_reconciliations(
    inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    for _ in range(3):
        scheduling_id = await reconciliation(inventory, repo)
        rec, _ = await repo.get(scheduling_id)
        await repo.finish(rec, S.READY)
        await inventory.set_status("rt-1", S.RECONCILE_PENDING)
    active = await reconciliation(inventory, repo)
    assert await repo.purge(dt.timedelta(0), keep_latest=1) == 2
    remaining = {r.scheduling_id for r in await repo.list(runtime_ids=["rt-1"])}
    assert active in remaining
    assert len(remaining) == 2


async def test_an_operation_that_goes_silent_too_often_ends_as_an_error(
    inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    await reconciliation(inventory, repo)
    (op,) = await repo.claim("w1", 10)
    assert await repo.orphan_stale(dt.timedelta(0), max_retries=1) == 1  # first silence
    (again,) = await repo.claim("w2", 10)
    assert again.key == op.key
    assert await repo.orphan_stale(dt.timedelta(0), max_retries=1) == 0  # second: given up
    given_up = await repo.operation(*op.key)
    assert given_up.state is OS.ERROR
    assert "2 times" in given_up.reason


async def test_finishable_reads_each_active_reconciliation_not_the_whole_queue(
    db: AsyncEngine, inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    """The bookkeeper asks this every tick: with 500 active reconciliations and 6,000 queued
    operations an EXISTS per state cost SQLite 0.7 s, since it searched the fleet's new
    operations for each reconciliation (quadratic). Its SQLite work must grow linearly."""
    if db.dialect.name != "sqlite":
        pytest.skip("counts SQLite's virtual machine steps")
    steps = 0

    def step() -> int:
        nonlocal steps
        steps += 1
        return 0  # 0: go on

    @sa.event.listens_for(db.sync_engine, "checkout")
    def count_steps(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        await_only(dbapi_connection.driver_connection.set_progress_handler(step, 100))

    created = 0

    async def cost_with(clusters: int) -> int:
        nonlocal steps, created
        for number in range(created, clusters):
            await reconciliation(inventory, repo, f"rt-{number}")
        created = clusters
        steps = 0
        assert await repo.finishable() == []  # every operation is new: nothing to finish
        return steps

    small, large = await cost_with(40), await cost_with(160)
    assert large < 6 * small, (small, large)  # linear: ~4x; the quadratic query: ~16x
