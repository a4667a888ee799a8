"""Running one accepted task to its end: attempts, heartbeats and the final callback.

A task is tried `1 + componentConfiguration.maxRetries` times within its timeout (counted from
acceptance); every attempt connects to the cluster afresh and runs the core. The mothership hears
`running` at once and then every `heartbeat_interval`, `failed` after each attempt that will be
retried, and exactly one final `success` or `error`, always as the last callback (callbacks of a
task are serialised, so no heartbeat can overtake the result). A heartbeat answered 400/404 means
the mothership has given the operation up: the work stops and nothing more is sent.
Everything the task does runs inside `scrubbing(...)` with the task's scrubber (its kubeconfig,
the credentials in it, its secret configuration values), and every error passes through it before
a callback: no secret of the task leaves in a callback or a log line.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from dataclasses import dataclass, field

from reconciler.core.actions import ActionRegistry
from reconciler.core.charts import ChartProvider
from reconciler.core.runner import ComponentReconciler
from reconciler.errors import KubeconfigError, ReconcilerError
from reconciler.kube import kubeconfig
from reconciler.kube.clients import ClientCache
from reconciler.model.operation import BLOCKER_MAX
from reconciler.model.remote import CallbackMessage, CallbackStatus, RemoteTask
from reconciler.model.task import ProgressEvent
from reconciler.observability.logging import get_logger
from reconciler.remote.callbacks import CallbackSender, Delivery
from reconciler.remote.metrics import ServiceMetrics
from reconciler.remote.settings import ComponentSettings
from reconciler.util.backoff import delays
from reconciler.util.polling import wait_event
from reconciler.util.secrecy import Scrubber, scrubbing


@dataclass
class Job:
    """One accepted task and what is known about its callbacks."""

    remote: RemoteTask
    accepted: float = field(default_factory=time.monotonic)
    retry_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    attempt: int = 0
    final: CallbackMessage | None = None
    """The result, once known (it may still be undelivered)."""
    delivered: bool = False
    """The final callback was taken, or the mothership said it expects none."""
    abandoned: bool = False
    phase: str = ""
    blocker: str = ""
    """What keeps the component from being ready, scrubbed; sent until the task succeeds."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def component(self) -> str:
        return self.remote.component

    @property
    def deadline(self) -> float:
        return self.accepted + self.remote.timeout

    def message(self, status: CallbackStatus, error: str = "") -> CallbackMessage:
        return CallbackMessage(
            status=status,
            error=error,
            retry_id=self.retry_id,
            processing_duration=int((time.monotonic() - self.accepted) * 1000),
            blocker="" if status is CallbackStatus.SUCCESS else self.blocker,
        )


class TaskRunner:
    """Runs jobs; shared by all of them (it keeps no per-task state of its own)."""

    def __init__(
        self,
        settings: ComponentSettings,
        charts: ChartProvider,
        actions: ActionRegistry,
        callbacks: CallbackSender,
        metrics: ServiceMetrics,
        clients: ClientCache,
    ) -> None:
        self.settings = settings
        self.clients = clients
        self.charts = charts
        self.actions = actions
        self.callbacks = callbacks
        self.metrics = metrics

    async def run(self, job: Job) -> None:
        """Attempts with heartbeats, then the final callback; returns when that is settled."""
        scrub = kubeconfig.scrubber(job.remote.kubeconfig, job.remote.secret_values())
        with scrubbing(scrub):
            await self._run(job, scrub)

    async def _run(self, job: Job, scrub: Scrubber) -> None:
        log = get_logger(component=job.component, correlation_id=job.remote.correlation_id)
        log.info("task accepted", type=job.remote.type, attempts=self._attempts(job))
        stop = asyncio.Event()
        work = asyncio.create_task(self._attempt_all(job, scrub))
        heartbeats = asyncio.create_task(self._heartbeats(job, stop, work))
        try:
            status, error = await work
        except asyncio.CancelledError:
            heartbeats.cancel()
            await asyncio.gather(heartbeats, return_exceptions=True)
            task = asyncio.current_task()
            if not job.abandoned or (task is not None and task.cancelling()):
                raise
            log.warning("task abandoned: the mothership no longer expects it")
            self.metrics.tasks.labels(component=job.component, result="abandoned").inc()
            job.delivered = True
            return
        except Exception as exc:  # a bug must still end in one final callback
            log.exception("task failed unexpectedly")
            status = CallbackStatus.ERROR
            error = scrub(f"component {job.component}: internal error: {type(exc).__name__}")
        stop.set()
        await heartbeats
        seconds = time.monotonic() - job.accepted
        self.metrics.task_duration.labels(component=job.component).observe(seconds)
        self.metrics.tasks.labels(component=job.component, result=status.value).inc()
        (log.info if status is CallbackStatus.SUCCESS else log.error)(
            "task finished", status=status.value, seconds=round(seconds, 3), error=error
        )
        job.final = job.message(status, error)
        deadline = max(job.deadline, time.monotonic() + self.settings.final_callback_grace)
        async with job.lock:
            delivery = await self.callbacks.deliver(job.remote, job.final, deadline=deadline)
        job.delivered = delivery is not Delivery.FAILED

    def _attempts(self, job: Job) -> int:
        return 1 + job.remote.component_configuration.max_retries

    async def _heartbeats(self, job: Job, stop: asyncio.Event, work: asyncio.Task[object]) -> None:
        """`running` now and every interval until `stop`; a send in flight is finished first."""
        while not stop.is_set():
            async with job.lock:
                if stop.is_set():
                    return
                delivery = await self.callbacks.send(
                    job.remote, job.message(CallbackStatus.RUNNING)
                )
            if delivery is Delivery.NOT_EXPECTED:
                job.abandoned = True
                work.cancel()
                return
            await wait_event(stop, self.settings.heartbeat_interval)

    async def _attempt_all(self, job: Job, scrub: Scrubber) -> tuple[CallbackStatus, str]:
        attempts = self._attempts(job)
        waits = delays(self.settings.retry_delay, self.settings.retry_max_delay)
        delay = next(waits)
        while True:
            job.attempt += 1
            job.retry_id = str(uuid.uuid4())
            error, retryable = await self._attempt(job, scrub)
            if not error:
                return CallbackStatus.SUCCESS, ""
            error = scrub(error)
            remaining = job.deadline - time.monotonic()
            if job.attempt >= attempts or not retryable or remaining <= delay:
                return CallbackStatus.ERROR, error
            get_logger(component=job.component, correlation_id=job.remote.correlation_id).warning(
                "attempt failed, retrying", attempt=job.attempt, error=error, delay=delay
            )
            async with job.lock:
                await self.callbacks.send(job.remote, job.message(CallbackStatus.FAILED, error))
            await asyncio.sleep(delay)  # backoff between attempts
            delay = next(waits)

    async def _attempt(self, job: Job, scrub: Scrubber) -> tuple[str, bool]:
        """One attempt: (error or "", whether another attempt may help)."""
        component = job.component
        remaining = job.deadline - time.monotonic()
        task = dataclasses.replace(job.remote.to_task(), timeout=max(1.0, remaining))

        job.phase = job.blocker = ""  # what blocked an earlier attempt is not known to now

        def report(event: ProgressEvent) -> None:
            job.phase = event.phase
            if event.blocker:
                job.blocker = scrub(event.blocker)[:BLOCKER_MAX]

        try:
            # a second of slack: the core's own readiness timeout says more about what is missing
            async with asyncio.timeout(max(0.0, remaining) + 1.0):
                try:
                    async with self.clients.cluster(job.remote.kubeconfig) as cluster:
                        # a fresh core per attempt: its capabilities cache is keyed per cluster
                        core = ComponentReconciler(
                            self.charts,
                            self.actions,
                            full_after=self.settings.full_reconcile_after,
                        )
                        outcome = await core.run(task, cluster, report)
                except KubeconfigError as exc:
                    return f"component {component}: {exc}", False
                except ReconcilerError as exc:  # the apiserver did not answer
                    return f"component {component}: {exc}", True
        except TimeoutError:  # what it was waiting for says most: the blocking object
            doing = job.blocker or f"while {job.phase or 'connecting'}"
            return (
                f"component {component}: task timed out after {job.remote.timeout:g}s ({doing})",
                False,
            )
        return outcome.error, True
