"""The console's fleet page query on SQLite and PostgreSQL: filter, count, sort, page, and the
latest run with its failed components for the rows of the page."""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from reconciler.model.operation import PlannedOperation
from reconciler.model.status import ClusterStatus, OperationState, OperationType
from reconciler.store.fleet import FleetQueries, FleetQuery
from reconciler.store.inventory import InventoryRepository
from reconciler.store.reconciliations import ReconciliationRepository
from tests.helpers.clusters import cluster_spec

S = ClusterStatus
PLAN = [PlannedOperation("istio", "istio-system", 1), PlannedOperation("serverless", "kyma", 2)]


async def fleet_of(inventory: InventoryRepository, count: int) -> None:
    for number in range(count):
        version = "2.5.0" if number % 3 == 0 else "2.4.0"
        await inventory.upsert(cluster_spec(f"rt-{number:03d}", version=version))


async def failed_run(
    inventory: InventoryRepository, repo: ReconciliationRepository, runtime_id: str
) -> str:
    """A run of the cluster's current configuration whose `serverless` operation failed."""
    state = await inventory.latest(runtime_id)
    scheduling_id = await repo.create(
        runtime_id, state.cluster_version, state.config_version, OperationType.RECONCILE, PLAN
    )
    assert scheduling_id is not None
    reconciliation, operations = await repo.get(scheduling_id)
    for op in operations:
        done = op.component == "istio"
        state = OperationState.DONE if done else OperationState.ERROR
        assert await repo.update(op.key, state, expect=[OperationState.NEW], reason="boom")
    await repo.finish(reconciliation, S.ERROR)
    return scheduling_id


async def test_a_page_is_sorted_paged_and_counted_over_the_whole_fleet(
    db: AsyncEngine, inventory: InventoryRepository
) -> None:
    await fleet_of(inventory, 23)
    await inventory.set_status("rt-004", S.RECONCILE_DISABLED)
    queries = FleetQueries(db)

    page = await queries.page(FleetQuery(sort="runtime", descending=True, page=2, size=10))

    assert [row.runtime_id for row in page.rows] == [f"rt-{n:03d}" for n in range(12, 2, -1)]
    assert page.total == 23
    assert page.counts[S.RECONCILE_PENDING] == 22
    assert page.counts[S.RECONCILE_DISABLED] == 1
    assert page.counts[S.READY] == 0
    assert {row.kyma_version for row in page.rows} == {"2.4.0", "2.5.0"}


async def test_status_and_text_filters_narrow_rows_and_text_narrows_counts(
    db: AsyncEngine, inventory: InventoryRepository
) -> None:
    await fleet_of(inventory, 12)
    await inventory.set_status("rt-003", S.RECONCILE_DISABLED)
    queries = FleetQueries(db)

    by_status = await queries.page(FleetQuery(status=S.RECONCILE_DISABLED))
    by_text = await queries.page(FleetQuery(text="2.5"))
    literal = await queries.page(FleetQuery(text="rt_0%"))  # wildcards are plain characters

    assert [row.runtime_id for row in by_status.rows] == ["rt-003"]
    assert by_status.total == 1
    assert by_status.all == 12  # the counts ignore the status filter
    assert [row.runtime_id for row in by_text.rows] == ["rt-000", "rt-003", "rt-006", "rt-009"]
    assert by_text.counts[S.RECONCILE_DISABLED] == 1
    assert by_text.total == 4
    assert literal.rows == []


async def test_retryable_statuses_are_listed_and_counted_as_the_api_shows_them(
    db: AsyncEngine, inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    await fleet_of(inventory, 2)
    state = await inventory.latest("rt-000")
    scheduling_id = await repo.create(
        "rt-000", state.cluster_version, state.config_version, OperationType.RECONCILE, PLAN
    )
    assert scheduling_id is not None
    reconciliation, _ = await repo.get(scheduling_id)
    await repo.finish(reconciliation, S.RECONCILE_ERROR_RETRYABLE)

    page = await FleetQueries(db).page(FleetQuery(status=S.RECONCILING))

    assert [(row.runtime_id, row.status) for row in page.rows] == [("rt-000", S.RECONCILING)]
    assert page.counts[S.RECONCILING] == 1


async def test_rows_carry_the_latest_run_and_the_components_that_failed_in_it(
    db: AsyncEngine, inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    await fleet_of(inventory, 3)
    scheduling_id = await failed_run(inventory, repo, "rt-001")

    page = await FleetQueries(db).page(FleetQuery(sort="status"))

    rows = {row.runtime_id: row for row in page.rows}
    assert rows["rt-001"].status is S.ERROR
    assert rows["rt-001"].last_run is not None
    assert rows["rt-001"].last_run.scheduling_id == scheduling_id
    assert rows["rt-001"].failures == ("serverless",)
    assert rows["rt-000"].last_run is None
    assert rows["rt-000"].failures == ()
    assert page.rows[0].runtime_id == "rt-001"  # "error" sorts before "reconcile_pending"


async def test_failures_of_an_older_configuration_are_not_shown(
    db: AsyncEngine, inventory: InventoryRepository, repo: ReconciliationRepository
) -> None:
    await fleet_of(inventory, 1)
    await failed_run(inventory, repo, "rt-000")
    await inventory.upsert(cluster_spec("rt-000", version="2.6.0"))

    (row,) = (await FleetQueries(db).page(FleetQuery())).rows

    assert row.kyma_version == "2.6.0"
    assert row.failures == ()


@pytest.mark.parametrize("bad", [{"sort": "kubeconfig"}, {"page": 0}, {"size": 501}])
def test_a_bad_query_is_refused_naming_the_problem(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"sort|page|size"):
        FleetQuery(**bad)  # type: ignore[arg-type]
