"""The worker pool: claims processable operations and runs them through the invoker.

Concurrency is bounded per instance (`workers`) and per cluster (`per_cluster`), claims are
oldest-first, so one big cluster cannot starve the others. While an operation runs, a heartbeat
keeps it from being declared orphan; heartbeats and the final write ride out short database
outages (retry with backoff until the orphan timeout), and a run whose operation is lost to this
worker (the database unreachable past the orphan timeout) is stopped, so it does not run on
beside its re-run. A failure is retried with exponential backoff up to
`max_retries`, then it is an error. On shutdown, running operations are handed back as `orphan`
so another instance (or this one, restarted) picks them up at once: never lost, never half-done
without a record.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import functools
import os
import socket
import time
from collections import OrderedDict
from typing import Any

import structlog

from reconciler.errors import ReconcilerError
from reconciler.kube import kubeconfig
from reconciler.model.cluster import ClusterState
from reconciler.model.operation import BLOCKER_MAX, Operation
from reconciler.model.status import OperationState
from reconciler.mothership.invoker import Invoker, InvokeResult
from reconciler.mothership.loops import retry_transient
from reconciler.mothership.notifier import Channel, Notifier
from reconciler.mothership.settings import Settings
from reconciler.observability.metrics import Metrics
from reconciler.store.inventory import InventoryRepository
from reconciler.store.reconciliations import ReconciliationRepository
from reconciler.util.secrecy import NOTHING, Scrubber, scrubbing

log = structlog.get_logger()
STATE_CACHE = 2048


def worker_identity() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


class Blocker:
    """What keeps a running operation's component from being ready, as the run last reported
    it. The heartbeat loop stores it: at once when it changes (at most once a second), else
    with the next regular heartbeat; the final write stores the last one (cleared on success)."""

    def __init__(self) -> None:
        self.text = ""
        self.unsaved = False
        self.changed = asyncio.Event()

    def report(self, text: str) -> None:
        text = text[:BLOCKER_MAX]
        if text != self.text:
            self.text, self.unsaved = text, True
            self.changed.set()

    async def wait(self, timeout: float) -> None:
        """Until the next heartbeat is due or the blocker changed."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.changed.wait(), timeout)

    def take(self) -> str | None:
        """The text to store with this heartbeat; None when it is stored already."""
        self.changed.clear()
        if not self.unsaved:
            return None
        self.unsaved = False
        return self.text


class WorkerPool:
    def __init__(
        self,
        settings: Settings,
        repo: ReconciliationRepository,
        inventory: InventoryRepository,
        invoker: Invoker,
        notifier: Notifier,
        worker: str | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.settings = settings
        self.repo = repo
        self.inventory = inventory
        self.invoker = invoker
        self.notifier = notifier
        self.worker = worker or worker_identity()
        self.metrics = metrics
        self._states: OrderedDict[tuple[str, int], tuple[ClusterState, Scrubber]] = OrderedDict()
        self.running: dict[tuple[str, str], asyncio.Task[None]] = {}
        self.started_at: dict[tuple[str, str], float] = {}

    @property
    def occupancy(self) -> float:
        return len(self.running) / max(self.settings.workers, 1)

    async def run(self, stop: asyncio.Event) -> None:
        try:
            while not stop.is_set():
                free = self.settings.workers - len(self.running)
                claimed: list[Operation] = []
                if free > 0:
                    try:
                        claimed = await self.repo.claim(
                            self.worker, free, per_cluster=self.settings.per_cluster
                        )
                    except Exception as exc:  # database hiccup: try again after the interval
                        log.warning("claim failed", error=str(exc))
                for op in claimed:
                    if self.metrics is not None:
                        waited = (self.repo.clock() - op.updated).total_seconds()
                        self.metrics.queue_wait.observe(max(waited, 0.0))
                    task = asyncio.create_task(self._process(op))
                    self.running[op.key] = task
                    self.started_at[op.key] = time.monotonic()
                    task.add_done_callback(functools.partial(self._done, op.key))
                if not claimed or free <= len(claimed):
                    await self.notifier.wait(Channel.OPERATIONS, self.settings.sweep_interval)
        finally:
            await self._hand_back()

    def _done(self, key: tuple[str, str], _task: asyncio.Task[None]) -> None:
        self.running.pop(key, None)
        self.started_at.pop(key, None)
        self.notifier.wake(Channel.OPERATIONS)  # a slot is free: claim again at once

    async def _hand_back(self) -> None:
        """Cancel running operations and make them orphans so they are re-run elsewhere."""
        tasks = list(self.running.items())
        for _, task in tasks:
            task.cancel()
        for key, task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            try:
                handed = await self.repo.update(
                    key, OperationState.ORPHAN, reason="instance shut down", worker=self.worker
                )
            except Exception as exc:  # the orphan timeout hands it back instead
                log.warning("cannot hand back operation", key=key, error=str(exc))
                continue
            if not handed:
                log.warning("operation was no longer ours to hand back", key=key)

    async def _state(self, op: Operation) -> tuple[ClusterState, Scrubber]:
        """The configuration an operation works on and the scrubber of its secrets; config
        versions never change, so both are cached (the kubeconfig stays decrypted only in this
        process's memory)."""
        key = (op.runtime_id, op.config_version)
        cached = self._states.get(key)
        if cached is None:
            state = await self.inventory.at_config(*key)
            cached = state, kubeconfig.scrubber(state.spec.kubeconfig, state.spec.secret_values())
            self._states[key] = cached
            if len(self._states) > STATE_CACHE:
                self._states.popitem(last=False)
        else:
            self._states.move_to_end(key)
        return cached

    async def _heartbeat(
        self,
        key: tuple[str, str],
        bound: structlog.typing.FilteringBoundLogger,
        blocker: Blocker,
    ) -> bool:
        """Keep the operation alive. Returns True when the local run must stop: the database
        stayed unreachable past the orphan timeout, so the operation is (or is about to be)
        orphaned and run again elsewhere. Returns False when heartbeats are no longer needed:
        the operation left `in_progress` for this worker (a component reconciler reported on it
        while it was being handed over, or it was orphaned); the final write then tells."""
        alive_at = time.monotonic()
        while True:
            await blocker.wait(self.settings.heartbeat_interval)
            text = blocker.take()
            try:
                alive = await retry_transient(
                    "heartbeat",
                    functools.partial(self.repo.heartbeat, key, self.worker, blocker=text),
                    give_up_at=alive_at + self.settings.orphan_timeout,
                )
            except Exception as exc:
                bound.error("heartbeat lost past the orphan timeout", error=str(exc))
                return True
            if not alive:
                bound.debug("heartbeats end: the operation is no longer in progress here")
                return False
            alive_at = time.monotonic()
            if text is not None:  # a changing blocker writes at most once a second
                await asyncio.sleep(min(1.0, self.settings.heartbeat_interval))

    async def _invoke(
        self, op: Operation, bound: structlog.typing.FilteringBoundLogger, blocker: Blocker
    ) -> InvokeResult:
        def progress(text: str) -> None:
            blocker.report(scrub(text))  # stored and shown: never with the cluster's secrets

        scrub = NOTHING
        try:
            state, scrub = await retry_transient(
                "reading the configuration",
                lambda: self._state(op),
                give_up_at=time.monotonic() + self.settings.orphan_timeout,
            )
            # log lines of the work (the core's, a component's actions'): without the cluster's
            # secrets, and with the identifiers an SRE searches by
            with (
                scrubbing(scrub),
                structlog.contextvars.bound_contextvars(
                    runtime_id=op.runtime_id, scheduling_id=op.scheduling_id
                ),
            ):
                result = await asyncio.wait_for(
                    self.invoker.invoke(op, state, progress), self.settings.operation_timeout
                )
        except TimeoutError:
            result = InvokeResult(
                False,
                f"component {op.component}: no result within {self.settings.operation_timeout:g}s",
                transient=True,
            )
        except ReconcilerError as exc:
            result = InvokeResult(False, f"component {op.component}: {exc}")
        except Exception as exc:  # a bug must fail the operation, not the pool
            with scrubbing(scrub):
                bound.exception("invoker crashed")
            result = InvokeResult(False, f"component {op.component}: internal error: {exc!r}")
        # a reason is stored, shown and logged: never with the cluster's secrets in it
        return dataclasses.replace(result, reason=scrub(result.reason))

    async def _process(self, op: Operation) -> None:
        bound = log.bind(
            runtime_id=op.runtime_id,
            scheduling_id=op.scheduling_id,
            correlation_id=op.correlation_id,
            component=op.component,
        )
        blocker = Blocker()
        work = asyncio.create_task(self._invoke(op, bound, blocker))
        heartbeat = asyncio.create_task(self._heartbeat(op.key, bound, blocker))
        try:
            await asyncio.wait({work, heartbeat}, return_when=asyncio.FIRST_COMPLETED)
            if not work.done() and not heartbeat.result():
                await asyncio.wait({work})  # no heartbeat needed any more: let the run end
        finally:
            for task in (work, heartbeat):
                task.cancel()
            await asyncio.gather(work, heartbeat, return_exceptions=True)
        if work.cancelled():
            bound.error("local run stopped: the operation is left to whoever owns it now")
            return
        await self._record(op, work.result(), bound, blocker.text)

    async def _write(
        self,
        op: Operation,
        state: OperationState,
        bound: structlog.typing.FilteringBoundLogger,
        **changes: Any,
    ) -> bool:
        """Write the operation's result (compare-and-set: still in progress for this worker),
        carried over short database outages; log when the write was refused or impossible."""
        try:
            written = await retry_transient(
                "recording the result",
                lambda: self.repo.update(op.key, state, worker=self.worker, **changes),
                give_up_at=time.monotonic() + self.settings.orphan_timeout,
            )
        except Exception as exc:
            bound.error(
                "result lost: the operation will be orphaned", state=state.value, error=str(exc)
            )
            return False
        if not written:
            bound.warning(
                "result not recorded: the operation is no longer in progress for this worker",
                state=state.value,
            )
        return written

    async def _record(
        self,
        op: Operation,
        result: InvokeResult,
        bound: structlog.typing.FilteringBoundLogger,
        blocker: str,
    ) -> None:
        started = self.started_at.get(op.key)
        seconds = None if started is None else round(time.monotonic() - started, 3)
        if self.metrics is not None and seconds is not None:
            self.metrics.operation_duration.labels(
                component=op.component, result="done" if result.ok else "failed"
            ).observe(seconds)
        if result.pending:
            bound.info("operation handed to a component reconciler")
            return  # heartbeats and the result arrive as callbacks
        if result.requeue_after is not None:
            if await self._write(
                op,
                OperationState.FAILED,
                bound,
                reason=result.reason,
                retry_after=dt.timedelta(seconds=result.requeue_after),
                count_retry=False,
            ):
                bound.info(
                    "operation requeued", reason=result.reason, retry_in=result.requeue_after
                )
        elif result.ok:
            if await self._write(op, OperationState.DONE, bound, reason="", blocker=""):
                # a periodic run that changed nothing is no news: below info
                done = bound.debug if result.changed == 0 else bound.info
                done("operation done", seconds=seconds, changed=result.changed)
        elif op.retries < self.settings.max_retries:
            backoff = self.settings.retry_backoff * (2**op.retries)
            if await self._write(
                op,
                OperationState.FAILED,
                bound,
                reason=result.reason,
                transient=result.transient,
                retry_after=dt.timedelta(seconds=backoff),
                blocker=blocker,
            ):
                bound.warning(
                    "operation failed, will retry", reason=result.reason, retry_in=backoff
                )
        elif await self._write(
            op,
            OperationState.ERROR,
            bound,
            reason=result.reason,
            transient=result.transient,
            blocker=blocker,
        ):
            bound.error("operation failed", reason=result.reason)
        await self.notifier.notify(Channel.FINISHED)
