"""Drift on target clusters is reverted within seconds, not at the next periodic requeue.

For every kind a Manifest installed, one metadata-only watch per target cluster (all namespaces,
objects carrying the core's component label) is kept open; an event on an object of a known
component requeues that component's Manifest, whose run takes the core's fast path: compare
live metadata with the record, re-apply only what changed. Our own applies come back as events
too; one whose newest managedFields entry is the core's own is that echo and requeues nothing
(at fleet scale it would double every install). Anyone else's write, a controller's status
update (readiness) and every deletion requeue. A watch that fails is dropped and opened again at
the Manifest's next successful run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable
from typing import Any

from reconciler.errors import ReconcilerError
from reconciler.kube.client import FIELD_MANAGER
from reconciler.kube.cluster import Cluster
from reconciler.kube.informer import watch_from
from reconciler.kube.transform import COMPONENT
from reconciler.observability.logging import get_logger

METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
METADATA_EVENTS = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"

Kind = tuple[str, str]
"""(apiVersion, kind)."""


def own_write(meta: dict[str, Any]) -> bool:
    """Whether the object's last write was the core's apply: its managedFields entry is strictly
    newer than everyone else's (timestamps have seconds only: a tie counts as someone else's)."""
    entries = meta.get("managedFields") or []
    ours = [str(e.get("time", "")) for e in entries if e.get("manager") == FIELD_MANAGER]
    others = [str(e.get("time", "")) for e in entries if e.get("manager") != FIELD_MANAGER]
    return bool(ours) and (not others or max(ours) > max(others))


class KindWatches:
    """Metadata watches by (cluster, kind), opened on demand and known to cover a moment.

    `covers` says whether the watches of a set of kinds have been open without a gap since a
    given moment: then any change since then was reported, and a periodic re-check of a settled
    resource can be skipped (`operator/settled.py`)."""

    def __init__(
        self, requeue: Callable[[Hashable], None], part: str, params: dict[str, str] | None = None
    ) -> None:
        self.requeue = requeue
        self.params = params or {}
        """The watches' query (e.g. a label selector)."""
        self._watches: dict[tuple[Cluster, Kind], asyncio.Task[None]] = {}
        self._since: dict[tuple[Cluster, Kind], float] = {}
        """When each open watch started seeing every change (its listing's time, monotonic)."""
        self._log = get_logger(part=part)

    def __len__(self) -> int:
        return len(self._watches)

    def _open(self, cluster: Cluster, kinds: set[Kind]) -> None:
        for kind in kinds:
            key = (cluster, kind)
            if key not in self._watches or self._watches[key].done():
                self._watches[key] = asyncio.create_task(self._watch(cluster, kind))

    def covers(self, cluster: Cluster, kinds: set[Kind], since: float) -> bool:
        """Whether the watches of all `kinds` on `cluster` are open and have seen every change
        since `since` (monotonic seconds): each listed no later than that and never failed."""
        for kind in kinds:
            task = self._watches.get((cluster, kind))
            started = self._since.get((cluster, kind))
            if task is None or task.done() or started is None or started > since:
                return False
        return True

    async def _close(self, keys: list[tuple[Cluster, Kind]]) -> None:
        tasks = [self._watches.pop(key) for key in keys if key in self._watches]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def aclose(self) -> None:
        await self._close(list(self._watches))

    def seen(self, cluster: Cluster, event_type: str, meta: dict[str, Any]) -> None:
        """One event of a watch on `cluster`: requeue whom it concerns."""
        raise NotImplementedError

    async def _watch(self, cluster: Cluster, kind: Kind) -> None:
        def seen(event_type: str, meta: dict[str, Any]) -> None:
            self.seen(cluster, event_type, meta)

        def listed() -> None:
            self._since[(cluster, kind)] = time.monotonic()

        try:
            await follow(cluster, kind, self.params, seen, self._log, listed)
        finally:
            self._since.pop((cluster, kind), None)


class DriftWatch(KindWatches):
    def __init__(self, requeue: Callable[[Hashable], None]) -> None:
        super().__init__(requeue, "operator-drift", {"labelSelector": COMPONENT})
        self._owners: dict[tuple[Cluster, str], Hashable] = {}

    def track(self, cluster: Cluster, component: str, owner: Hashable, kinds: set[Kind]) -> None:
        """Requeue `owner` when an object of `component` of one of `kinds` changes."""
        self._owners[(cluster, component)] = owner
        self._open(cluster, kinds)

    def forget(self, cluster: Cluster, component: str) -> None:
        self._owners.pop((cluster, component), None)

    def seen(self, cluster: Cluster, event_type: str, meta: dict[str, Any]) -> None:
        if event_type != "DELETED" and own_write(meta):
            return
        component = (meta.get("labels") or {}).get(COMPONENT, "")
        owner = self._owners.get((cluster, component))
        if owner is not None:
            self.requeue(owner)


async def follow(
    cluster: Cluster,
    kind: Kind,
    params: dict[str, str],
    seen: Callable[[str, dict[str, Any]], None],
    log: Any,
    listed: Callable[[], None] | None = None,
) -> None:
    """Watch the metadata of every object of `kind` (all namespaces, filtered by `params`) and
    call `seen` with each event's type and object metadata, until the watch fails or is
    cancelled; a failure is logged, not raised (the caller opens it again when it next needs
    it). `listed` is called once the watch's starting point is fixed: every change after that
    moment reaches `seen`."""
    try:
        info = await cluster.mapper.resolve(*kind)
        path = info.path(None)
        listing = await cluster.client.request(
            "GET", path, params={**params, "limit": "1"}, accept=METADATA_ONLY
        )
        version = str(listing["metadata"]["resourceVersion"])
        if listed is not None:
            listed()
        events = watch_from(cluster.client, path, version, params, accept=METADATA_EVENTS)
        async for event_type, obj in events:
            seen(event_type, obj.get("metadata") or {})
    except ReconcilerError as exc:
        log.info("watch ended", kind=kind[1], reason=str(exc))
    except RuntimeError as exc:  # the cluster's connection was closed (evicted)
        log.info("watch ended", kind=kind[1], reason=str(exc))
