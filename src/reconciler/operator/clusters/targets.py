"""Which cluster a module goes to: the operator's own, or the remote one of its Kyma.

A remote cluster's kubeconfig is the `config` key of the Secret labelled
`operator.kyma-project.io/kyma-name=<kyma>` in the Kyma's namespace. One connection per *cluster*
(the kubeconfig's content), however many Kymas' Secrets name it, is kept and reused: a fleet of
Kymas on a few clusters costs a few connections and a few drift watches, not one per Kyma. A
Kyma whose Secret changes (its resourceVersion) is looked up again at once; a connection that
fails with a connection or authentication error is dropped for every Kyma using it, so fixed
credentials take effect at once. The Secrets come from the fleet index (kopf's events), the
apiserver is asked only for one the index has not seen. The kubeconfig is untrusted input: it
may not run commands or read files here, and it never reaches a message.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass

from reconciler.errors import ClusterUnreachable, KubeApiError, ReconcilerError
from reconciler.kube.cluster import Cluster
from reconciler.model.kube_object import Body
from reconciler.model.lifecycle import KYMA_NAME
from reconciler.operator.clusters.control import ControlPlane
from reconciler.operator.clusters.fleet import FleetIndex


def connection_lost(exc: BaseException) -> bool:
    """Whether `exc` says a target cluster's connection is no good (the cluster out of reach,
    or its credentials refused): the controllers then drop it, and the next look-up connects
    afresh."""
    return isinstance(exc, ClusterUnreachable) or (
        isinstance(exc, KubeApiError) and exc.status in (401, 403)
    )


class TargetError(ReconcilerError):
    """The target cluster of a Kyma cannot be used (no Secret, bad kubeconfig, unreachable)."""


class TargetMissing(TargetError):
    """No Secret names the Kyma's remote cluster (gone, or never registered)."""


@dataclass
class _Entry:
    version: str
    """The Secret's resourceVersion this Kyma's entry was read from."""
    digest: str
    """Which connection: the digest of the kubeconfig's content."""


class TargetClusters:
    def __init__(
        self, control: ControlPlane, local: Cluster, fleet: FleetIndex | None = None
    ) -> None:
        self.control = control
        self.local = local
        self.fleet = fleet
        self._kymas: dict[tuple[str, str], _Entry] = {}
        self._clusters: dict[str, Cluster] = {}

    def __len__(self) -> int:
        """Open remote connections (one per cluster)."""
        return len(self._clusters)

    async def _secrets(self, namespace: str, kyma: str) -> list[Body]:
        known = self.fleet.secrets(namespace, kyma) if self.fleet is not None else []
        if known:
            return known
        return await self.control.list("Secret", namespace, f"{KYMA_NAME}={kyma}", api_version="v1")

    async def get(self, namespace: str, kyma: str, *, remote: bool) -> Cluster:
        if not remote:
            return self.local
        secrets = await self._secrets(namespace, kyma)
        where = f"Secret labelled {KYMA_NAME}={kyma} in namespace {namespace}"
        key = (namespace, kyma)
        if not secrets:
            await self.forget(namespace, kyma)
            raise TargetMissing(f"no {where}: the remote cluster's kubeconfig is missing")
        if len(secrets) > 1:
            # which one is the Kyma's is not ours to guess: a label another user set may point
            # a second Secret (another cluster) at this Kyma
            names = ", ".join(sorted(str(s["metadata"]["name"]) for s in secrets))
            await self.forget(namespace, kyma)
            raise TargetError(
                f"{len(secrets)} Secrets are labelled {KYMA_NAME}={kyma} in namespace "
                f"{namespace} ({names}): remove all but the Kyma's kubeconfig"
            )
        (secret,) = secrets
        version = str(secret["metadata"].get("resourceVersion", ""))
        entry = self._kymas.get(key)
        if entry is not None and entry.version == version and entry.digest in self._clusters:
            return self._clusters[entry.digest]
        try:
            cluster, digest = await self._connect(secret, kyma, where)
        except TargetError:
            await self.forget(namespace, kyma)
            raise
        self._kymas[key] = _Entry(version, digest)
        if entry is not None and entry.digest != digest:
            await self._close_unused(entry.digest)
        return cluster

    async def _connect(self, secret: Body, kyma: str, where: str) -> tuple[Cluster, str]:
        """The connection for the Secret's kubeconfig: the open one, or a new one."""
        encoded = (secret.get("data") or {}).get("config")
        if not encoded:
            raise TargetError(f"{where} has no key `config`")
        try:
            kubeconfig = base64.b64decode(encoded).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise TargetError(f"{where}: key `config` is not a UTF-8 kubeconfig") from None
        digest = hashlib.sha256(kubeconfig.encode()).hexdigest()
        cluster = self._clusters.get(digest)
        if cluster is not None:
            return cluster, digest
        try:
            cluster = await Cluster.connect(kubeconfig, text=True)
        except ReconcilerError as exc:
            raise TargetError(f"remote cluster of Kyma {kyma} ({where}): {exc}") from None
        if digest in self._clusters:  # another Kyma connected meanwhile: keep one
            await cluster.aclose()
            return self._clusters[digest], digest
        self._clusters[digest] = cluster
        return cluster, digest

    async def forget(self, namespace: str, kyma: str) -> None:
        """Look the Kyma's Secret up again next time (it changed or is gone); its connection
        stays while other Kymas use it (and is reused if the kubeconfig is the same)."""
        entry = self._kymas.pop((namespace, kyma), None)
        if entry is not None:
            await self._close_unused(entry.digest)

    async def _close_unused(self, digest: str) -> None:
        if any(held.digest == digest for held in self._kymas.values()):
            return
        cluster = self._clusters.pop(digest, None)
        if cluster is not None:
            await cluster.aclose()

    async def evict(self, namespace: str, kyma: str) -> None:
        """Drop the Kyma's connection after a connection or authentication error: for every Kyma
        on that cluster (they share it), so the next request of each connects afresh."""
        entry = self._kymas.pop((namespace, kyma), None)
        if entry is None:
            return
        cluster = self._clusters.pop(entry.digest, None)
        for other, held in list(self._kymas.items()):
            if held.digest == entry.digest:
                del self._kymas[other]
        if cluster is not None:
            await cluster.aclose()

    async def aclose(self) -> None:
        clusters, self._clusters = list(self._clusters.values()), {}
        self._kymas.clear()
        for cluster in clusters:
            await cluster.aclose()
