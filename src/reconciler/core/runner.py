"""Reconcile or delete one component on one cluster, reporting progress as it goes.

reconcile: render → prepare → record intent in the inventory → apply (CRDs and namespaces
first) → prune what the previous version applied and this one does not → record the result →
wait until ready; component actions run before, instead of, and after the generic steps.
delete: the same objects (rendered plus recorded) in reverse order, namespaces only when empty
of anything the component does not own, then the record itself.
Every failure ends in one `error` event whose message names the component and the cause.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from reconciler.charts.render import Capabilities
from reconciler.core.actions import ActionContext, ActionRegistry
from reconciler.core.charts import ChartProvider
from reconciler.errors import ClusterUnreachable, ReadinessTimeout, ReconcilerError, WaitTimeout
from reconciler.kube import inventory
from reconciler.kube.apply import apply_objects, live_versions, prepare_all
from reconciler.kube.cluster import Cluster
from reconciler.kube.delete import delete_objects
from reconciler.kube.transform import COMPONENT
from reconciler.kube.wait import wait_ready
from reconciler.model.kube_object import KubeObject, ObjectKey
from reconciler.model.task import ProgressEvent, ProgressState, Task, TaskType
from reconciler.observability.logging import get_logger

Report = Callable[[ProgressEvent], None]
TRANSIENT_ERRORS = (ClusterUnreachable, ReadinessTimeout, WaitTimeout)


@dataclass
class Outcome:
    """What one run did; `error` is empty on success."""

    component: str
    applied: int = 0
    changed: list[ObjectKey] = field(default_factory=list)
    pruned: list[ObjectKey] = field(default_factory=list)
    deleted: list[ObjectKey] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str = ""
    transient: bool = False
    """The error may go away by itself (cluster unreachable, not ready in time)."""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.error


def _namespace_object(name: str) -> KubeObject:
    return KubeObject({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


class ComponentReconciler:
    """Stateless: one instance serves any number of tasks and clusters concurrently."""

    def __init__(
        self,
        charts: ChartProvider,
        actions: ActionRegistry | None = None,
        *,
        concurrency: int = 16,
    ) -> None:
        self.charts = charts
        self.actions = actions or ActionRegistry()
        self.concurrency = concurrency

    @staticmethod
    async def capabilities(cluster: Cluster) -> Capabilities:
        """The cluster's version and API versions, as Helm's `.Capabilities` (both cached by
        the cluster connection; API versions refresh when CRDs change discovery)."""
        return Capabilities(await cluster.version(), tuple(await cluster.mapper.api_versions()))

    async def run(self, task: Task, cluster: Cluster, report: Report | None = None) -> Outcome:
        started = time.monotonic()
        outcome = Outcome(task.component)
        emit = report or (lambda event: None)

        def phase(text: str) -> None:
            emit(ProgressEvent(task.component, ProgressState.RUNNING, text, text.split()[0]))

        log = get_logger(component=task.component, correlation_id=task.correlation_id)
        ctx = ActionContext(task=task, kube=cluster, charts=self.charts, logger=log)
        try:
            if task.type is TaskType.RECONCILE:
                await self._reconcile(ctx, outcome, phase)
            else:
                await self._delete(ctx, outcome, phase)
        except ReconcilerError as exc:
            outcome.error = f"component {task.component}: {exc}"
            outcome.transient = isinstance(exc, TRANSIENT_ERRORS)
        except Exception as exc:  # an unexpected bug must still end in one error event
            log.exception("unexpected failure")
            outcome.error = f"component {task.component}: internal error: {exc!r}"
        outcome.seconds = time.monotonic() - started
        for warning in outcome.warnings:
            log.warning("transformed", detail=warning)
        if outcome.error:
            log.error("failed", error=outcome.error)
            emit(ProgressEvent(task.component, ProgressState.ERROR, outcome.error, "error"))
        else:
            emit(ProgressEvent(task.component, ProgressState.SUCCESS, _summary(outcome), "done"))
        return outcome

    async def _hook(self, name: str, ctx: ActionContext, phase: Callable[[str], None]) -> bool:
        hook = self.actions.hook(ctx.task.component, name)
        if hook is None:
            return False
        phase(f"action {name}")
        await hook(ctx)
        return True

    async def _reconcile(
        self, ctx: ActionContext, outcome: Outcome, phase: Callable[[str], None]
    ) -> None:
        task, cluster = ctx.task, ctx.kube
        await self._hook("pre_reconcile", ctx, phase)
        phase("render chart")
        ctx.objects = await self.charts.render(task, await self.capabilities(cluster))
        if not await self._hook("reconcile", ctx, phase):
            await self._apply(ctx, outcome, phase)
        await self._hook("post_reconcile", ctx, phase)

    async def _apply(
        self, ctx: ActionContext, outcome: Outcome, phase: Callable[[str], None]
    ) -> None:
        task, cluster = ctx.task, ctx.kube
        objects, outcome.warnings = await prepare_all(
            cluster,
            ctx.objects,
            namespace=task.namespace,
            version=task.version,
            component=task.component,
        )
        previous = await inventory.read(cluster, task.component, task.namespace)
        old = previous.by_key() if previous else {}
        owned_namespace = await self._ensure_namespace(cluster, task, old)
        if owned_namespace is not None:
            objects.append(owned_namespace)
        intent = {
            obj.key: inventory.Entry(obj.api_version, obj.kind, obj.namespace, obj.name)
            for obj in objects
        }
        new_keys = [key for key in intent if key not in old]
        if new_keys or (previous is not None and previous.state != "applied"):
            # record the intent first: a crash mid-apply must not leave unrecorded objects
            pending = [*old.values(), *(intent[key] for key in new_keys)]
            await inventory.write(
                cluster,
                inventory.Inventory(
                    task.component, task.namespace, task.version, "applying", pending
                ),
            )
        before = await live_versions(cluster, objects, task.component) if old else {}
        result = await apply_objects(
            cluster, objects, before=before, concurrency=self.concurrency, on_phase=phase
        )
        outcome.applied = len(result.live)
        outcome.changed = result.changed
        outcome.warnings.extend(result.warnings)
        stale = await self._still_ours(
            cluster,
            [entry.as_object() for key, entry in old.items() if key not in intent],
            task.component,
        )
        if stale:
            phase(f"pruning {len(stale)} objects")
            pruned = await delete_objects(
                cluster,
                stale,
                component=task.component,
                timeout=task.timeout,
                warnings=outcome.warnings,
            )
            outcome.pruned = [obj.key for obj in pruned]
        await inventory.write(
            cluster,
            inventory.Inventory(
                task.component,
                task.namespace,
                task.version,
                "applied",
                [inventory.Entry.of(live) for live in result.live],
            ),
        )
        if task.wait:
            phase("waiting for readiness")
            await wait_ready(cluster, result.live, timeout=task.timeout, on_waiting=phase)

    @staticmethod
    async def _still_ours(
        cluster: Cluster, candidates: list[KubeObject], component: str
    ) -> list[KubeObject]:
        """Prune only what still carries our component label: another component (e.g. the CRDs
        pseudo-component) may have taken an object over since we recorded it."""
        lives = await asyncio.gather(*(cluster.get(obj) for obj in candidates))
        return [
            obj
            for obj, live in zip(candidates, lives, strict=True)
            if live is not None and live.labels.get(COMPONENT) == component
        ]

    async def _ensure_namespace(
        self, cluster: Cluster, task: Task, old: dict[ObjectKey, inventory.Entry]
    ) -> KubeObject | None:
        """The component's namespace, as an object to own when we create it (else None)."""
        (namespace,), _ = await prepare_all(
            cluster,
            [_namespace_object(task.namespace)],
            namespace="",
            version=task.version,
            component=task.component,
        )
        if await cluster.get(namespace) is None:
            await cluster.apply(namespace)  # first: the inventory record lives in it
            return namespace
        return namespace if namespace.key in old else None

    async def _delete(
        self, ctx: ActionContext, outcome: Outcome, phase: Callable[[str], None]
    ) -> None:
        task, cluster = ctx.task, ctx.kube
        await self._hook("pre_delete", ctx, phase)
        if not await self._hook("delete", ctx, phase):
            phase("render chart")
            rendered = await self.charts.render(task, await self.capabilities(cluster))
            objects, _ = await prepare_all(
                cluster,
                rendered,
                namespace=task.namespace,
                version=task.version,
                component=task.component,
            )
            ctx.objects = objects
            recorded = await inventory.read(cluster, task.component, task.namespace)
            known = {obj.key for obj in objects}
            if recorded:
                objects += [e.as_object() for e in recorded.entries if e.key not in known]
            deleted = await delete_objects(
                cluster,
                objects,
                component=task.component,
                timeout=task.timeout,
                on_phase=phase,
                warnings=outcome.warnings,
            )
            outcome.deleted = [obj.key for obj in deleted]
            await inventory.remove(cluster, task.component, task.namespace)
        await self._hook("post_delete", ctx, phase)


def _summary(outcome: Outcome) -> str:
    if outcome.deleted:
        return f"deleted {len(outcome.deleted)} objects"
    parts = [f"{outcome.applied} objects applied", f"{len(outcome.changed)} changed"]
    if outcome.pruned:
        parts.append(f"{len(outcome.pruned)} pruned")
    return ", ".join(parts)
