"""`reconciler infra run`: watches, one work queue, the Runtime state machine, wired.

Runtimes are listed and watched on the control plane (`kube/informer.py`); a change of what the
machine reacts to (generation, deletion, finalizers, annotations: not its own status writes)
puts the Runtime on the work queue (`kube/workqueue.py`, shared with operator mode: one worker
per Runtime at a time, `workers` in parallel, requeue at the time the machine asks for).
A GardenerCluster's force-rotation annotation requeues its Runtime. Gardener is asked through
one client whose rate limit all workers share.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Hashable
from typing import Any, cast

from reconciler.infra.gardener import Gardener, RateLimiter
from reconciler.infra.machine import RuntimeMachine
from reconciler.infra.metrics import InfraMetrics
from reconciler.infra.settings import InfraSettings
from reconciler.kube.client import KubeClient
from reconciler.kube.cluster import Cluster
from reconciler.kube.informer import list_and_watch
from reconciler.kube.workqueue import WorkQueue
from reconciler.model.infrastructure import FORCE_ROTATION, GROUP, VERSION
from reconciler.util.clock import Clock, utcnow

Key = tuple[str, str]


def _essence(body: dict[str, Any]) -> tuple[Any, ...]:
    meta = body.get("metadata", {})
    return (
        meta.get("generation"),
        meta.get("deletionTimestamp"),
        tuple(meta.get("finalizers") or []),
        tuple(sorted((meta.get("annotations") or {}).items())),
    )


class InfraManager:
    def __init__(
        self,
        kcp: Cluster,
        garden: KubeClient,
        settings: InfraSettings | None = None,
        *,
        clock: Clock = utcnow,
        metrics: InfraMetrics | None = None,
    ) -> None:
        self.settings = settings or InfraSettings()
        self.kcp = kcp
        self.metrics = metrics or InfraMetrics()
        limiter = RateLimiter(self.settings.gardener_rate, self.settings.gardener_burst)
        self.gardener = Gardener(
            garden, self.settings.gardener_project, limiter, self.metrics.gardener_request
        )
        self.machine = RuntimeMachine(kcp, self.gardener, self.settings, self.metrics, clock)
        self.queue = WorkQueue(
            self._handle,
            workers=self.settings.workers,
            error_delay=self.settings.error_interval,
            part="infra-queue",
        )
        self.metrics.watch_queue(lambda: len(self.queue))
        self._seen: dict[Key, tuple[Any, ...]] = {}

    async def _handle(self, key: Hashable) -> float | None:
        namespace, name = cast(Key, key)
        started = time.monotonic()
        try:
            return await self.machine.handle(namespace, name)
        except Exception:
            self.metrics.unexpected_stops.inc()
            raise
        finally:
            self.metrics.duration.observe(time.monotonic() - started)

    def _runtime_event(self, kind: str, body: dict[str, Any]) -> None:
        meta = body["metadata"]
        key = (str(meta["namespace"]), str(meta["name"]))
        if kind == "DELETED":
            self._seen.pop(key, None)
            return
        essence = _essence(body)
        if self._seen.get(key) != essence:
            self._seen[key] = essence
            self.queue.add(key)

    def _cluster_event(self, kind: str, body: dict[str, Any]) -> None:
        meta = body["metadata"]
        if kind != "DELETED" and FORCE_ROTATION in (meta.get("annotations") or {}):
            # named after the runtime id, which is the Runtime's name (the machine refuses others)
            self.queue.add((str(meta["namespace"]), str(meta["name"])))

    def _path(self, plural: str, namespace: str | None) -> str:
        scope = f"/namespaces/{namespace}" if namespace else ""
        return f"/apis/{GROUP}/{VERSION}{scope}/{plural}"

    async def run(
        self,
        *,
        namespace: str | None = None,
        stop: asyncio.Event | None = None,
        ready: asyncio.Event | None = None,
    ) -> None:
        """Run until `stop` is set (or cancelled); `ready` once the Runtimes were listed."""
        synced = ready or asyncio.Event()
        client = self.kcp.client
        tasks = [
            asyncio.create_task(self.queue.run()),
            asyncio.create_task((stop or asyncio.Event()).wait()),
            asyncio.create_task(
                list_and_watch(
                    client, self._path("runtimes", namespace), self._runtime_event, synced=synced
                )
            ),
            asyncio.create_task(
                list_and_watch(
                    client, self._path("gardenerclusters", namespace), self._cluster_event
                )
            ),
        ]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            results = await asyncio.gather(*tasks, return_exceptions=True)
        if isinstance(results[0], Exception):
            raise results[0]
