"""Watcher events that reach a process not holding the Kyma's shard, handed to the holder.

All operator processes sit behind one listener Service, so with N shards (N-1)/N of the
watchers' events reach a process that may not act on the Kyma. That process records the event
on the Kyma itself, a merge patch of the annotation `WATCHED_AT` (a timestamp); every process
watches the Kymas and requeues one whose annotation changed, and the holder's shard gate takes
it. No process needs to know who holds what, and nothing but the Kyma is written. Writes are
coalesced per Kyma (at most one every `interval`: a burst of events costs one write, the holder
reconciles once). The listener has already checked the sender's certificate against the Kyma.
"""

from __future__ import annotations

import asyncio
import time

from reconciler.errors import KubeApiError
from reconciler.model.lifecycle import GROUP
from reconciler.observability.logging import get_logger
from reconciler.operator.clusters.control import ControlPlane
from reconciler.util.clock import utcnow

WATCHED_AT = f"{GROUP}/watched-at"
"""Kyma annotation: when a watcher last reported a change of its remote cluster."""
COALESCE = 1.0
"""Seconds between two writes of the annotation on one Kyma."""


class EventForwarder:
    def __init__(self, control: ControlPlane, interval: float = COALESCE) -> None:
        self.control = control
        self.interval = interval
        self._last: dict[tuple[str, str], float] = {}
        self._pending: set[tuple[str, str]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._log = get_logger(part="operator-forward")

    def forward(self, namespace: str, name: str) -> None:
        """Record an event on the Kyma (soon: joined with the others of the same moment)."""
        key = (namespace, name)
        if key in self._pending:  # a write is coming anyway: this event rides along
            return
        self._pending.add(key)
        task = asyncio.create_task(self._write(key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _write(self, key: tuple[str, str]) -> None:
        wait = self._last.get(key, -self.interval) + self.interval - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        self._pending.discard(key)  # events from now on need a write of their own
        self._last[key] = time.monotonic()
        stamp = utcnow().strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        patch = {"metadata": {"annotations": {WATCHED_AT: stamp}}}
        try:
            await self.control.patch("Kyma", *key, patch)
        except KubeApiError as exc:  # the holder's periodic requeue still comes
            self._log.warning("could not hand a watcher event on", kyma=key[1], error=str(exc))

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
