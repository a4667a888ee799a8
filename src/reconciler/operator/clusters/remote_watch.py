"""Remote changes reach the operator at once: a metadata watch on each remote cluster for the
remote Kyma and the module custom resources, each event requeueing the Kyma's remote sync.

This is the operator's own path to remote events; the watcher webhook (when deployed) reports
the same changes through `Operator.remote_changed`, and both only enqueue work, so either one
suffices and both together cost one extra no-op sync. A watch that fails is opened again at the
Kyma's next successful sync.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from reconciler.kube.cluster import Cluster
from reconciler.operator.clusters.drift import Kind, KindWatches


class RemoteWatch(KindWatches):
    def __init__(self, requeue: Callable[[Hashable], None]) -> None:
        super().__init__(requeue, "operator-remote-watch")
        self._owners: dict[Cluster, set[Hashable]] = {}
        """The Kymas synced with each cluster (one, unless several Secrets name it)."""

    def track(self, cluster: Cluster, owner: Hashable, kinds: set[Kind]) -> None:
        """Requeue `owner` when any object of one of `kinds` changes on `cluster`."""
        self._owners.setdefault(cluster, set()).add(owner)
        self._open(cluster, kinds)

    async def forget(self, cluster: Cluster, owner: Hashable) -> None:
        """`owner` no longer syncs with `cluster`; its watches close with the last owner."""
        owners = self._owners.get(cluster, set())
        owners.discard(owner)
        if owners:
            return
        self._owners.pop(cluster, None)
        await self._close([key for key in self._watches if key[0] is cluster])

    async def aclose(self) -> None:
        self._owners.clear()
        await super().aclose()

    def seen(self, cluster: Cluster, event_type: str, meta: dict[str, Any]) -> None:
        for owner in self._owners.get(cluster, ()):
            self.requeue(owner)
