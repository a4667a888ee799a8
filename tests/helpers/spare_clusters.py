"""Extra test-bed clusters started one test ahead.

About sixty tests need a second apiserver (an operator's remote cluster, a CLI's target), and
starting one (etcd, kube-apiserver to `/readyz`, kube-controller-manager to the default
ServiceAccount) takes 7-10 s. `cluster_factory` takes a started cluster from here and one of the
same kind is started at once in the background, while the test runs: the next test that asks
finds it ready. Every cluster is still fresh (used by one test, stopped afterwards).

The spares start on one long-lived thread with an event loop of its own: a test-bed process is
tied to the life of the thread that forked it (`processes.tied_to_parent`), so it must not be a
test's event loop (gone after the test) nor an executor's thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from pathlib import Path

from reconciler.devcluster import DevCluster

Kind = tuple[bool, bool]
"""(controller_manager, kubelet)."""


class SpareClusters:
    def __init__(self, directories: Callable[[], Path]) -> None:
        self._directories = directories
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="spare-clusters", daemon=True
        )
        self._thread.start()
        self._spares: dict[Kind, concurrent.futures.Future[DevCluster]] = {}

    def _start(self, kind: Kind) -> concurrent.futures.Future[DevCluster]:
        controller_manager, kubelet = kind
        cluster = DevCluster(
            self._directories(),
            controller_manager=controller_manager,
            kubelet=kubelet,
            die_with_parent=True,
        )

        async def start() -> DevCluster:
            await cluster.start()
            return cluster

        return asyncio.run_coroutine_threadsafe(start(), self._loop)

    async def take(self, controller_manager: bool, kubelet: bool) -> DevCluster:
        """A started cluster of this kind (the spare, else a new one); the next spare starts."""
        kind = (controller_manager, kubelet)
        ready = self._spares.pop(kind, None) or self._start(kind)
        try:
            return await asyncio.wrap_future(ready)
        finally:
            self._spares[kind] = self._start(kind)

    def close(self) -> None:
        """Stop the spares nobody took."""
        for ready in self._spares.values():
            with_cluster = ready.exception() is None
            if with_cluster:
                cluster = ready.result()
                asyncio.run_coroutine_threadsafe(cluster.stop(), self._loop).result()
        self._spares.clear()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
