"""How an operation's component work gets done: in this process (embedded default) or by any
callable (benchmarks, tests); the remote invoker for component-reconciler services plugs in here.

An invoker runs one operation to its end and reports what blocks its component's readiness
through `progress`, which the worker stores with the heartbeats. It returns a result; it never
touches operation state itself.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from reconciler.core.runner import ComponentReconciler
from reconciler.errors import ReconcilerError
from reconciler.kube.clients import ClientCache
from reconciler.kube.live import LiveIndex
from reconciler.model.cluster import ClusterState
from reconciler.model.operation import Operation
from reconciler.model.task import ProgressEvent
from reconciler.mothership.planner import Planner

Progress = Callable[[str], None]
"""Hears what keeps the operation's component from being ready, each time that changes (the
blocking object and its condition); the worker stores the latest with the operation."""


@dataclass(frozen=True)
class InvokeResult:
    ok: bool
    reason: str = ""
    transient: bool = False
    pending: bool = False
    """Accepted elsewhere (remote component reconciler): the result arrives by callback."""
    requeue_after: float | None = None
    """Not started (the remote pool is full): claim again after this many seconds, without
    counting an attempt."""
    changed: int | None = None
    """Objects the run changed, when known (in process): 0 is a no-op, logged below info."""


class Invoker(Protocol):
    async def invoke(
        self, op: Operation, state: ClusterState, progress: Progress
    ) -> InvokeResult: ...

    async def aclose(self) -> None:
        """Release what the invoker holds (HTTP clients); the engine calls it when it stops."""


class InProcessInvoker:
    """Runs the component reconciler core in this process."""

    def __init__(
        self,
        planner: Planner,
        reconciler: ComponentReconciler,
        timeout: float,
        *,
        shared_runs: int = 256,
        clients: ClientCache | None = None,
    ) -> None:
        self.planner = planner
        self.reconciler = reconciler
        self.timeout = timeout
        self._live: OrderedDict[str, LiveIndex] = OrderedDict()
        self._shared_runs = shared_runs
        # the operations of a cluster share its HTTP client (connection pool, TLS sessions);
        # each still gets a fresh `Cluster` with its own discovery. A stored kubeconfig passed
        # the API's host-access policy when it was accepted.
        # (`is None`: an empty cache has no length, so `or` would drop the one passed in)
        self.clients = ClientCache(allow_host_access=True) if clients is None else clients

    def _live_index(self, op: Operation, state: ClusterState) -> LiveIndex:
        """One live index per reconciliation: its components' no-op checks share one metadata
        LIST per kind (per namespace, for a set in few namespaces; see `kube.live`); the oldest
        reconciliations' indexes are dropped."""
        index = self._live.get(op.scheduling_id)
        if index is None:
            planned = self.planner.operations(state, op.type)
            namespaces = {p.namespace for p in planned}
            index = self._live[op.scheduling_id] = LiveIndex(namespaces=namespaces)
            while len(self._live) > self._shared_runs:
                self._live.popitem(last=False)
        return index

    async def invoke(self, op: Operation, state: ClusterState, progress: Progress) -> InvokeResult:
        def report(event: ProgressEvent) -> None:
            if event.blocker:
                progress(event.blocker)

        try:
            task = self.planner.task(state, op, timeout=self.timeout)
            async with self.clients.cluster(state.spec.kubeconfig) as cluster:
                # a retry reads afresh: the shared listings predate what its failed attempt applied
                live = self._live_index(op, state) if op.retries == 0 else None
                outcome = await self.reconciler.run(task, cluster, report, live=live)
        except ReconcilerError as exc:  # a cluster out of reach is transient, a bad kubeconfig not
            return InvokeResult(False, f"component {op.component}: {exc}", exc.transient)
        if outcome.ok:
            return InvokeResult(True, "", changed=len(outcome.changed) + len(outcome.deleted))
        return InvokeResult(False, outcome.error, outcome.transient)

    async def aclose(self) -> None:
        """Close the shared cluster clients."""
        await self.clients.aclose()


class CallableInvoker:
    """Wraps `fn(op, state) -> InvokeResult` (benchmarks with a no-op reconciler, tests)."""

    def __init__(self, fn: Callable[[Operation, ClusterState], Awaitable[InvokeResult]]) -> None:
        self.fn = fn

    async def invoke(self, op: Operation, state: ClusterState, progress: Progress) -> InvokeResult:
        return await self.fn(op, state)

    async def aclose(self) -> None:
        """Nothing to release."""
