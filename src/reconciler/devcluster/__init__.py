"""The real test bed: etcd + kube-apiserver + kube-controller-manager, and PostgreSQL, on loopback.

Used by the test fixtures, by `reconciler dev-cluster ...` and by the demo. Binaries come from
`KUBEBUILDER_ASSETS` / `TEST_ASSET_*` (as envtest does) or are built once from Debian's
`kubernetes` source package into the cache (see `build`).
"""

from reconciler.devcluster.kube import DevCluster, DevClusterInfo
from reconciler.devcluster.postgres import PostgresServer

__all__ = ["DevCluster", "DevClusterInfo", "PostgresServer"]
