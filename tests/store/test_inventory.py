"""The append-only inventory on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import os

import pytest
import sqlalchemy as sa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy.ext.asyncio import AsyncEngine

from reconciler.errors import NotFoundError
from reconciler.model.status import ClusterStatus, StatusTransitionError
from reconciler.store.crypto import CryptoError
from reconciler.store.inventory import InventoryRepository
from reconciler.store.tables import cluster_configs, clusters
from tests.helpers.clusters import cluster_spec

S = ClusterStatus
KEY = b"k" * 32  # the key of the `cipher` fixture


async def test_new_cluster_is_pending_and_readable(inventory: InventoryRepository) -> None:
    state, changed = await inventory.upsert(cluster_spec("rt-1"))
    assert changed
    assert state.status is S.RECONCILE_PENDING
    assert (state.cluster_version, state.config_version) == (1, 1)
    latest = await inventory.latest("rt-1")
    assert latest.spec == cluster_spec("rt-1")


async def test_unchanged_upsert_writes_nothing(inventory: InventoryRepository) -> None:
    await inventory.upsert(cluster_spec("rt-1"))
    state, changed = await inventory.upsert(cluster_spec("rt-1"))
    assert not changed
    assert await inventory.history("rt-1") == {"clusters": 1, "configs": 1, "statuses": 1}
    assert state.config_version == 1


async def test_config_change_adds_a_config_version_and_keeps_the_old_one(
    inventory: InventoryRepository,
) -> None:
    first, _ = await inventory.upsert(cluster_spec("rt-1"))
    second, changed = await inventory.upsert(cluster_spec("rt-1", components=("istio",)))
    assert changed
    assert second.cluster_version == first.cluster_version
    assert second.config_version > first.config_version
    old = await inventory.at_config("rt-1", first.config_version)
    assert len(old.spec.kyma_config.components) == 7
    assert (await inventory.latest("rt-1")).spec.kyma_config.components[0].component == "istio"


async def test_kubeconfig_change_adds_a_cluster_version(inventory: InventoryRepository) -> None:
    first, _ = await inventory.upsert(cluster_spec("rt-1"))
    second, _ = await inventory.upsert(cluster_spec("rt-1", kubeconfig="other: config\n"))
    assert second.cluster_version > first.cluster_version
    assert second.config_version > first.config_version


async def test_kubeconfig_and_secret_values_are_encrypted_at_rest(
    inventory: InventoryRepository, db: AsyncEngine
) -> None:
    spec = cluster_spec(
        "rt-1",
        kubeconfig="token: TOPSECRET-KUBE\n",
        configuration={
            "istio": [
                {"key": "password", "value": "TOPSECRET-VALUE", "secret": True},
                {"key": "replicas", "value": 2},
            ]
        },
    )
    await inventory.upsert(spec)
    async with db.connect() as conn:
        raw_cluster = (await conn.execute(sa.select(clusters))).mappings().one()
        raw_config = (await conn.execute(sa.select(cluster_configs))).mappings().one()
    dumped = repr(dict(raw_cluster)) + repr(dict(raw_config))
    assert "TOPSECRET" not in dumped
    assert "replicas" in dumped  # non-secret values stay readable for operators
    restored = (await inventory.latest("rt-1")).spec
    assert restored.kubeconfig == "token: TOPSECRET-KUBE\n"
    assert restored.kyma_config.components[1].values()["password"] == "TOPSECRET-VALUE"


async def test_disabled_cluster_stays_disabled_on_upsert(inventory: InventoryRepository) -> None:
    await inventory.upsert(cluster_spec("rt-1"))
    await inventory.set_status("rt-1", S.RECONCILE_DISABLED)
    state, changed = await inventory.upsert(cluster_spec("rt-1", components=("istio",)))
    assert changed
    assert state.status is S.RECONCILE_DISABLED


async def test_transitions_follow_the_state_machine(inventory: InventoryRepository) -> None:
    await inventory.upsert(cluster_spec("rt-1"))
    with pytest.raises(StatusTransitionError, match="reconcile_pending to deleted"):
        await inventory.set_status("rt-1", S.DELETED)
    with pytest.raises(NotFoundError):
        await inventory.set_status("nope", S.READY)


async def test_status_changes_are_newest_first_with_durations(
    inventory: InventoryRepository,
) -> None:
    await inventory.upsert(cluster_spec("rt-1"))
    await inventory.set_status("rt-1", S.RECONCILING)
    await inventory.set_status("rt-1", S.READY)
    changes = await inventory.status_changes("rt-1", dt.timedelta(days=7))
    assert [c.status for c in changes] == [S.READY, S.RECONCILING, S.RECONCILE_PENDING]
    assert all(c.duration >= dt.timedelta(0) for c in changes)


async def test_deletion_is_soft_and_keeps_history(inventory: InventoryRepository) -> None:
    await inventory.upsert(cluster_spec("rt-1"))
    for status in (S.DELETE_PENDING, S.DELETING, S.DELETED):
        await inventory.set_status("rt-1", status)
    state = await inventory.latest("rt-1")
    assert state.status is S.DELETED
    assert state.deleted
    assert await inventory.history("rt-1") == {"clusters": 1, "configs": 1, "statuses": 4}
    again, _ = await inventory.upsert(cluster_spec("rt-1"))
    assert again.status is S.RECONCILE_PENDING
    assert again.cluster_version == 2


async def test_old_statuses_are_purged_but_the_current_one_is_kept(
    inventory: InventoryRepository,
) -> None:
    await inventory.upsert(cluster_spec("rt-1"))
    for _ in range(3):
        await inventory.set_status("rt-1", S.RECONCILING)
        await inventory.set_status("rt-1", S.READY)
    purged = await inventory.purge_statuses(dt.timedelta(0), keep_latest=2)
    assert purged == 5
    assert (await inventory.latest("rt-1")).status is S.READY


async def test_older_config_version_keeps_its_own_last_status(
    inventory: InventoryRepository,
) -> None:
    first, _ = await inventory.upsert(cluster_spec("rt-1"))
    await inventory.set_status("rt-1", S.RECONCILING)
    await inventory.set_status("rt-1", S.READY)
    await inventory.upsert(cluster_spec("rt-1", components=("istio",)))
    await inventory.set_status("rt-1", S.RECONCILING)
    await inventory.set_status("rt-1", S.ERROR)
    old = await inventory.at_config("rt-1", first.config_version, own_status=True)
    assert (old.config_version, old.status) == (first.config_version, S.READY)
    current = await inventory.at_config("rt-1", first.config_version)
    assert current.status is S.ERROR  # without own_status: the cluster's current status
    latest = await inventory.latest("rt-1")
    own = await inventory.at_config("rt-1", latest.config_version, own_status=True)
    assert own.status is S.ERROR


async def test_concurrent_first_upserts_of_one_cluster_store_one_version(
    inventory: InventoryRepository,
) -> None:
    results = await asyncio.gather(
        *(inventory.upsert(cluster_spec("rt-race")) for _ in range(12)), return_exceptions=True
    )
    assert [r for r in results if isinstance(r, BaseException)] == []
    outcomes = [r for r in results if not isinstance(r, BaseException)]
    assert [changed for _, changed in outcomes].count(True) == 1
    assert {(state.cluster_version, state.config_version) for state, _ in outcomes} == {(1, 1)}
    assert await inventory.history("rt-race") == {"clusters": 1, "configs": 1, "statuses": 1}


SECRET_CONFIG = {"istio": [{"key": "password", "value": "TOPSECRET-VALUE", "secret": True}]}


def legacy_blob(plaintext: bytes) -> bytes:
    """A ciphertext as stored before binding existed: nonce || AES-GCM without associated data."""
    nonce = os.urandom(12)
    return nonce + AESGCM(KEY).encrypt(nonce, plaintext, None)


async def sealed_value(db: AsyncEngine, runtime_id: str) -> dict[str, str]:
    async with db.connect() as conn:
        query = sa.select(cluster_configs.c.components).where(
            cluster_configs.c.runtime_id == runtime_id
        )
        components = (await conn.execute(query)).scalar_one()
    return next(c for c in components if c["component"] == "istio")["configuration"][0]["value"]


async def replace_secrets(
    db: AsyncEngine, runtime_id: str, kubeconfig: bytes, value: dict[str, str]
) -> None:
    async with db.begin() as conn:
        query = sa.select(cluster_configs.c.components).where(
            cluster_configs.c.runtime_id == runtime_id
        )
        components = (await conn.execute(query)).scalar_one()
        for component in components:
            if component["component"] == "istio":
                component["configuration"][0]["value"] = value
        await conn.execute(
            cluster_configs.update()
            .where(cluster_configs.c.runtime_id == runtime_id)
            .values(components=components)
        )
        await conn.execute(
            clusters.update()
            .where(clusters.c.runtime_id == runtime_id)
            .values(kubeconfig=kubeconfig)
        )


async def test_secrets_copied_into_another_clusters_row_do_not_decrypt(
    inventory: InventoryRepository, db: AsyncEngine
) -> None:
    for runtime_id in ("rt-victim", "rt-copy"):
        spec = cluster_spec(
            runtime_id, kubeconfig=f"token: {runtime_id}\n", configuration=SECRET_CONFIG
        )
        await inventory.upsert(spec)
    async with db.connect() as conn:
        query = sa.select(clusters.c.runtime_id, clusters.c.kubeconfig)
        kubeconfigs = dict((await conn.execute(query)).all())
    victim_value = await sealed_value(db, "rt-victim")
    own_value = await sealed_value(db, "rt-copy")

    await replace_secrets(db, "rt-copy", kubeconfigs["rt-victim"], own_value)
    with pytest.raises(CryptoError, match=r"clusters\.kubeconfig.*another row"):
        await inventory.latest("rt-copy")
    await replace_secrets(db, "rt-copy", kubeconfigs["rt-copy"], victim_value)
    with pytest.raises(CryptoError, match=r"cluster_configs\.components.*another row"):
        await inventory.latest("rt-copy")
    await replace_secrets(db, "rt-copy", kubeconfigs["rt-copy"], own_value)
    assert (await inventory.latest("rt-copy")).spec.kubeconfig == "token: rt-copy\n"


async def test_secrets_stored_before_row_binding_are_still_read(
    inventory: InventoryRepository, db: AsyncEngine
) -> None:
    await inventory.upsert(cluster_spec("rt-old", configuration=SECRET_CONFIG))
    legacy_value = {"$encrypted": base64.b64encode(legacy_blob(b'"OLD-VALUE"')).decode()}
    await replace_secrets(db, "rt-old", legacy_blob(b"token: OLD\n"), legacy_value)
    restored = (await inventory.latest("rt-old")).spec
    assert restored.kubeconfig == "token: OLD\n"
    istio = next(c for c in restored.kyma_config.components if c.component == "istio")
    assert istio.values()["password"] == "OLD-VALUE"
