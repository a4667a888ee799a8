"""The renders of one component reconciler: the render cache and the renders in flight.

A render is known by the digest of its inputs (`ChartProvider.digest`, the fingerprint of the
cluster's capabilities included). `Renders` keeps the last ones (least recently used out) and
the ones still running, so that a component's turn finds what its render ahead made (or waits
for it) instead of rendering the same inputs again. A render made while the capabilities moved
is not kept.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict

from reconciler.charts.render import Capabilities
from reconciler.core.charts import ChartProvider
from reconciler.kube.cluster import Cluster
from reconciler.model.kube_object import KubeObject
from reconciler.model.task import Task


class RenderCache:
    """Rendered objects by input digest, least recently used dropped beyond `size`."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[str, list[KubeObject]] = OrderedDict()

    def get(self, digest: str) -> list[KubeObject] | None:
        found = self._entries.get(digest)
        if found is not None:
            self._entries.move_to_end(digest)
        return found

    def put(self, digest: str, objects: list[KubeObject]) -> None:
        if self.size <= 0:
            return
        self._entries[digest] = list(objects)
        self._entries.move_to_end(digest)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)


class Renders:
    def __init__(self, charts: ChartProvider, size: int) -> None:
        self.charts = charts
        self.cache = RenderCache(size)
        self._flights: dict[str, asyncio.Future[list[KubeObject]]] = {}
        """Renders in progress by input digest."""

    @staticmethod
    async def capabilities(cluster: Cluster) -> Capabilities:
        """The cluster's version and API versions, as Helm's `.Capabilities` (both cached by
        the cluster connection; API versions refresh when CRDs change discovery)."""
        return Capabilities(await cluster.version(), tuple(await cluster.mapper.api_versions()))

    @staticmethod
    async def fingerprint(cluster: Cluster) -> str:
        """Changes whenever the cluster's capabilities may (cached by the connection)."""
        return f"{await cluster.version()}/{await cluster.mapper.fingerprint()}"

    async def inputs(self, task: Task, cluster: Cluster) -> tuple[str, str]:
        """The capabilities' fingerprint, and the digest of everything `task`'s render depends
        on (that fingerprint included)."""
        fingerprint = await self.fingerprint(cluster)
        return fingerprint, await self.charts.digest(task, fingerprint)

    async def render(self, task: Task, cluster: Cluster) -> list[KubeObject]:
        """Rendered now for the cluster's capabilities, not cached."""
        return await self.charts.render(task, await self.capabilities(cluster))

    async def once(
        self, task: Task, cluster: Cluster, digest: str, fingerprint: str
    ) -> list[KubeObject]:
        """The render for `digest` (taken with the capabilities' `fingerprint`): from the cache,
        from a render of it still running, or rendered now (and cached: callers copy the list,
        never change its objects)."""
        cached = self.cache.get(digest)
        if cached is not None:
            return cached
        flight = self._flights.get(digest)
        if flight is None or flight.cancelled():
            flight = asyncio.ensure_future(self._into_cache(task, cluster, digest, fingerprint))
            self._flights[digest] = flight

            def done(finished: asyncio.Future[list[KubeObject]]) -> None:
                if self._flights.get(digest) is finished:
                    del self._flights[digest]
                if not finished.cancelled():
                    finished.exception()  # retrieved: a render ahead's failure is not logged

            flight.add_done_callback(done)
        return await asyncio.shield(flight)

    async def _into_cache(
        self, task: Task, cluster: Cluster, digest: str, fingerprint: str
    ) -> list[KubeObject]:
        objects = await self.render(task, cluster)
        if await self.fingerprint(cluster) == fingerprint:  # capabilities did not move since
            self.cache.put(digest, objects)
        return objects
