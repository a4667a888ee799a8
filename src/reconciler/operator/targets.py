"""Which cluster a module goes to: the operator's own, or the remote one of its Kyma.

A remote cluster's kubeconfig is the `config` key of the Secret labelled
`operator.kyma-project.io/kyma-name=<kyma>` in the Kyma's namespace. One connection per cluster
is kept and reused; it is replaced as soon as the Secret changes (its resourceVersion) and
dropped on connection or authentication errors, so fixed credentials take effect at once. The
kubeconfig is untrusted input: it may not run commands or read files here, and it never
reaches a message.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from reconciler.errors import ReconcilerError
from reconciler.kube.cluster import Cluster
from reconciler.operator.control import ControlPlane
from reconciler.operator.resources import KYMA_NAME


class TargetError(ReconcilerError):
    """The target cluster of a Kyma cannot be used (no Secret, bad kubeconfig, unreachable)."""


class TargetMissing(TargetError):
    """No Secret names the Kyma's remote cluster (gone, or never registered)."""


@dataclass
class _Entry:
    version: str
    cluster: Cluster


class TargetClusters:
    def __init__(self, control: ControlPlane, local: Cluster) -> None:
        self.control = control
        self.local = local
        self._cache: dict[tuple[str, str], _Entry] = {}

    def __len__(self) -> int:
        return len(self._cache)

    async def get(self, namespace: str, kyma: str, *, remote: bool) -> Cluster:
        if not remote:
            return self.local
        secrets = await self.control.list(
            "Secret", namespace, f"{KYMA_NAME}={kyma}", api_version="v1"
        )
        where = f"Secret labelled {KYMA_NAME}={kyma} in namespace {namespace}"
        if not secrets:
            await self.evict(namespace, kyma)
            raise TargetMissing(f"no {where}: the remote cluster's kubeconfig is missing")
        secret = min(secrets, key=lambda s: str(s["metadata"]["name"]))
        version = str(secret["metadata"].get("resourceVersion", ""))
        key = (namespace, kyma)
        cached = self._cache.get(key)
        if cached is not None and cached.version == version:
            return cached.cluster
        await self.evict(namespace, kyma)
        encoded = (secret.get("data") or {}).get("config")
        if not encoded:
            raise TargetError(f"{where} has no key `config`")
        try:
            kubeconfig = base64.b64decode(encoded).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise TargetError(f"{where}: key `config` is not a UTF-8 kubeconfig") from None
        try:
            cluster = await Cluster.connect(kubeconfig, text=True)
        except ReconcilerError as exc:
            raise TargetError(f"remote cluster of Kyma {kyma} ({where}): {exc}") from None
        self._cache[key] = _Entry(version, cluster)
        return cluster

    async def evict(self, namespace: str, kyma: str) -> None:
        """Forget the connection (after auth/connection errors, or when the Secret changed)."""
        entry = self._cache.pop((namespace, kyma), None)
        if entry is not None:
            await entry.cluster.aclose()

    async def aclose(self) -> None:
        for namespace, kyma in list(self._cache):
            await self.evict(namespace, kyma)
