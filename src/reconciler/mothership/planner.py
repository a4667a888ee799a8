"""From a stored cluster configuration to operations and to component tasks.

The configuration lists components (KEB sends them all); the mothership's settings name the
prerequisites (run one after another, in that order) and the workspace of each Kyma version
supplies charts, CRDs and `dependsOn`. The `CRDs` pseudo-component comes first whenever the
version has a workspace. Deletion runs the same plan reversed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from reconciler.charts.workspace import Workspace
from reconciler.errors import ReconcilerError
from reconciler.model.cluster import ClusterSpec, ClusterState, ComponentConfig, KymaConfig
from reconciler.model.component import CRDS_COMPONENT, ComponentSet, ComponentSpec
from reconciler.model.operation import Operation, PlannedOperation
from reconciler.model.plan import Plan, plan_components
from reconciler.model.status import OperationType
from reconciler.model.task import ChartRef, Task, TaskType
from reconciler.model.values import layer
from reconciler.mothership.settings import Settings

DEFAULT_NAMESPACE = "kyma-system"


class PlanningError(ReconcilerError):
    """The configuration cannot be turned into a plan (unknown component, cycle, ...)."""


class Planner:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._sets: dict[Path, ComponentSet] = {}

    def workspace(self, kyma_version: str) -> Workspace | None:
        root = self.settings.workspace_for(kyma_version)
        return Workspace(root) if root else None

    def _known(self, workspace: Workspace | None) -> ComponentSet | None:
        if workspace is None or not workspace.components_file.is_file():
            return None
        if workspace.root not in self._sets:
            self._sets[workspace.root] = workspace.component_set()
        return self._sets[workspace.root]

    def component_set(self, state: ClusterState) -> ComponentSet:
        """The configured components as a component set (prerequisites first, in order)."""
        kyma = state.spec.kyma_config
        workspace = self.workspace(kyma.version)
        known = self._known(workspace)
        configured = {c.component: c for c in kyma.components}
        names = set(configured)

        def spec(component: ComponentConfig) -> ComponentSpec:
            depends: tuple[str, ...] = ()
            namespace = component.namespace or None
            if known is not None and component.component in known.names():
                original = known.get(component.component)
                depends = tuple(d for d in original.depends_on if d in names)
                namespace = namespace or original.namespace
            return ComponentSpec(
                name=component.component,
                namespace=namespace,
                url=component.url or None,
                version=component.version or None,
                depends_on=depends,
            )

        prerequisites = [configured[n] for n in self.settings.prerequisites if n in configured]
        rest = [c for c in kyma.components if c.component not in self.settings.prerequisites]
        try:
            return ComponentSet.model_validate(
                {
                    "defaultNamespace": known.default_namespace if known else DEFAULT_NAMESPACE,
                    "prerequisites": [spec(c).model_dump(by_alias=True) for c in prerequisites],
                    "components": [spec(c).model_dump(by_alias=True) for c in rest],
                }
            )
        except ValueError as exc:
            raise PlanningError(f"cluster {state.runtime_id}: {exc}") from None

    def has_chart(self, kyma: KymaConfig, component: ComponentConfig) -> bool:
        """Whether the component has a chart: its own URL, or one in the version's workspace."""
        if component.url:
            return True
        workspace = self.workspace(kyma.version)
        if workspace is None:
            return False
        known = self._known(workspace)
        if known is not None and component.component in known.names():
            return True
        return (workspace.root / "resources" / component.component).is_dir()

    def validate(self, spec: ClusterSpec, *, reject_unknown: bool = True) -> None:
        """Refuse a configuration the mothership could not reconcile: a component listed twice,
        an invalid set and, with `reject_unknown`, a component without a chart (no URL, and the
        version's workspace does not know it). Without it such a component is accepted and its
        operation fails during the run, as the original did (see `chart_source`)."""
        kyma = spec.kyma_config
        for component in kyma.components:
            if reject_unknown and not self.has_chart(kyma, component):
                raise PlanningError(_unknown(component.component, kyma.version))
        names = [c.component for c in kyma.components]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise PlanningError(f"components listed more than once: {', '.join(duplicates)}")

    def plan(self, state: ClusterState, task_type: OperationType) -> Plan:
        components = self.component_set(state)
        with_crds = self.workspace(state.spec.kyma_config.version) is not None
        try:
            plan = plan_components(components, with_crds=with_crds)
        except ReconcilerError as exc:
            raise PlanningError(f"cluster {state.runtime_id}: {exc}") from None
        return plan.reversed() if task_type is OperationType.DELETE else plan

    def operations(self, state: ClusterState, task_type: OperationType) -> list[PlannedOperation]:
        components = self.component_set(state)
        plan = self.plan(state, task_type)
        planned = []
        for step in plan.steps:
            namespace = (
                components.default_namespace
                if step.name == CRDS_COMPONENT
                else components.namespace_of(components.get(step.name))
            )
            planned.append(PlannedOperation(step.name, namespace, step.priority))
        return planned

    def chart_source(self, state: ClusterState, component: str) -> str:
        """Where the component's chart comes from; PlanningError `unknown component ...` when
        it has none (the operation fails with that reason)."""
        kyma = state.spec.kyma_config
        configured = {c.component: c for c in kyma.components}.get(component)
        if configured is None or not self.has_chart(kyma, configured):
            raise PlanningError(_unknown(component, kyma.version))
        if configured.url:
            return configured.url
        workspace = self.workspace(kyma.version)
        assert workspace is not None  # has_chart: no URL means the workspace has it
        return str(workspace.root / "resources" / component)

    def task(self, state: ClusterState, op: Operation, *, timeout: float) -> Task:
        """The core's task for one operation of this cluster state."""
        kyma = state.spec.kyma_config
        task_type = TaskType.DELETE if op.type is OperationType.DELETE else TaskType.RECONCILE
        profile = kyma.profile or None
        force = self.full_run(op)
        if op.component == CRDS_COMPONENT:
            workspace = self.workspace(kyma.version)
            return Task(
                component=CRDS_COMPONENT,
                namespace=op.namespace,
                version=kyma.version,
                source=ChartRef(str(workspace.root) if workspace else ""),
                crd_sources=tuple(
                    self.chart_source(state, c.component)
                    for c in kyma.components
                    if self.has_chart(kyma, c)  # an unknown one fails in its own operation
                ),
                type=task_type,
                correlation_id=op.correlation_id,
                timeout=timeout,
                force=force,
            )
        configured = {c.component: c for c in kyma.components}[op.component]
        return Task(
            component=op.component,
            namespace=op.namespace,
            version=configured.version or kyma.version,
            source=ChartRef(self.chart_source(state, op.component)),
            type=task_type,
            profile=profile,
            configuration=layer([configured.values()]),
            secret_keys=tuple(entry.key for entry in configured.configuration if entry.secret),
            include_crds=self.workspace(kyma.version) is None,
            correlation_id=op.correlation_id,
            timeout=timeout,
            force=force,
            regenerate=configured.regenerate,
        )

    def full_run(self, op: Operation) -> bool:
        """Apply every object instead of the no-op fast path: on a retry (the fast path found
        nothing wrong, or failed), and for every Nth reconciliation on average."""
        every = self.settings.full_reconcile_every
        if op.retries > 0:
            return True
        if every <= 0:
            return False
        draw = int.from_bytes(hashlib.sha256(op.scheduling_id.encode()).digest()[:8], "big")
        return draw % every == 0


def _unknown(component: str, kyma_version: str) -> str:
    return (
        f"unknown component {component!r}: no URL given and the workspace of Kyma version "
        f"{kyma_version} has no chart for it"
    )
