"""Run a plan's steps concurrently as soon as the steps they wait for are done.

A failed step stops the steps that (transitively) depend on it and nothing else: unrelated
components keep going. With `keep_going` (deletion) a failed step stops nothing: order is kept,
but what waits for it still runs, since leaving the rest installed helps no one. Used by the
embedded CLI; the mothership runs plans through its operation queue instead (priority groups),
with the same plan.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from reconciler.model.plan import Plan


class StepState(enum.StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass
class StepResult:
    state: StepState
    detail: str = ""


async def execute(
    plan: Plan,
    run_step: Callable[[str], Awaitable[bool]],
    *,
    concurrency: int = 8,
    on_skip: Callable[[str, str], None] | None = None,
    keep_going: bool = False,
) -> dict[str, StepResult]:
    """Run every step once its `after` steps are finished (done, or also failed with
    `keep_going`); return each step's result."""
    results = {name: StepResult(StepState.PENDING) for name in plan.names()}
    finished = {name: asyncio.Event() for name in plan.names()}
    limit = asyncio.Semaphore(concurrency)

    async def step(name: str) -> None:
        try:
            after = plan.step(name).after
            await asyncio.gather(*(finished[d].wait() for d in after if d in finished))
            passed = (StepState.DONE, StepState.FAILED) if keep_going else (StepState.DONE,)
            blocked = [d for d in sorted(after) if d in results and results[d].state not in passed]
            if blocked:
                first = blocked[0]
                detail = f"not run: {first} {results[first].state.value}"
                results[name] = StepResult(StepState.SKIPPED, detail)
                if on_skip:
                    on_skip(name, results[name].detail)
                return
            async with limit:
                results[name] = StepResult(StepState.RUNNING)
                ok = await run_step(name)
            results[name] = StepResult(StepState.DONE if ok else StepState.FAILED)
        finally:
            finished[name].set()

    await asyncio.gather(*(step(name) for name in plan.names()))
    return results
