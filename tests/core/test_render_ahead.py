"""Rendering ahead: a step's render made while earlier steps run is the one its turn uses."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from reconciler.charts.render import Capabilities
from reconciler.charts.sources import ChartCache
from reconciler.core.charts import HelmChartProvider
from reconciler.core.deploy import ahead_of, run_component_set
from reconciler.core.executor import StepState
from reconciler.core.runner import ComponentReconciler
from reconciler.kube.cluster import Cluster
from reconciler.model.component import ComponentSet
from reconciler.model.kube_object import KubeObject
from reconciler.model.plan import plan_components
from reconciler.model.task import ChartRef, Task
from tests.helpers.charts import CONFIGMAPS, make_chart


class CountingCharts(HelmChartProvider):
    """The real provider, counting renders per component; `hold` pauses a component's render
    until an event is set."""

    def __init__(self, cache: ChartCache) -> None:
        super().__init__(cache)
        self.renders: dict[str, int] = {}
        self.started: dict[str, asyncio.Event] = {}
        self.hold: dict[str, asyncio.Event] = {}

    def began(self, component: str) -> asyncio.Event:
        return self.started.setdefault(component, asyncio.Event())

    async def render(self, task: Task, capabilities: Capabilities | None) -> list[KubeObject]:
        self.renders[task.component] = self.renders.get(task.component, 0) + 1
        self.began(task.component).set()
        if task.component in self.hold:
            await self.hold[task.component].wait()
        return await super().render(task, capabilities)


@pytest.fixture
def charts(tmp_path: Path) -> CountingCharts:
    return CountingCharts(ChartCache(tmp_path / "cache"))


def web_task(tmp_path: Path, namespace: str, name: str = "web") -> Task:
    chart = make_chart(tmp_path, name, {"cms.yaml": CONFIGMAPS}, {"configmaps": [f"{name}-a"]})
    return Task(
        component=name, namespace=namespace, version="1", source=ChartRef(str(chart)), wait=False
    )


async def test_a_render_made_ahead_is_the_one_the_turn_uses(
    cluster: Cluster, charts: CountingCharts, namespace: str, tmp_path: Path
) -> None:
    reconciler = ComponentReconciler(charts)
    task = web_task(tmp_path, namespace)
    assert await reconciler.render_ahead(task, cluster) == 1
    outcome = await reconciler.run(task, cluster)
    assert outcome.ok, outcome.error
    assert outcome.applied == 1
    assert charts.renders == {"web": 1}


async def test_a_turn_waits_for_its_render_still_running_ahead_instead_of_repeating_it(
    cluster: Cluster, charts: CountingCharts, namespace: str, tmp_path: Path
) -> None:
    reconciler = ComponentReconciler(charts)
    task = web_task(tmp_path, namespace)
    charts.hold["web"] = asyncio.Event()
    ahead = asyncio.ensure_future(reconciler.render_ahead(task, cluster))
    await asyncio.wait_for(charts.began("web").wait(), 10)
    turn = asyncio.ensure_future(reconciler.run(task, cluster))
    charts.hold["web"].set()
    assert await ahead == 1
    outcome = await turn
    assert outcome.ok, outcome.error
    assert charts.renders == {"web": 1}


async def test_nothing_is_rendered_ahead_for_a_no_op_turn(
    cluster: Cluster, charts: CountingCharts, namespace: str, tmp_path: Path
) -> None:
    task = web_task(tmp_path, namespace)
    assert (await ComponentReconciler(charts).run(task, cluster)).ok
    fresh = ComponentReconciler(charts)  # as the next CLI run: nothing cached
    assert await fresh.render_ahead(task, cluster) is None
    outcome = await fresh.run(task, cluster)
    assert outcome.ok, outcome.error
    assert outcome.checked == 1
    assert not outcome.applied
    assert charts.renders == {"web": 1}


async def test_a_forced_turn_renders_itself_and_nothing_ahead(
    cluster: Cluster, charts: CountingCharts, namespace: str, tmp_path: Path
) -> None:
    reconciler = ComponentReconciler(charts)
    task = Task(**{**web_task(tmp_path, namespace).__dict__, "force": True})
    assert await reconciler.render_ahead(task, cluster) is None
    assert (await reconciler.run(task, cluster)).ok
    assert (await reconciler.run(task, cluster)).ok
    assert charts.renders == {"web": 2}


async def test_later_steps_render_while_the_prerequisites_run(
    cluster: Cluster, charts: CountingCharts, namespace: str, tmp_path: Path
) -> None:
    components = ComponentSet.model_validate(
        {
            "prerequisites": [{"name": "first"}, {"name": "second"}],
            "components": [{"name": "app"}],
        }
    )
    plan = plan_components(components, with_crds=False)
    tasks = {name: web_task(tmp_path, namespace, name) for name in plan.names()}
    # the prerequisite `second` cannot finish rendering before `app` has started rendering:
    # only a render ahead of `app`'s turn (which waits for `second`) lets this run finish
    charts.hold["second"] = asyncio.Event()

    async def release() -> None:
        await charts.began("app").wait()
        charts.hold["second"].set()

    releasing = asyncio.ensure_future(release())
    results, outcomes = await asyncio.wait_for(
        run_component_set(cluster, ComponentReconciler(charts), plan, tasks), 60
    )
    await releasing
    assert {name: result.state for name, result in results.items()} == {
        name: StepState.DONE for name in plan.names()
    }
    assert charts.renders == {"first": 1, "second": 1, "app": 1}
    assert all(outcome.applied == 1 for outcome in outcomes.values())


def test_steps_ahead_of_the_crds_step_leave_out_what_starts_right_after_it() -> None:
    components = ComponentSet.model_validate(
        {
            "prerequisites": [{"name": "base"}, {"name": "mesh"}],
            "components": [{"name": "a"}, {"name": "b", "dependsOn": ["a"]}],
        }
    )
    assert ahead_of(plan_components(components), "CRDs") == ["mesh", "a", "b"]
    assert ahead_of(plan_components(components, with_crds=False), None) == ["mesh", "a", "b"]
