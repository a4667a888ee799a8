"""Reconcile or delete one component on one cluster, reporting progress as it goes.

reconcile: render → prepare → record intent in the inventory → apply (CRDs and namespaces
first) → prune what the previous version applied and this one does not → wait until ready →
record the result; component actions run before, instead of, and after the generic steps.
When the inputs' digest equals the record's, the fast path (`steady.SteadyState`) replaces all
of that: compare live metadata with the record, re-apply only what drifted.
render_ahead: render a component that will render anyway before its turn (while the steps it
waits for run), into the render cache its turn then reads; one render per digest at a time
(`renders.Renders`).
delete: the same objects (rendered plus recorded) in reverse order, namespaces only when empty
of anything the component does not own, then the record itself.
Every failure ends in one `error` event whose message names the component and the cause.

The steps of one run share a private `_Run` (task, cluster, outcome, progress, the actions'
context); a full apply is a `_FullApply` of that run, one method per step. Actions see only
their `ActionContext`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from reconciler.charts.render import Capabilities
from reconciler.core.actions import HOOKS, ActionContext, ActionRegistry
from reconciler.core.charts import ChartProvider
from reconciler.core.generated import Generated, keep_generated
from reconciler.core.renders import Renders
from reconciler.core.results import Outcome, Phase, Report
from reconciler.core.steady import SteadyState
from reconciler.errors import ReconcilerError
from reconciler.kube import records
from reconciler.kube.apply import ApplyResult, apply_objects, prepare_all
from reconciler.kube.cluster import Cluster
from reconciler.kube.delete import NamespaceWaits, delete_objects, without_unserved
from reconciler.kube.live import LiveIndex
from reconciler.kube.transform import COMPONENT
from reconciler.kube.wait import all_ready, wait_ready
from reconciler.model.kube_object import KubeObject, ObjectKey
from reconciler.model.task import ProgressEvent, ProgressState, Task, TaskType
from reconciler.observability.logging import get_logger


def _namespace_object(name: str) -> KubeObject:
    return KubeObject({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


@dataclass
class _Run:
    """One task's run on one cluster: what its steps share."""

    task: Task
    cluster: Cluster
    outcome: Outcome
    phase: Phase
    ctx: ActionContext
    """What the component's actions get (the same object for all hooks of the run)."""


class ComponentReconciler:
    """Stateless: one instance serves any number of tasks and clusters concurrently."""

    def __init__(
        self,
        charts: ChartProvider,
        actions: ActionRegistry | None = None,
        *,
        concurrency: int = 16,
        full_after: float | None = None,
        render_cache: int = 256,
    ) -> None:
        self.charts = charts
        self.actions = actions or ActionRegistry()
        self.concurrency = concurrency
        self.full_after = full_after
        """Seconds after which a component with unchanged inputs is applied in full again."""
        self.renders = Renders(charts, render_cache)

    @staticmethod
    async def capabilities(cluster: Cluster) -> Capabilities:
        """The cluster's version and API versions, as Helm's `.Capabilities`."""
        return await Renders.capabilities(cluster)

    async def run(
        self,
        task: Task,
        cluster: Cluster,
        report: Report | None = None,
        *,
        live: LiveIndex | None = None,
        namespace_waits: NamespaceWaits | None = None,
    ) -> Outcome:
        """Run one task. `live`: the run's shared view of the cluster (one metadata LIST per
        kind for every component of the run); without it reads are limited to this component.
        `namespace_waits`: a delete leaves the wait for its namespace to be gone there (the
        caller awaits it), else it waits itself."""
        started = time.monotonic()
        outcome = Outcome(task.component)
        emit = report or (lambda event: None)
        log = get_logger(component=task.component, correlation_id=task.correlation_id)
        ctx = ActionContext(task=task, kube=cluster, logger=log)
        run = _Run(task, cluster, outcome, Phase(task.component, emit), ctx)
        try:
            if task.type is TaskType.RECONCILE:
                await self._reconcile(run, live or LiveIndex(shared=False))
            else:
                await self._delete(run, namespace_waits)
        except ReconcilerError as exc:
            outcome.error = f"component {task.component}: {exc}"
            outcome.transient = exc.transient
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
            summary = outcome.summary(deleting=task.type is TaskType.DELETE)
            emit(ProgressEvent(task.component, ProgressState.SUCCESS, summary, "done"))
        return outcome

    async def _hook(self, name: str, run: _Run) -> bool:
        hook = self.actions.hook(run.task.component, name)
        if hook is None:
            return False
        run.phase(f"action {name}")
        await hook(run.ctx)
        return True

    async def _reconcile(self, run: _Run, index: LiveIndex) -> None:
        task, cluster = run.task, run.cluster
        await self._hook("pre_reconcile", run)
        fingerprint, digest = await self.renders.inputs(task, cluster)
        previous = await records.read(cluster, task.component, task.namespace, index)
        regenerate = _regenerates(task, previous)
        if (
            previous is not None
            and not regenerate
            and self._may_skip_render(task, previous, digest)
        ):
            record = previous
            steady = SteadyState(cluster, task, record, index)
            if await steady.check(
                lambda existing: self._desired(run, digest, record, existing),
                run.outcome,
                run.phase,
                concurrency=self.concurrency,
            ):
                await self._hook("post_reconcile", run)
                return
        run.phase("render chart")
        if self._may_reuse_render(task, digest, regenerate):
            objects = list(await self.renders.once(task, cluster, digest, fingerprint))
        else:
            objects = await self.renders.render(task, cluster)
            if digest and not self._has_actions(task.component):
                self.renders.cache.put(digest, objects)
        run.ctx.objects = list(objects)
        if not await self._hook("reconcile", run):
            await _FullApply(self, run, previous, digest, index, regenerate).apply(objects)
        await self._hook("post_reconcile", run)

    async def render_ahead(
        self, task: Task, cluster: Cluster, live: LiveIndex | None = None
    ) -> int | None:
        """Render `task`'s chart into the render cache before its turn comes; the number of
        objects rendered, or None when its turn will not render (or must render itself).

        Why: a plan's prerequisites run one after another, mostly waiting for the apiserver,
        and every later component used to start its render only when its turn came. Rendered
        here meanwhile, its turn finds the render in the cache (or still running, and waits for
        it). Only a turn that renders anyway and may use the cache is rendered ahead: no record
        or new inputs, not forced, not regenerating, no component actions. A no-op turn (the
        fast path) renders nothing, and neither does this. The cache is keyed by the inputs'
        digest (the cluster's capabilities included), so a render made before the capabilities
        changed is simply not found."""
        if task.type is not TaskType.RECONCILE:
            return None
        fingerprint, digest = await self.renders.inputs(task, cluster)
        previous = await records.read(
            cluster, task.component, task.namespace, live or LiveIndex(shared=False)
        )
        regenerate = _regenerates(task, previous)
        if not self._may_reuse_render(task, digest, regenerate):
            return None
        if previous is not None and self._may_skip_render(task, previous, digest):
            return None  # the fast path's turn: it renders nothing unless something drifted
        return len(await self.renders.once(task, cluster, digest, fingerprint))

    def _may_reuse_render(self, task: Task, digest: str, regenerate: bool) -> bool:
        """A full run may take its render from the cache: inputs known, no component actions
        (they may change the objects they are given), and neither forced nor regenerating
        (both promise a render made now, not one kept from an earlier run of a long-lived
        reconciler)."""
        return bool(digest) and not (task.force or regenerate or self._has_actions(task.component))

    def _has_actions(self, component: str) -> bool:
        return any(self.actions.hook(component, name) for name in HOOKS)

    def _may_skip_render(self, task: Task, previous: records.Record, digest: str) -> bool:
        """The fast path applies: same inputs as the last complete run, nothing forced, no
        component actions (they may expect the rendered objects), no full run due."""
        if task.force or not digest or previous.digest != digest or previous.state != "applied":
            return False
        if task.wait and not previous.ready:
            return False
        if self.full_after is not None and time.time() - previous.full_at >= self.full_after:
            return False
        return not self._has_actions(task.component)

    async def _desired(
        self,
        run: _Run,
        digest: str,
        record: records.Record,
        existing: set[ObjectKey],
    ) -> tuple[list[KubeObject], str]:
        """The prepared objects for `digest` (from the render cache, else rendered again) with
        the generated values of `existing` ones kept, and the generated paths to record."""
        task = run.task
        rendered = self.renders.cache.get(digest)
        if rendered is None:
            run.phase("render chart")
            rendered = await self.renders.render(task, run.cluster)
            self.renders.cache.put(digest, rendered)
        objects = await _prepared(run, [*rendered, _namespace_object(task.namespace)])
        objects, generated = await keep_generated(
            run.cluster,
            objects,
            existing,
            Generated.load(record.generated),
            digest,
            lambda: self._render_prepared(run),
            lambda: self.charts.may_vary(task),
        )
        return objects, generated.dump()

    async def _render_prepared(self, run: _Run) -> list[KubeObject]:
        return await _prepared(run, await self.renders.render(run.task, run.cluster))

    async def _delete(self, run: _Run, namespace_waits: NamespaceWaits | None = None) -> None:
        task, cluster, outcome, phase = run.task, run.cluster, run.outcome, run.phase
        await self._hook("pre_delete", run)
        if not await self._hook("delete", run):
            phase("render chart")
            rendered, unserved = await without_unserved(
                cluster, await self.renders.render(task, cluster)
            )
            outcome.warnings.extend(unserved)
            objects = await _prepared(run, rendered)
            recorded = await records.read(cluster, task.component, task.namespace)
            known = {obj.key for obj in objects}
            if recorded:
                objects += [e.as_object() for e in recorded.entries if e.key not in known]
            run.ctx.objects = list(objects)
            deleted = await delete_objects(
                cluster,
                objects,
                component=task.component,
                timeout=task.timeout,
                on_phase=phase,
                warnings=outcome.warnings,
                namespace_waits=namespace_waits,
            )
            outcome.deleted = [obj.key for obj in deleted]
            await records.remove(cluster, task.component, task.namespace)
        await self._hook("post_delete", run)


async def prepare_for(
    cluster: Cluster, task: Task, objects: list[KubeObject], *, namespace: str | None = None
) -> tuple[list[KubeObject], list[str]]:
    """`prepare_all` with everything a task puts on its objects (namespace, version, component,
    the driver's stamp): one place, so that no path of the core applies an object unmarked."""
    return await prepare_all(
        cluster,
        objects,
        namespace=task.namespace if namespace is None else namespace,
        version=task.version,
        component=task.component,
        stamp=task.stamp,
    )


async def _prepared(run: _Run, objects: list[KubeObject]) -> list[KubeObject]:
    prepared, _ = await prepare_for(run.cluster, run.task, objects)
    return prepared


class _FullApply:
    """A full apply of one run, step by step: record the intent, apply, prune, record the
    result and wait."""

    def __init__(
        self,
        core: ComponentReconciler,
        run: _Run,
        previous: records.Record | None,
        digest: str,
        index: LiveIndex,
        regenerate: bool,
    ) -> None:
        self.core = core
        self.run = run
        self.task, self.cluster, self.outcome = run.task, run.cluster, run.outcome
        self.previous = previous
        self.old = previous.by_key() if previous else {}
        self.digest = digest
        self.index = index
        self.regenerate = regenerate
        self.generated = Generated.load(previous.generated) if previous else Generated()

    async def apply(self, rendered: list[KubeObject]) -> None:
        task, outcome = self.task, self.outcome
        objects, outcome.warnings = await prepare_for(self.cluster, task, rendered)
        owned_namespace, created = await self._ensure_namespace()
        intent = {
            obj.key: records.Entry(obj.api_version, obj.kind, obj.namespace, obj.name)
            for obj in (*objects, *([owned_namespace] if owned_namespace else []))
        }
        if owned_namespace is not None and created is None:
            objects.append(owned_namespace)  # created just now: its apply needs no repeat
        await self._record_intent(intent)
        result = await self._apply(objects)
        if created is not None:
            result.live.append(created)
            result.changed.append(created.key)
        outcome.applied = len(result.live)
        outcome.changed = result.changed
        outcome.warnings.extend(result.warnings)
        await self._prune(intent)
        await self._record_and_wait(result)

    async def _ensure_namespace(self) -> tuple[KubeObject | None, KubeObject | None]:
        """The component's namespace as an object to own when we create it or created it
        before (else None), and the live namespace when it was created just now."""
        task, cluster = self.task, self.cluster
        (namespace,), _ = await prepare_for(
            cluster, task, [_namespace_object(task.namespace)], namespace=""
        )
        if await cluster.get(namespace) is None:
            # first: the inventory record lives in it. Created, not applied: components of one
            # namespace run at once, and each would own it (and relabel it on every run after)
            created = await cluster.create(namespace)
            if created is not None:
                # the creator owns it: applied once more now, so that its fields are ours as an
                # apply (the creation recorded them as an update) and the next run's apply of the
                # same namespace changes nothing (else every first re-run reported it changed)
                return namespace, await cluster.apply(namespace)
        return (namespace if namespace.key in self.old else None), None

    async def _record_intent(self, intent: dict[ObjectKey, records.Entry]) -> None:
        """Record the objects about to be applied first: a crash mid-apply must not leave
        unrecorded objects."""
        new_keys = [key for key in intent if key not in self.old]
        previous = self.previous
        if new_keys or (previous is not None and previous.state != "applied"):
            pending = [*self.old.values(), *(intent[key] for key in new_keys)]
            task = self.task
            await records.write(
                self.cluster,
                records.Record(task.component, task.namespace, task.version, "applying", pending),
            )

    async def _apply(self, objects: list[KubeObject]) -> ApplyResult:
        """Apply with the generated values of existing objects kept (unless regenerating)."""
        cluster, old = self.cluster, self.old
        observed = await self.index.observe(cluster, objects, self.task.component) if old else {}
        if not self.regenerate:
            objects, self.generated = await keep_generated(
                cluster,
                objects,
                set(observed),
                self.generated,
                self.digest,
                lambda: self.core._render_prepared(self.run),
                lambda: self.core.charts.may_vary(self.task),
            )
        return await apply_objects(
            cluster,
            objects,
            before={key: state.resource_version for key, state in observed.items()},
            concurrency=self.core.concurrency,
            on_phase=self.run.phase,
        )

    async def _prune(self, intent: dict[ObjectKey, records.Entry]) -> None:
        """Delete what the previous record lists, this render does not, and still is ours."""
        stale = await _still_ours(
            self.cluster,
            [entry.as_object() for key, entry in self.old.items() if key not in intent],
            self.task.component,
        )
        if stale:
            self.run.phase(f"pruning {len(stale)} objects")
            pruned = await delete_objects(
                self.cluster,
                stale,
                component=self.task.component,
                timeout=self.task.timeout,
                warnings=self.outcome.warnings,
            )
            self.outcome.pruned = [obj.key for obj in pruned]

    async def _record_and_wait(self, result: ApplyResult) -> None:
        task, cluster, previous = self.task, self.cluster, self.previous
        final = {live.key: live for live in result.live}
        if self.regenerate:
            regenerated = task.regenerate
        else:
            regenerated = previous.regenerated if previous else ""
        record = records.Record(
            task.component,
            task.namespace,
            task.version,
            "applied",
            [records.Entry.of(live) for live in final.values()],
            digest=self.digest,
            full_at=time.time(),
            generated=self.generated.dump(),
            regenerated=regenerated,
        )
        if task.wait and not all_ready(result.live):
            # recorded before waiting: what was applied and pruned stays known if the wait fails
            await records.write(cluster, record)
            self.run.phase("waiting for readiness")
            final.update(
                await wait_ready(
                    cluster, result.live, timeout=task.timeout, on_waiting=self.run.phase.blocked
                )
            )
        # observed after readiness: the controllers' status writes are part of the record
        record.entries = [records.Entry.of(live) for live in final.values()]
        record.ready = task.wait
        await records.write(cluster, record)
        self.outcome.record = record


async def _still_ours(
    cluster: Cluster, candidates: list[KubeObject], component: str
) -> list[KubeObject]:
    """Prune only what still carries our component label: another component (e.g. the CRDs
    pseudo-component) may have taken an object over since we recorded it. Returns the live
    objects: their annotations say whether Helm's resource policy keeps them."""
    lives = await asyncio.gather(*(cluster.get(obj) for obj in candidates))
    return [live for live in lives if live is not None and live.labels.get(COMPONENT) == component]


def _regenerates(task: Task, previous: records.Record | None) -> bool:
    """The run applies generated values as rendered now: a new `--regenerate` token."""
    return bool(task.regenerate) and (previous is None or previous.regenerated != task.regenerate)
