"""The real test bed: etcd + kube-apiserver + kube-controller-manager, PostgreSQL and an OCI
registry, on loopback.

Used by the test fixtures, by `reconciler dev-cluster ...` and by the demo. Binaries come from
`KUBEBUILDER_ASSETS` / `TEST_ASSET_*` (as envtest does) or are built once from Debian's
`kubernetes` source package into the cache (see `build`).
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reconciler.devcluster.kube import DevCluster, DevClusterInfo
    from reconciler.devcluster.postgres import PostgresServer
    from reconciler.devcluster.registry import OciRegistry

__all__ = ["DevCluster", "DevClusterInfo", "OciRegistry", "PostgresServer"]


def __getattr__(name: str) -> Any:
    """Load the test-bed classes on first use, so importing the package (as the CLI's
    `dev-cluster` command does) stays cheap."""
    if name in ("DevCluster", "DevClusterInfo"):
        from reconciler.devcluster import kube

        return getattr(kube, name)
    if name == "PostgresServer":
        from reconciler.devcluster.postgres import PostgresServer

        return PostgresServer
    if name == "OciRegistry":
        from reconciler.devcluster.registry import OciRegistry

        return OciRegistry
    raise AttributeError(name)
