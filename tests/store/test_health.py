"""Health stored beside the wire status: derived from every status change and every finished
run, kept through retries, disabling and forced runs, and gone with a forgotten cluster."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from reconciler.model.health import NOT_RUN, Health, RunOutcome
from reconciler.model.operation import PlannedOperation
from reconciler.model.status import ClusterStatus, OperationState, OperationType
from reconciler.mothership.bookkeeper import outcome
from reconciler.store.crypto import Cipher
from reconciler.store.db import make_engine, migrate
from reconciler.store.fleet import FleetQueries, FleetQuery
from reconciler.store.inventory import InventoryRepository
from reconciler.store.reconciliations import ReconciliationRepository
from tests.helpers.clusters import cluster_spec

S = ClusterStatus
OS = OperationState
PLAN = [
    PlannedOperation("istio", "istio-system", 1),
    PlannedOperation("a", "kyma-system", 2),
    PlannedOperation("b", "kyma-system", 2),
]
UNREACHABLE = "component istio: cannot reach the apiserver at https://127.0.0.1:1: ConnectError"


async def run_once(
    inventory: InventoryRepository,
    repo: ReconciliationRepository,
    runtime_id: str,
    *,
    istio: str | None = None,
    transient: bool = True,
) -> Health:
    """One whole run: istio fails with `istio` as reason (None: everything succeeds); the
    bookkeeper's rules finish it. Returns the health during the run."""
    state = await inventory.latest(runtime_id)
    scheduling_id = await repo.create(
        runtime_id, state.cluster_version, state.config_version, OperationType.RECONCILE, PLAN
    )
    assert scheduling_id is not None
    during = (await inventory.health(runtime_id)).health
    while claimed := await repo.claim("w", 10):
        for op in claimed:
            if istio is not None and op.component == "istio":
                await repo.update(op.key, OS.ERROR, reason=istio, transient=transient)
            else:
                await repo.update(op.key, OS.DONE)
        if istio is not None:
            break
    # as the bookkeeper finishes it: the outcome from the operations as they ended, then the
    # ones blocked behind a failure cancelled
    reconciliation, ops = await repo.get(scheduling_id)
    failed = [op for op in ops if op.state is OS.ERROR]
    if failed:
        await repo.cancel_blocked(scheduling_id, f"{NOT_RUN}{failed[0].component} failed")
    await repo.finish(
        reconciliation,
        outcome(reconciliation, ops),
        RunOutcome.of(reconciliation.config_version, (await repo.get(scheduling_id))[1]),
    )
    return during


async def test_a_failing_cluster_is_failing_before_during_and_after_its_retries(
    inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    await inventory.upsert(cluster_spec("rt-1"))
    assert (await inventory.health("rt-1")).health is Health.PROGRESSING
    reason = "component istio: deployment istio-system/istiod: 0/1 replicas available"
    assert await run_once(inventory, repo, "rt-1", istio=reason) is Health.PROGRESSING
    first = await inventory.health("rt-1")
    assert (first.health, first.status) == (Health.FAILING, S.RECONCILE_ERROR_RETRYABLE)
    assert first.evidence.consecutive_failures == 1
    # the root cause, not the dependants skipped behind it
    assert (first.evidence.component, first.evidence.reason) == ("istio", reason)
    since = first.evidence.failing_since
    assert since is not None
    # the retry: `reconciling` on the wire, failing to people, all through the run
    assert await run_once(inventory, repo, "rt-1", istio=reason) is Health.FAILING
    second = await inventory.health("rt-1")
    assert second.health is Health.FAILING
    assert second.evidence.consecutive_failures == 2
    assert second.evidence.failing_since == since
    assert "failing since" in second.summary
    assert "(2 failed runs): istio" in second.summary
    # a success proves otherwise
    assert await run_once(inventory, repo, "rt-1") is Health.FAILING
    healed = await inventory.health("rt-1")
    assert healed.health is Health.HEALTHY
    assert healed.evidence.consecutive_failures == 0
    assert healed.evidence.component == ""
    assert healed.evidence.last_success is not None
    # a periodic re-run of what works stays healthy
    assert await run_once(inventory, repo, "rt-1") is Health.HEALTHY
    # the history says which status was which health
    changes = await inventory.status_changes("rt-1", since=dt.timedelta(days=1))
    assert (changes[-3].status, changes[-3].health) == (S.RECONCILE_ERROR_RETRYABLE, Health.FAILING)
    assert (changes[-4].status, changes[-4].health) == (S.RECONCILING, Health.FAILING)


async def test_disabling_and_forcing_keep_the_last_result(
    inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    await inventory.upsert(cluster_spec("rt-1"))
    await run_once(inventory, repo, "rt-1", istio="component istio: not ready", transient=False)
    assert (await inventory.health("rt-1")).health is Health.FAILING
    await inventory.set_status("rt-1", S.RECONCILE_DISABLED)
    disabled = await inventory.health("rt-1")
    assert disabled.health is Health.DISABLED
    assert disabled.evidence.component == "istio"  # kept for when it is enabled
    await inventory.set_status("rt-1", S.RECONCILE_PENDING)
    assert (await inventory.health("rt-1")).health is Health.FAILING
    # a new configuration does not make it healthy either
    await inventory.upsert(cluster_spec("rt-1", version="2.5.0"))
    assert (await inventory.health("rt-1")).health is Health.FAILING


async def test_an_unreachable_cluster_and_a_delete_that_cannot_finish(
    inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    await inventory.upsert(cluster_spec("rt-1"))
    await run_once(inventory, repo, "rt-1")
    await inventory.set_status("rt-1", S.DELETE_PENDING)
    assert (await inventory.health("rt-1")).health is Health.PROGRESSING  # a delete under way
    state = await inventory.latest("rt-1")
    scheduling_id = await repo.create(
        "rt-1", state.cluster_version, state.config_version, OperationType.DELETE, PLAN[:1]
    )
    assert scheduling_id is not None
    (op,) = await repo.claim("w", 10)
    await repo.update(op.key, OS.ERROR, reason=UNREACHABLE, transient=True)
    reconciliation, ops = await repo.get(scheduling_id)
    await repo.finish(
        reconciliation, outcome(reconciliation, ops), RunOutcome.of(state.config_version, ops)
    )
    stuck = await inventory.health("rt-1")
    assert (stuck.health, stuck.status) == (Health.UNREACHABLE, S.DELETE_ERROR_RETRYABLE)
    assert stuck.deleting
    assert stuck.summary.endswith("(delete cannot finish)")


async def test_forgetting_ends_the_active_run_and_marks_the_inventory_deleted(
    inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    await inventory.upsert(cluster_spec("rt-1"))
    state = await inventory.latest("rt-1")
    scheduling_id = await repo.create(
        "rt-1", state.cluster_version, state.config_version, OperationType.RECONCILE, PLAN
    )
    assert scheduling_id is not None
    (op,) = await repo.claim("w", 10)
    forgotten = await repo.forget("rt-1", "forgotten: infrastructure gone")
    assert forgotten.status is S.DELETED
    assert forgotten.deleted
    reconciliation, ops = await repo.get(scheduling_id)
    assert not reconciliation.active
    assert {o.state for o in ops} == {OS.ERROR}
    # the worker still on it finds its result refused
    assert not await repo.update(op.key, OS.DONE, worker="w")
    assert "rt-1" not in {h.runtime_id for h in await inventory.healths()}
    # registering it again starts from nothing
    await inventory.upsert(cluster_spec("rt-1"))
    fresh = await inventory.health("rt-1")
    assert fresh.health is Health.PROGRESSING
    assert fresh.evidence.consecutive_failures == 0


async def test_the_fleet_counts_and_filters_by_health(
    db: AsyncEngine, inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    for name in ("ok", "bad", "off", "new"):
        await inventory.upsert(cluster_spec(name))
    await run_once(inventory, repo, "ok")
    await run_once(inventory, repo, "bad", istio="component istio: boom")
    await run_once(inventory, repo, "off")
    await inventory.set_status("off", S.RECONCILE_DISABLED)
    queries = FleetQueries(db)
    page = await queries.page(FleetQuery())
    assert page.health_counts[Health.HEALTHY] == 1
    assert page.health_counts[Health.FAILING] == 1
    assert page.health_counts[Health.DISABLED] == 1
    assert page.health_counts[Health.PROGRESSING] == 1
    failing = await queries.page(FleetQuery(health=Health.FAILING))
    assert [r.runtime_id for r in failing.rows] == ["bad"]
    assert failing.total == 1
    (row,) = failing.rows
    assert row.health is Health.FAILING
    assert row.evidence.component == "istio"


async def test_the_migration_gives_existing_clusters_the_health_their_status_says(
    db_url: str, cipher: Cipher
) -> None:
    engine = make_engine(db_url)
    try:
        await migrate(engine, "0004")
        now = dt.datetime.now(dt.UTC)
        async with engine.begin() as conn:
            for number, status in enumerate(
                (S.READY, S.RECONCILE_ERROR_RETRYABLE, S.RECONCILE_DISABLED, S.RECONCILING), 1
            ):
                await conn.execute(
                    sa.text(
                        "INSERT INTO cluster_heads (runtime_id, cluster_version, config_version,"
                        " status_id, status, status_changed, deleted)"
                        " VALUES (:r, 1, 1, :n, :s, :t, false)"
                    ),
                    {"r": f"rt-{status.value}", "n": number, "s": status.value, "t": now},
                )
        await migrate(engine)
        inventory = InventoryRepository(engine, cipher)
        healths = {h.runtime_id: h for h in await inventory.healths()}
    finally:
        await engine.dispose()
    assert {r: h.health for r, h in healths.items()} == {
        "rt-ready": Health.HEALTHY,
        "rt-reconcile_error_retryable": Health.FAILING,
        "rt-reconcile_disabled": Health.DISABLED,
        "rt-reconciling": Health.PROGRESSING,
    }
    assert healths["rt-ready"].evidence.last_success is not None
    assert healths["rt-reconcile_error_retryable"].evidence.consecutive_failures == 1
