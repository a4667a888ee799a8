"""Reconcile (or delete) a whole component set on one cluster: the embedded CLI's job.

Turns a workspace + component set + options into one task per plan step and runs the plan with
the component reconciler. Override keys whose first segment names a component apply to that
component (`serverless.replicas=2`); every other key (`global.domainName=...`) applies to all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.charts.workspace import Workspace
from reconciler.core.executor import StepResult, execute
from reconciler.core.results import Outcome, Report
from reconciler.core.runner import ComponentReconciler
from reconciler.kube.cluster import Cluster
from reconciler.kube.live import LiveIndex
from reconciler.model.component import CRDS_COMPONENT, ComponentSet
from reconciler.model.plan import Plan, plan_components
from reconciler.model.task import Task, TaskType
from reconciler.model.values import layer, nest


@dataclass(frozen=True)
class DeployOptions:
    profile: str | None = None
    values: Mapping[str, Any] = field(default_factory=dict)
    version: str = "local"
    timeout: float = 300.0
    wait: bool = True
    with_crds: bool = True
    force: bool = False
    regenerate: str = ""
    """Token (see `Task.regenerate`); the CLI's `--regenerate` passes a new one every time."""


def split_overrides(
    values: Mapping[str, Any], components: ComponentSet
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(for every component, per component name) from flat `--value` keys."""
    names = set(components.names())
    shared: dict[str, Any] = {}
    specific: dict[str, dict[str, Any]] = {}
    for key, value in values.items():
        head, _, rest = key.partition(".")
        if head in names and rest:
            specific.setdefault(head, {})[rest] = value
        else:
            shared[key] = value
    return shared, specific


def build_tasks(
    workspace: Workspace, components: ComponentSet, task_type: TaskType, options: DeployOptions
) -> dict[str, Task]:
    shared, specific = split_overrides(options.values, components)
    tasks: dict[str, Task] = {}
    for spec in components.all():
        tasks[spec.name] = Task(
            component=spec.name,
            namespace=components.namespace_of(spec),
            version=spec.version or options.version,
            chart=workspace.chart_source(spec),
            type=task_type,
            profile=options.profile,
            configuration=layer([spec.configuration, shared, nest(specific.get(spec.name, {}))]),
            timeout=options.timeout,
            wait=options.wait,
            include_crds=not options.with_crds,
            force=options.force,
            regenerate=options.regenerate,
        )
    if options.with_crds:
        tasks[CRDS_COMPONENT] = Task(
            component=CRDS_COMPONENT,
            namespace=components.default_namespace,
            version=options.version,
            chart=str(workspace.root),
            crd_sources=tuple(workspace.chart_source(spec) for spec in components.all()),
            type=task_type,
            timeout=options.timeout,
            wait=options.wait,
            force=options.force,
        )
    return tasks


def plan_for(components: ComponentSet, task_type: TaskType, options: DeployOptions) -> Plan:
    plan = plan_components(components, with_crds=options.with_crds)
    return plan.reversed() if task_type is TaskType.DELETE else plan


async def run_component_set(
    cluster: Cluster,
    reconciler: ComponentReconciler,
    plan: Plan,
    tasks: Mapping[str, Task],
    *,
    report: Report | None = None,
    concurrency: int = 8,
) -> tuple[dict[str, StepResult], dict[str, Outcome]]:
    outcomes: dict[str, Outcome] = {}
    live = LiveIndex()  # one metadata LIST per kind for the whole set, see `kube.live`

    async def run_step(name: str) -> bool:
        outcomes[name] = await reconciler.run(tasks[name], cluster, report, live=live)
        return outcomes[name].ok

    deleting = any(task.type is TaskType.DELETE for task in tasks.values())
    results = await execute(plan, run_step, concurrency=concurrency, keep_going=deleting)
    return results, outcomes
