"""Heartbeats end quietly when a component reconciler reports on an operation mid-hand-over.

A remote component reconciler may call back (here: `success`) before the mothership's hand-over
call returns; the next heartbeat then finds the operation no longer in progress. That is no
reason to stop the hand-over: it runs to its end and the cluster converges.
"""

from __future__ import annotations

import asyncio

from reconciler.model.cluster import ClusterState
from reconciler.model.operation import Operation
from reconciler.model.status import ClusterStatus, OperationState
from reconciler.mothership.engine import Engine
from reconciler.mothership.invoker import CallableInvoker, Invoker, InvokeResult
from reconciler.mothership.planner import Planner
from reconciler.util.polling import poll_until
from tests.helpers.invokers import cluster_spec
from tests.mothership.conftest import SettingsFactory
from tests.mothership.test_engine import wait_for

HEARTBEAT = 0.05


async def test_hand_over_finishes_when_the_result_arrives_before_it_returns(
    store_settings: SettingsFactory,
) -> None:
    finished: list[str] = []
    engine: Engine | None = None

    def factory(_planner: Planner) -> Invoker:
        async def invoke(op: Operation, _state: ClusterState) -> InvokeResult:
            assert engine is not None
            # the component reconciler's `success` callback, while the hand-over still runs
            assert await engine.repo.update(op.key, OperationState.DONE, reason="")
            await asyncio.sleep(HEARTBEAT * 6)  # several heartbeats find it done meanwhile
            finished.append(op.component)
            return InvokeResult(False, pending=True)

        return CallableInvoker(invoke)

    engine = Engine(store_settings(heartbeat_interval=HEARTBEAT), invoker=factory)
    async with engine:
        await engine.service.upsert_cluster(cluster_spec("rt-early", ("alpha", "beta")))
        await wait_for(engine, "rt-early", {ClusterStatus.READY}, timeout=30)

        async def both_finished() -> bool:
            return sorted(finished) == ["alpha", "beta"]

        await poll_until(both_finished, timeout=10, what="both hand-overs to run to their end")
