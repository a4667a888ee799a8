"""Remote changes reach the operator at once: a metadata watch on each remote cluster for the
remote Kyma and the module custom resources, each event requeueing the Kyma's remote sync.

This is the operator's own path to remote events; the watcher webhook (when deployed) reports
the same changes through `Operator.remote_changed`, and both only enqueue work, so either one
suffices and both together cost one extra no-op sync. A watch that fails is opened again at the
Kyma's next successful sync.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable

from reconciler.kube.cluster import Cluster
from reconciler.observability.logging import get_logger
from reconciler.operator.drift import Kind, follow


class RemoteWatch:
    def __init__(self, requeue: Callable[[Hashable], None]) -> None:
        self.requeue = requeue
        self._watches: dict[tuple[Cluster, Kind], asyncio.Task[None]] = {}
        self._owners: dict[Cluster, set[Hashable]] = {}
        """The Kymas synced with each cluster (one, unless several Secrets name it)."""
        self._log = get_logger(part="operator-remote-watch")

    def __len__(self) -> int:
        return len(self._watches)

    def track(self, cluster: Cluster, owner: Hashable, kinds: set[Kind]) -> None:
        """Requeue `owner` when any object of one of `kinds` changes on `cluster`."""
        self._owners.setdefault(cluster, set()).add(owner)
        for kind in kinds:
            key = (cluster, kind)
            if key not in self._watches or self._watches[key].done():
                self._watches[key] = asyncio.create_task(self._watch(cluster, kind))

    async def forget(self, cluster: Cluster, owner: Hashable) -> None:
        """`owner` no longer syncs with `cluster`; its watches close with the last owner."""
        owners = self._owners.get(cluster, set())
        owners.discard(owner)
        if owners:
            return
        self._owners.pop(cluster, None)
        await self._close(cluster)

    async def _close(self, cluster: Cluster) -> None:
        mine = [key for key in self._watches if key[0] is cluster]
        tasks = [self._watches.pop(key) for key in mine]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def aclose(self) -> None:
        self._owners.clear()
        for cluster in {key[0] for key in self._watches}:
            await self._close(cluster)

    async def _watch(self, cluster: Cluster, kind: Kind) -> None:
        def seen(_type: str, _meta: object) -> None:
            for owner in self._owners.get(cluster, ()):
                self.requeue(owner)

        await follow(cluster, kind, {}, seen, self._log)
