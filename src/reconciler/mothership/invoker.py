"""How an operation's component work gets done: in this process (embedded default) or by any
callable (benchmarks, tests); the remote invoker for component-reconciler services plugs in here.

An invoker runs one operation to its end and reports progress through `progress`, which the
worker turns into heartbeats. It returns a result; it never touches operation state itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from reconciler.core.runner import ComponentReconciler
from reconciler.errors import ClusterUnreachable, KubeconfigError, ReconcilerError
from reconciler.kube.cluster import Cluster
from reconciler.model.cluster import ClusterState
from reconciler.model.operation import Operation
from reconciler.model.task import ProgressEvent
from reconciler.mothership.planner import Planner

Progress = Callable[[str], Awaitable[None]]


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


class Invoker(Protocol):
    async def invoke(
        self, op: Operation, state: ClusterState, progress: Progress
    ) -> InvokeResult: ...

    async def aclose(self) -> None:
        """Release what the invoker holds (HTTP clients); the engine calls it when it stops."""


class InProcessInvoker:
    """Runs the component reconciler core in this process."""

    def __init__(self, planner: Planner, reconciler: ComponentReconciler, timeout: float) -> None:
        self.planner = planner
        self.reconciler = reconciler
        self.timeout = timeout

    async def invoke(self, op: Operation, state: ClusterState, progress: Progress) -> InvokeResult:
        try:
            task = self.planner.task(state, op, timeout=self.timeout)
            # a stored kubeconfig passed the API's host-access policy when it was accepted
            cluster = await Cluster.connect(
                state.spec.kubeconfig, text=True, allow_host_access=True
            )
        except ClusterUnreachable as exc:
            return InvokeResult(False, f"component {op.component}: {exc}", transient=True)
        except (KubeconfigError, ReconcilerError) as exc:
            return InvokeResult(False, f"component {op.component}: {exc}")
        pending: list[str] = []

        def report(event: ProgressEvent) -> None:
            pending.append(event.message)

        async with cluster:
            outcome = await self.reconciler.run(task, cluster, report)
        if pending:
            await progress(pending[-1])
        if outcome.ok:
            return InvokeResult(True, "")
        return InvokeResult(False, outcome.error, outcome.transient)

    async def aclose(self) -> None:
        """Nothing to release: each operation connects to its cluster and closes again."""


class CallableInvoker:
    """Wraps `fn(op, state) -> InvokeResult` (benchmarks with a no-op reconciler, tests)."""

    def __init__(self, fn: Callable[[Operation, ClusterState], Awaitable[InvokeResult]]) -> None:
        self.fn = fn

    async def invoke(self, op: Operation, state: ClusterState, progress: Progress) -> InvokeResult:
        return await self.fn(op, state)

    async def aclose(self) -> None:
        """Nothing to release."""
