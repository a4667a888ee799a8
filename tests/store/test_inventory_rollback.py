"""Rollback in the inventory: a new configuration version equal to an earlier one, on SQLite and
PostgreSQL."""

from __future__ import annotations

import datetime as dt

import pytest

from reconciler.errors import ConflictError, NotFoundError
from reconciler.model.status import ClusterStatus
from reconciler.store.inventory import InventoryRepository
from tests.helpers.clusters import cluster_spec

S = ClusterStatus
SECRET = {"istio": [{"key": "password", "value": "TOPSECRET-V1", "secret": True}]}


async def _two_versions(inventory: InventoryRepository) -> tuple[int, int]:
    first, _ = await inventory.upsert(cluster_spec("rt-1", configuration=SECRET))
    await inventory.set_status("rt-1", S.RECONCILING)
    await inventory.set_status("rt-1", S.READY)
    second, _ = await inventory.upsert(cluster_spec("rt-1", components=("istio",), version="2.5"))
    await inventory.set_status("rt-1", S.RECONCILING)
    await inventory.set_status("rt-1", S.ERROR)
    return first.config_version, second.config_version


async def test_restore_stores_a_new_version_equal_to_the_old_one_and_makes_it_pending(
    inventory: InventoryRepository,
) -> None:
    v1, v2 = await _two_versions(inventory)
    state = await inventory.restore("rt-1", v1)
    assert state.config_version > v2
    assert state.restored_from == v1
    assert state.status is S.RECONCILE_PENDING
    old = await inventory.at_config("rt-1", v1)
    assert state.spec.kyma_config == old.spec.kyma_config  # secret values included
    assert state.spec.kyma_config.components[1].values()["password"] == "TOPSECRET-V1"
    assert (await inventory.latest("rt-1")).config_version == state.config_version


async def test_restore_keeps_the_current_kubeconfig(inventory: InventoryRepository) -> None:
    v1, _ = await _two_versions(inventory)
    moved, _ = await inventory.upsert(cluster_spec("rt-1", kubeconfig="new: kubeconfig\n"))
    state = await inventory.restore("rt-1", v1)
    assert state.cluster_version == moved.cluster_version
    assert state.spec.kubeconfig == "new: kubeconfig\n"


async def test_history_marks_the_rollback_and_its_source(inventory: InventoryRepository) -> None:
    v1, v2 = await _two_versions(inventory)
    state = await inventory.restore("rt-1", v1)
    changes = await inventory.status_changes("rt-1", dt.timedelta(days=1))
    assert (changes[0].status, changes[0].config_version) == (
        S.RECONCILE_PENDING,
        state.config_version,
    )
    assert changes[0].restored_from == v1
    assert all(c.restored_from is None for c in changes[1:])
    configs = await inventory.configs("rt-1")
    assert [(c.version, c.restored_from) for c in configs] == [
        (state.config_version, v1),
        (v2, None),
        (v1, None),
    ]
    assert configs[0].kyma_version == configs[2].kyma_version == "2.4.0"


async def test_restoring_an_unknown_cluster_or_version_writes_nothing(
    inventory: InventoryRepository,
) -> None:
    await _two_versions(inventory)
    before = await inventory.history("rt-1")
    with pytest.raises(NotFoundError, match="cluster nope not found"):
        await inventory.restore("nope", 1)
    with pytest.raises(NotFoundError, match="configuration version 999 of cluster rt-1"):
        await inventory.restore("rt-1", 999)
    await inventory.upsert(cluster_spec("rt-2"))
    other = (await inventory.latest("rt-2")).config_version
    with pytest.raises(NotFoundError, match=f"configuration version {other} of cluster rt-1"):
        await inventory.restore("rt-1", other)  # another cluster's version is not this one's
    assert await inventory.history("rt-1") == before
    assert (await inventory.latest("rt-1")).status is S.ERROR


async def test_a_cluster_being_deleted_is_not_rolled_back(inventory: InventoryRepository) -> None:
    v1, _ = await _two_versions(inventory)
    await inventory.set_status("rt-1", S.DELETE_PENDING)
    before = await inventory.history("rt-1")
    with pytest.raises(ConflictError, match="rt-1 is delete_pending"):
        await inventory.restore("rt-1", v1)
    assert await inventory.history("rt-1") == before


async def test_a_disabled_cluster_gets_the_version_and_stays_disabled(
    inventory: InventoryRepository,
) -> None:
    v1, _ = await _two_versions(inventory)
    await inventory.set_status("rt-1", S.RECONCILE_DISABLED)
    state = await inventory.restore("rt-1", v1)
    assert state.status is S.RECONCILE_DISABLED
    assert state.restored_from == v1
