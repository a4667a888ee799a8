"""Install the infrastructure manager's CRDs (Runtime, GardenerCluster) and wait until served."""

from __future__ import annotations

from reconciler.infra.crds import all_crds
from reconciler.kube import crdgen
from reconciler.kube.cluster import Cluster
from reconciler.model.infrastructure import FIELD_MANAGER


async def install_crds(cluster: Cluster, *, timeout: float = 60.0) -> list[str]:
    return await crdgen.install_crds(
        cluster, all_crds(), field_manager=FIELD_MANAGER, timeout=timeout
    )
