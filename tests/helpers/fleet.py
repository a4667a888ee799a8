"""A large fleet written straight into an empty inventory, for views and benchmarks that need
10,000 clusters: the rows `InventoryRepository.upsert` would write (sealed kubeconfig and
components, fingerprints, one status, the head), inserted in bulk in one transaction, which
takes seconds where 10,000 upserts take minutes."""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.model.cluster import ClusterSpec
from reconciler.model.health import RunEvidence, health_of
from reconciler.model.status import ClusterStatus
from reconciler.store.inventory import InventoryRepository
from reconciler.store.tables import cluster_configs, cluster_heads, cluster_statuses, clusters


async def bulk_fleet(
    inventory: InventoryRepository, specs: Sequence[ClusterSpec], statuses: Sequence[ClusterStatus]
) -> None:
    """Store `specs` (new runtime IDs, an inventory without other clusters) with the statuses
    `statuses` (cycled)."""
    now = inventory.clock()
    cluster_rows, config_rows, status_rows, head_rows = [], [], [], []
    for number, spec in enumerate(specs, start=1):
        status = statuses[(number - 1) % len(statuses)].value
        kyma = spec.kyma_config
        cluster_rows.append(
            {
                "version": number,
                "runtime_id": spec.runtime_id,
                "runtime_name": spec.runtime_input.name,
                "runtime_description": spec.runtime_input.description,
                "metadata": spec.metadata.model_dump(mode="json", by_alias=True),
                "kubeconfig": inventory.sealer.seal_kubeconfig(spec.runtime_id, spec.kubeconfig),
                "fingerprint": inventory.cipher.fingerprint(spec.cluster_fingerprint()),
                "deleted": False,
                "created": now,
            }
        )
        config_rows.append(
            {
                "version": number,
                "runtime_id": spec.runtime_id,
                "cluster_version": number,
                "kyma_version": kyma.version,
                "kyma_profile": kyma.profile,
                "administrators": list(kyma.administrators),
                "components": inventory.sealer.seal_components(spec.runtime_id, kyma),
                "fingerprint": inventory.cipher.fingerprint(kyma.fingerprint()),
                "deleted": False,
                "created": now,
            }
        )
        common = {"runtime_id": spec.runtime_id, "cluster_version": number}
        # the health a first status gives (no run has finished: failed ones as failing)
        health = health_of(ClusterStatus(status), number, RunEvidence()).value
        status_rows.append(
            {**common, "id": number, "config_version": number, "status": status}
            | {"deleted": False, "created": now, "health": health}
        )
        head_rows.append(
            {**common, "config_version": number, "status_id": number, "status": status}
            | {"status_changed": now, "deleted": False, "health": health}
        )
    async with inventory.engine.begin() as conn:
        for table, rows in (
            (clusters, cluster_rows),
            (cluster_configs, config_rows),
            (cluster_statuses, status_rows),
            (cluster_heads, head_rows),
        ):
            await conn.execute(table.insert(), rows)
