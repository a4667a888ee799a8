"""Running a component set: deleting one does not hold every prerequisite until the namespaces
deleted before it are finalized, and still ends with them gone (or says which one is not)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from reconciler.core.deploy import run_component_set
from reconciler.core.executor import StepState
from reconciler.core.runner import ComponentReconciler
from reconciler.kube.cluster import Cluster
from reconciler.model.component import ComponentSet
from reconciler.model.plan import Plan, plan_components
from reconciler.model.task import ChartRef, ProgressEvent, ProgressState, Task, TaskType
from reconciler.util.polling import poll_until
from tests.helpers.charts import CONFIGMAPS, make_chart

HOLD = "reconciler.test/hold"


def _set(tmp_path: Path, namespace: str) -> tuple[Plan, dict[str, Task]]:
    """`base` (a prerequisite) and `app`, each creating and owning a namespace of its own."""
    components = ComponentSet.model_validate(
        {"prerequisites": [{"name": "base"}], "components": [{"name": "app"}]}
    )
    tasks = {}
    for name in ("base", "app"):
        chart = make_chart(tmp_path, name, {"cms.yaml": CONFIGMAPS}, {"configmaps": [name]})
        tasks[name] = Task(
            component=name,
            namespace=f"{namespace}-{name}",
            version="1",
            source=ChartRef(str(chart)),
            wait=False,
            timeout=60,
        )
    return plan_components(components, with_crds=False), tasks


async def _namespace(cluster: Cluster, name: str) -> dict[str, object] | None:
    live = await cluster.get({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return None if live is None else live.raw


async def _finalizers(cluster: Cluster, name: str, finalizers: list[str]) -> None:
    await cluster.client.request(
        "PATCH",
        f"/api/v1/namespaces/{name}",
        body={"metadata": {"finalizers": finalizers}},
        content_type="application/merge-patch+json",
    )


async def _deploy_then_hold_app_namespace(
    cluster: Cluster, reconciler: ComponentReconciler, plan: Plan, tasks: dict[str, Task]
) -> dict[str, Task]:
    results, outcomes = await run_component_set(cluster, reconciler, plan, tasks)
    assert {r.state for r in results.values()} == {StepState.DONE}, outcomes
    # a finalizer of our own keeps app's namespace Terminating until the test removes it
    await _finalizers(cluster, tasks["app"].namespace, [HOLD])
    return {n: dataclasses.replace(t, type=TaskType.DELETE) for n, t in tasks.items()}


async def test_a_prerequisite_is_deleted_while_a_namespace_deleted_before_it_terminates(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str, tmp_path: Path
) -> None:
    plan, tasks = _set(tmp_path, namespace)
    deletes = await _deploy_then_hold_app_namespace(cluster, reconciler, plan, tasks)
    app_ns, base_ns = tasks["app"].namespace, tasks["base"].namespace
    events: list[ProgressEvent] = []
    run = asyncio.ensure_future(
        run_component_set(cluster, reconciler, plan.reversed(), deletes, report=events.append)
    )
    try:
        # before: base waited for app's namespace to be finalized, which the hold prevents
        await poll_until(
            lambda: _gone(cluster, base_ns), timeout=60, what=f"namespace {base_ns} deleted"
        )
        held = await _namespace(cluster, app_ns)
        assert held is not None
        assert held["metadata"]["deletionTimestamp"]  # type: ignore[index]
        assert not run.done()  # the run itself still waits for it
    finally:
        await _finalizers(cluster, app_ns, [])
    results, outcomes = await asyncio.wait_for(run, 60)
    assert {r.state for r in results.values()} == {StepState.DONE}, outcomes
    assert await _namespace(cluster, app_ns) is None
    # the wait shows on app's line, and app ends done after it
    app = [(e.state, e.message) for e in events if e.component == "app"]
    waiting = (ProgressState.RUNNING, f"waiting for namespace {app_ns} to be deleted")
    assert waiting in app
    assert app[-1] == (ProgressState.SUCCESS, outcomes["app"].summary(deleting=True))
    assert app.index(waiting) < len(app) - 1
    # success is told once, when the namespace is gone, not also before the wait
    assert [state for state, _ in app].count(ProgressState.SUCCESS) == 1


async def test_a_namespace_that_is_not_finalized_in_time_fails_its_component_only(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str, tmp_path: Path
) -> None:
    plan, tasks = _set(tmp_path, namespace)
    tasks["app"] = dataclasses.replace(tasks["app"], timeout=3)
    deletes = await _deploy_then_hold_app_namespace(cluster, reconciler, plan, tasks)
    app_ns = tasks["app"].namespace
    try:
        events: list[ProgressEvent] = []
        results, outcomes = await asyncio.wait_for(
            run_component_set(cluster, reconciler, plan.reversed(), deletes, report=events.append),
            60,
        )
    finally:
        await _finalizers(cluster, app_ns, [])
    assert results["base"].state is StepState.DONE, outcomes["base"].error
    assert results["app"].state is StepState.FAILED
    assert f"deletion of namespace {app_ns}" in (outcomes["app"].error or ""), outcomes["app"].error
    assert results["app"].detail == outcomes["app"].error
    last = [e for e in events if e.component == "app"][-1]
    assert (last.state, last.message) == (ProgressState.ERROR, outcomes["app"].error)


async def _gone(cluster: Cluster, name: str) -> bool:
    return await _namespace(cluster, name) is None
