"""A failing component stops its dependants, not unrelated components."""

from __future__ import annotations

import asyncio

from reconciler.core.executor import StepState, execute
from reconciler.model.component import ComponentSet
from reconciler.model.plan import plan_components

SET = ComponentSet.model_validate(
    {
        "prerequisites": [{"name": "base"}],
        "components": [{"name": "a"}, {"name": "b", "dependsOn": ["a"]}, {"name": "c"}],
    }
)


async def test_failure_skips_dependants_and_keeps_unrelated_components_running() -> None:
    ran: list[str] = []

    async def run(name: str) -> bool:
        await asyncio.sleep(0)
        ran.append(name)
        return name != "a"

    results = await execute(plan_components(SET), run)
    assert results["a"].state is StepState.FAILED
    assert results["b"].state is StepState.SKIPPED
    assert "a" in results["b"].detail
    assert results["c"].state is StepState.DONE
    assert "b" not in ran
    assert ran.index("base") < ran.index("a")


async def test_independent_components_run_concurrently() -> None:
    running: set[str] = set()
    overlap: list[set[str]] = []

    async def run(name: str) -> bool:
        running.add(name)
        await asyncio.sleep(0.01)
        overlap.append(set(running))
        running.discard(name)
        return True

    await execute(plan_components(SET, with_crds=False), run)
    assert any({"a", "c"} <= seen for seen in overlap)


async def test_failed_prerequisite_stops_everything_after_it() -> None:
    async def run(name: str) -> bool:
        return name != "base"

    results = await execute(plan_components(SET), run)
    assert results["CRDs"].state is StepState.DONE
    assert {results[n].state for n in ("a", "b", "c")} == {StepState.SKIPPED}


async def test_keep_going_runs_what_waits_for_a_failed_step_in_order() -> None:
    ran: list[str] = []

    async def run(name: str) -> bool:
        await asyncio.sleep(0)
        ran.append(name)
        return name != "a"

    plan = plan_components(SET, with_crds=False).reversed()
    results = await execute(plan, run, keep_going=True)
    assert results["a"].state is StepState.FAILED
    assert all(results[name].state is StepState.DONE for name in ("b", "c", "base"))
    assert ran.index("b") < ran.index("a") < ran.index("base")


async def test_the_highest_priority_ready_step_takes_a_free_slot_first() -> None:
    """When more steps are ready than slots are free, the largest (by the caller's priority)
    starts first, not the first in plan order: the longest step must not also start last."""
    components = ComponentSet.model_validate(
        {
            "prerequisites": [{"name": "base"}],
            "components": [{"name": "small"}, {"name": "medium"}, {"name": "large"}],
        }
    )
    started: list[str] = []

    async def run(name: str) -> bool:
        started.append(name)
        await asyncio.sleep(0)
        return True

    size = {"small": 1, "medium": 10, "large": 100}
    plan = plan_components(components, with_crds=False)
    results = await execute(plan, run, concurrency=1, priority=lambda name: size.get(name, 0))
    assert started == ["base", "large", "medium", "small"]
    assert all(result.state is StepState.DONE for result in results.values())


async def test_a_skip_cascades_to_every_step_that_waits_for_it() -> None:
    async def run(name: str) -> bool:
        return name != "a"

    chain = ComponentSet.model_validate(
        {
            "components": [
                {"name": "a"},
                {"name": "b", "dependsOn": ["a"]},
                {"name": "c", "dependsOn": ["b"]},
            ]
        }
    )
    results = await execute(plan_components(chain, with_crds=False), run, concurrency=1)
    assert results["b"].state is StepState.SKIPPED
    assert "a failed" in results["b"].detail
    assert results["c"].state is StepState.SKIPPED
    assert "b skipped" in results["c"].detail
