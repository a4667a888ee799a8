"""An in-process operator for a test, whose stop is bounded: a stop that does not happen fails
the test at once with every thread's and task's stack, instead of hanging the suite."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from reconciler.operator.runtime.wiring import Operator
from reconciler.util.stacks import dump_stacks

START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0


@asynccontextmanager
async def running(
    operator: Operator, kubeconfig: Path, namespace: str, *, stop_timeout: float = STOP_TIMEOUT
) -> AsyncIterator[Operator]:
    """Run `operator` on `namespace` until the block ends; yields once kopf watches."""
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(
        operator.run(kubeconfig, namespace=namespace, stop=stop, ready=ready)
    )
    became_ready = asyncio.create_task(ready.wait())
    await asyncio.wait([task, became_ready], timeout=START_TIMEOUT, return_when="FIRST_COMPLETED")
    became_ready.cancel()
    try:
        if task.done():
            task.result()  # it failed while starting: say why
        assert ready.is_set(), f"the operator did not start watching within {START_TIMEOUT:g}s"
        yield operator
    finally:
        stop.set()
        done, _ = await asyncio.wait([task], timeout=stop_timeout)  # wait_for would hang too
        if not done:
            dump_stacks()
            pytest.fail(f"the operator did not stop within {stop_timeout:g}s (stacks on stderr)")
        task.result()


def reconciles(operator: Operator, kind: str) -> float:
    """Completed reconciles of `kind` (runs skipped as settled are not counted)."""
    sample = operator.metrics.registry.get_sample_value(
        "reconciler_operator_reconcile_duration_seconds_count", {"kind": kind, "result": "ok"}
    )
    return float(sample or 0.0)
