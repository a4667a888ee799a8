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
    priority: Callable[[str], float] | None = None,
) -> dict[str, StepResult]:
    """Run every step once its `after` steps are finished (done, or also failed with
    `keep_going`); return each step's result.

    At most `concurrency` steps run at once. When more are ready than slots are free, the
    highest `priority` (asked at that moment) starts first, ties in plan order: the caller
    ranks the longest steps first (the largest component), so that the last one to finish
    does not also start last for want of a slot.
    """
    names = plan.names()
    order = {name: index for index, name in enumerate(names)}
    results = {name: StepResult(StepState.PENDING) for name in names}
    waits = {name: [d for d in plan.step(name).after if d in results] for name in names}
    passed = (StepState.DONE, StepState.FAILED) if keep_going else (StepState.DONE,)
    ended = (*passed, StepState.FAILED, StepState.SKIPPED)
    pending = list(names)
    running: dict[asyncio.Future[bool], str] = {}

    def rank(name: str) -> tuple[float, int]:
        return (-(priority(name) if priority else 0.0), order[name])

    def ready() -> list[str]:
        """Steps whose `after` steps all ended; skips (in plan order, so a skip cascades) those
        that may not run."""
        found = []
        for name in list(pending):
            if not all(results[d].state in ended for d in waits[name]):
                continue
            blocked = sorted(d for d in waits[name] if results[d].state not in passed)
            if blocked:
                pending.remove(name)
                detail = f"not run: {blocked[0]} {results[blocked[0]].state.value}"
                results[name] = StepResult(StepState.SKIPPED, detail)
                if on_skip:
                    on_skip(name, detail)
            else:
                found.append(name)
        return found

    try:
        while pending or running:
            for name in sorted(ready(), key=rank)[: max(concurrency - len(running), 0)]:
                pending.remove(name)
                results[name] = StepResult(StepState.RUNNING)
                running[asyncio.ensure_future(run_step(name))] = name
            if not running:  # nothing can start: what is left waits for itself (a cycle)
                for name in pending:
                    results[name] = StepResult(StepState.SKIPPED, "not run: dependency cycle")
                break
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for future in done:
                name = running.pop(future)
                results[name] = StepResult(StepState.DONE if future.result() else StepState.FAILED)
    finally:
        for future in running:
            future.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)
    return results
