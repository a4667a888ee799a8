"""Reconcile (or delete) a whole component set on one cluster: the embedded CLI's job.

Turns a workspace + component set + options into one task per plan step and runs the plan with
the component reconciler. Override keys whose first segment names a component apply to that
component (`serverless.replicas=2`); every other key (`global.domainName=...`) applies to all.

While the `CRDs` step and the prerequisites run one after another (mostly waiting for the
apiserver), the later steps are rendered ahead, a few at a time (`RenderAhead`): each turn then
finds its render done, and the executor starts the largest ready component first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.charts.workspace import Workspace
from reconciler.core.executor import StepResult, StepState, execute
from reconciler.core.results import Outcome, Report
from reconciler.core.runner import ComponentReconciler
from reconciler.kube.cluster import Cluster
from reconciler.kube.delete import NamespaceWaits
from reconciler.kube.live import LiveIndex
from reconciler.model.component import CRDS_COMPONENT, ComponentSet
from reconciler.model.plan import Plan, plan_components
from reconciler.model.task import ChartRef, ProgressEvent, ProgressState, Task, TaskType
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
            source=ChartRef(workspace.chart_source(spec)),
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
            source=ChartRef(str(workspace.root)),
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


class RenderAhead:
    """Renders a run's later steps in the background, `width` at a time, in plan order.

    Why: the prerequisites' chain leaves the CPU mostly idle; a component rendered meanwhile
    starts applying as soon as its turn comes, instead of rendering then alongside every other
    component that became ready at the same moment. The renders go through the reconciler's
    render cache (`ComponentReconciler.render_ahead`), which decides what may be rendered
    ahead and keys each render by its inputs' digest. Failures are left to the step's own
    turn, which renders again and reports them. `sizes`: objects rendered per step, for
    ranking steps that wait for a slot.
    """

    def __init__(
        self,
        reconciler: ComponentReconciler,
        cluster: Cluster,
        tasks: Mapping[str, Task],
        live: LiveIndex,
        *,
        width: int = 2,
    ) -> None:
        self.reconciler = reconciler
        self.cluster = cluster
        self.tasks = tasks
        self.live = live
        self.sizes: dict[str, int] = {}
        self._limit = asyncio.Semaphore(max(width, 1))
        self._started: list[asyncio.Task[None]] = []

    def start(self, names: Iterable[str]) -> None:
        self._started += [asyncio.create_task(self._one(name)) for name in names]

    async def _one(self, name: str) -> None:
        async with self._limit:
            try:
                size = await self.reconciler.render_ahead(self.tasks[name], self.cluster, self.live)
            except Exception:  # the step's own render reports the cause
                return
            if size is not None:
                self.sizes[name] = size

    async def aclose(self) -> None:
        for task in self._started:
            task.cancel()
        await asyncio.gather(*self._started, return_exceptions=True)


def ahead_of(plan: Plan, first: str | None) -> list[str]:
    """The steps worth rendering ahead once `first` (the `CRDs` step, None without one) is
    done: in plan order, all but `first` and those that start right after it anyway."""
    roots = {first} if first else set()
    return [n for n in plan.names() if n != first and not plan.step(n).after <= roots]


async def run_component_set(
    cluster: Cluster,
    reconciler: ComponentReconciler,
    plan: Plan,
    tasks: Mapping[str, Task],
    *,
    report: Report | None = None,
    concurrency: int = 8,
    render_ahead: int = 2,
) -> tuple[dict[str, StepResult], dict[str, Outcome]]:
    """Run `plan`'s steps on `cluster`. `render_ahead`: renders at a time ahead of their
    steps' turns (0: none), started once the `CRDs` step is done (the capabilities final)."""
    outcomes: dict[str, Outcome] = {}
    live = LiveIndex()  # one metadata LIST per kind for the whole set, see `kube.live`
    ahead = RenderAhead(reconciler, cluster, tasks, live, width=render_ahead)
    first = CRDS_COMPONENT if CRDS_COMPONENT in tasks else None
    deleting = any(task.type is TaskType.DELETE for task in tasks.values())
    rendering = render_ahead > 0 and not deleting
    if rendering and first is None:
        ahead.start(ahead_of(plan, None))

    # a deleted component's namespace holds only Kubernetes' own objects by then: the
    # components before it need not wait ~5 s each for its controller to finalize it
    namespace_waits = NamespaceWaits(cluster) if deleting else None

    def step_report(event: ProgressEvent) -> None:
        """`report`, less a deleted component's success while its namespace is still there:
        that is told once, when the namespace is gone (`_namespaces_gone`)."""
        if report is None:
            return
        if (
            namespace_waits is not None
            and event.state is ProgressState.SUCCESS
            and event.component in namespace_waits.pending()
        ):
            return
        report(event)

    async def run_step(name: str) -> bool:
        outcomes[name] = await reconciler.run(
            tasks[name], cluster, step_report, live=live, namespace_waits=namespace_waits
        )
        if rendering and name == first and outcomes[name].ok:
            ahead.start(ahead_of(plan, first))
        return outcomes[name].ok

    try:
        results = await execute(
            plan,
            run_step,
            concurrency=concurrency,
            keep_going=deleting,
            priority=lambda name: ahead.sizes.get(name, 0),
        )
        if namespace_waits is not None:
            await _namespaces_gone(namespace_waits, outcomes, results, report)
    finally:
        await ahead.aclose()
    return results, outcomes


async def _namespaces_gone(
    waits: NamespaceWaits,
    outcomes: dict[str, Outcome],
    results: dict[str, StepResult],
    report: Report | None,
) -> None:
    """Wait for the namespaces the run deleted; a component waiting for one shows it, and
    fails if it is still there at the component's timeout."""
    emit = report or (lambda event: None)
    pending = waits.pending()
    for name, namespaces in pending.items():
        names = ", ".join(namespaces)
        text = f"waiting for namespace{'s' if len(namespaces) > 1 else ''} {names} to be deleted"
        emit(ProgressEvent(name, ProgressState.RUNNING, text, "waiting"))
    errors = await waits.wait()
    for name in pending:
        outcome = outcomes[name]
        if name in errors:
            outcome.error = f"component {name}: {errors[name]}"
            results[name] = StepResult(StepState.FAILED, outcome.error)
            emit(ProgressEvent(name, ProgressState.ERROR, outcome.error, "error"))
        else:
            emit(ProgressEvent(name, ProgressState.SUCCESS, outcome.summary(deleting=True), "done"))
