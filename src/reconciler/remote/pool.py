"""The bounded pool of tasks one component reconciler service holds.

A task occupies a slot from acceptance until its final callback is delivered or given up, so a
full pool answers 429 and the mothership retries elsewhere or later: backpressure instead of an
unbounded queue. A task already in the pool (same correlation ID) is acknowledged again without a
second run; it takes over the new hand-over's callback secret (the mothership issued that one and
refuses the old), so a task the mothership re-sends, e.g. after it took it for an orphan, keeps
reporting. Shutdown cancels what runs and tells the mothership, best effort within a short
timeout, so it can retry the operation elsewhere at once instead of waiting for orphan detection.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import time
from collections.abc import Callable, Coroutine
from typing import Any

from reconciler.model.remote import CallbackStatus
from reconciler.observability.logging import get_logger
from reconciler.remote.callbacks import CallbackSender
from reconciler.remote.metrics import ServiceMetrics
from reconciler.remote.worker import Job

SHUTDOWN_ERROR = "component reconciler shutting down"


class Admission(enum.Enum):
    ACCEPTED = "accepted"
    DUPLICATE = "duplicate"
    BUSY = "busy"
    SHUTTING_DOWN = "shutting_down"


class WorkerPool:
    def __init__(self, size: int, metrics: ServiceMetrics) -> None:
        self.size = size
        self.metrics = metrics
        self.accepting = True
        self._running: dict[str, tuple[Job, asyncio.Task[None]]] = {}
        metrics.pool_size.set(size)
        metrics.pool_busy.set(0)

    @property
    def busy(self) -> int:
        return len(self._running)

    def jobs(self) -> list[Job]:
        return [job for job, _ in self._running.values()]

    def submit(self, job: Job, run: Callable[[Job], Coroutine[Any, Any, None]]) -> Admission:
        """Take `job` and start `run(job)` in the background, or say why not."""
        key = job.remote.correlation_id
        if not self.accepting:
            return Admission.SHUTTING_DOWN
        if key in self._running:
            running = self._running[key][0].remote
            running.callback_secret = job.remote.callback_secret  # in place: deliveries see it
            return Admission.DUPLICATE
        if len(self._running) >= self.size:
            return Admission.BUSY
        task = asyncio.create_task(run(job), name=f"task-{job.component}-{key}")
        self._running[key] = (job, task)
        self.metrics.pool_busy.set(len(self._running))
        task.add_done_callback(lambda finished: self._done(key, finished))
        return Admission.ACCEPTED

    def _done(self, key: str, task: asyncio.Task[None]) -> None:
        self._running.pop(key, None)
        self.metrics.pool_busy.set(len(self._running))
        if not task.cancelled() and task.exception() is not None:
            get_logger(correlation_id=key).error(
                "task runner crashed", error=repr(task.exception())
            )

    async def shutdown(self, callbacks: CallbackSender, timeout: float) -> None:
        """Stop accepting, cancel every task, tell the mothership about each (best effort)."""
        self.accepting = False
        running = list(self._running.values())
        if not running:
            return
        get_logger().warning("shutting down with tasks running", tasks=len(running))
        for _, task in running:
            task.cancel()
        await asyncio.gather(*(task for _, task in running), return_exceptions=True)
        deadline = time.monotonic() + timeout

        async def notify(job: Job) -> None:
            if job.delivered:
                return
            self.metrics.tasks.labels(component=job.component, result="cancelled").inc()
            message = job.final or job.message(CallbackStatus.FAILED, SHUTDOWN_ERROR)
            await callbacks.send(
                job.remote,
                message,
                timeout=max(0.1, deadline - time.monotonic()),
            )

        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await asyncio.gather(*(notify(job) for job, _ in running))
