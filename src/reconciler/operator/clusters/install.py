"""Install (or print) the operator's CRDs: server-side applied, then waited for until the
apiserver serves them."""

from __future__ import annotations

from reconciler.kube import crdgen
from reconciler.kube.cluster import Cluster
from reconciler.model.lifecycle import FIELD_MANAGER
from reconciler.operator.clusters.crds import all_crds


async def install_crds(cluster: Cluster, *, timeout: float = 60.0) -> list[str]:
    """Apply every CRD and wait until each is Established; return their names."""
    return await crdgen.install_crds(
        cluster, all_crds(), field_manager=FIELD_MANAGER, timeout=timeout
    )
