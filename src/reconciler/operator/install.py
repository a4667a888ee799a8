"""Install (or print) the operator's CRDs: server-side applied, then waited for until the
apiserver serves them."""

from __future__ import annotations

from reconciler.kube.cluster import Cluster
from reconciler.kube.wait import wait_ready
from reconciler.operator.crds import all_crds
from reconciler.operator.resources import FIELD_MANAGER


async def install_crds(cluster: Cluster, *, timeout: float = 60.0) -> list[str]:
    """Apply every CRD and wait until each is Established; return their names."""
    live = [await cluster.apply(crd, field_manager=FIELD_MANAGER) for crd in all_crds()]
    await wait_ready(cluster, live, timeout=timeout)
    cluster.mapper.invalidate()
    return [obj.name for obj in live]
