"""A work queue keyed by object: each key is handled by one worker at a time, a key added while
it is being handled runs once more afterwards, and a key added twice waits for the earlier time.

This is the controller-runtime model (level-triggered: the handler reads the object fresh and
returns when to look again; client-go's `util/workqueue`), which keeps kopf to what it does well
here: watching. Operator mode and the infrastructure manager share it.

A handler may ask whether the key it runs for is due only to its own timer (`by_timer`): nothing
was added for it from outside since its last run, which lets a controller whose watches would have
reported any change skip the periodic re-check (operator mode's settled Manifests).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Awaitable, Callable, Hashable

from reconciler.observability.logging import get_logger
from reconciler.util.polling import wait_event

Handler = Callable[[Hashable], Awaitable[float | None]]
"""Handle one key; return seconds until it should be handled again (None: only on events)."""


class WorkQueue:
    def __init__(
        self,
        handler: Handler,
        *,
        workers: int = 8,
        error_delay: float = 5.0,
        part: str = "work-queue",
    ) -> None:
        self.handler = handler
        self.workers = workers
        self.error_delay = error_delay
        self._heap: list[tuple[float, int, Hashable]] = []
        self._due: dict[Hashable, float] = {}
        self._active: set[Hashable] = set()
        self._dirty: set[Hashable] = set()
        self._events: set[Hashable] = set()
        """Keys added from outside (not by their own handler's delay) since their last run."""
        self._by_timer: dict[Hashable, bool] = {}
        self._seq = itertools.count()
        self._wake = asyncio.Event()
        self._log = get_logger(part=part)

    def __len__(self) -> int:
        return len(self._due)

    def add(self, key: Hashable, delay: float = 0.0, *, timer: bool = False) -> None:
        """Handle `key` in `delay` seconds (or earlier if it is already due earlier); `timer`:
        the handler's own "look again" (the queue's), not a change reported from outside."""
        if not timer:
            self._events.add(key)
        due = time.monotonic() + max(delay, 0.0)
        if key in self._active and delay <= 0:
            self._dirty.add(key)
            return
        if self._due.get(key, float("inf")) <= due:
            return
        self._due[key] = due
        heapq.heappush(self._heap, (due, next(self._seq), key))
        self._wake.set()

    async def _next(self) -> Hashable:
        while True:
            if not self._heap:
                self._wake.clear()
                await self._wake.wait()
                continue
            due, _, key = self._heap[0]
            if self._due.get(key) != due:
                heapq.heappop(self._heap)  # superseded by an earlier time
                continue
            wait = due - time.monotonic()
            if wait > 0:
                self._wake.clear()
                await wait_event(self._wake, wait)
                continue
            heapq.heappop(self._heap)
            del self._due[key]
            if key in self._active:
                self._dirty.add(key)
                continue
            self._active.add(key)
            return key

    def by_timer(self, key: Hashable) -> bool:
        """Whether the running handler of `key` was started only by its own timer."""
        return self._by_timer.get(key, False)

    async def _work(self) -> None:
        while True:
            key = await self._next()
            self._by_timer[key] = key not in self._events
            self._events.discard(key)
            delay: float | None
            try:
                delay = await self.handler(key)
            except Exception:
                self._log.exception("handler failed", key=str(key))
                delay = self.error_delay
            finally:
                self._active.discard(key)
                self._by_timer.pop(key, None)
            if key in self._dirty:
                self._dirty.discard(key)
                self.add(key)
            if delay is not None:
                self.add(key, delay, timer=True)

    async def run(self) -> None:
        """Work until cancelled."""
        async with asyncio.TaskGroup() as group:
            for _ in range(self.workers):
                group.create_task(self._work())
