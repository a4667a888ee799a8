"""Reconcile or delete one component on one cluster, reporting progress as it goes.

reconcile: render → prepare → record intent in the inventory → apply (CRDs and namespaces
first) → prune what the previous version applied and this one does not → wait until ready →
record the result; component actions run before, instead of, and after the generic steps.
When the inputs' digest equals the record's, the fast path (`steady.SteadyState`) replaces all
of that: compare live metadata with the record, re-apply only what drifted.
render_ahead: render a component that will render anyway before its turn (while the steps it
waits for run), into the render cache its turn then reads; one render per digest at a time.
delete: the same objects (rendered plus recorded) in reverse order, namespaces only when empty
of anything the component does not own, then the record itself.
Every failure ends in one `error` event whose message names the component and the cause.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from reconciler.charts.render import Capabilities
from reconciler.core.actions import HOOKS, ActionContext, ActionRegistry
from reconciler.core.charts import ChartProvider
from reconciler.core.generated import Generated, keep_generated
from reconciler.core.results import Outcome, Phase, Report
from reconciler.core.steady import RenderCache, SteadyState
from reconciler.errors import ClusterUnreachable, ReadinessTimeout, ReconcilerError, WaitTimeout
from reconciler.kube import inventory
from reconciler.kube.apply import apply_objects, prepare_all
from reconciler.kube.cluster import Cluster
from reconciler.kube.delete import NamespaceWaits, delete_objects, without_unserved
from reconciler.kube.live import LiveIndex
from reconciler.kube.transform import COMPONENT
from reconciler.kube.wait import all_ready, wait_ready
from reconciler.model.kube_object import KubeObject, ObjectKey
from reconciler.model.task import ProgressEvent, ProgressState, Task, TaskType
from reconciler.observability.logging import get_logger

TRANSIENT_ERRORS = (ClusterUnreachable, ReadinessTimeout, WaitTimeout)


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
        full_after: float | None = None,
        render_cache: int = 256,
    ) -> None:
        self.charts = charts
        self.actions = actions or ActionRegistry()
        self.concurrency = concurrency
        self.full_after = full_after
        """Seconds after which a component with unchanged inputs is applied in full again."""
        self._rendered = RenderCache(render_cache)
        self._rendering: dict[str, asyncio.Future[list[KubeObject]]] = {}
        """Renders in progress by input digest: a turn that finds its render-ahead still running
        waits for it instead of rendering the same inputs a second time."""

    @staticmethod
    async def capabilities(cluster: Cluster) -> Capabilities:
        """The cluster's version and API versions, as Helm's `.Capabilities` (both cached by
        the cluster connection; API versions refresh when CRDs change discovery)."""
        return Capabilities(await cluster.version(), tuple(await cluster.mapper.api_versions()))

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

        phase = Phase(task.component, emit)

        log = get_logger(component=task.component, correlation_id=task.correlation_id)
        ctx = ActionContext(task=task, kube=cluster, charts=self.charts, logger=log)
        try:
            if task.type is TaskType.RECONCILE:
                await self._reconcile(ctx, outcome, phase, live or LiveIndex(shared=False))
            else:
                await self._delete(ctx, outcome, phase, namespace_waits)
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
            summary = outcome.summary(deleting=task.type is TaskType.DELETE)
            emit(ProgressEvent(task.component, ProgressState.SUCCESS, summary, "done"))
        return outcome

    async def _hook(self, name: str, ctx: ActionContext, phase: Callable[[str], None]) -> bool:
        hook = self.actions.hook(ctx.task.component, name)
        if hook is None:
            return False
        phase(f"action {name}")
        await hook(ctx)
        return True

    async def _reconcile(
        self,
        ctx: ActionContext,
        outcome: Outcome,
        phase: Phase,
        index: LiveIndex,
    ) -> None:
        task, cluster = ctx.task, ctx.kube
        await self._hook("pre_reconcile", ctx, phase)
        fingerprint, digest = await self._inputs(task, cluster)
        previous = await inventory.read(cluster, task.component, task.namespace, index)
        regenerate = _regenerates(task, previous)
        if (
            previous is not None
            and not regenerate
            and self._may_skip_render(task, previous, digest)
        ):
            record = previous
            steady = SteadyState(cluster, task, record, index)
            if await steady.check(
                lambda existing: self._desired(ctx, digest, phase, record, existing),
                outcome,
                phase,
                concurrency=self.concurrency,
            ):
                await self._hook("post_reconcile", ctx, phase)
                return
        phase("render chart")
        if self._may_reuse_render(task, digest, regenerate):
            ctx.objects = list(await self._render_once(task, cluster, digest, fingerprint))
        else:
            ctx.objects = await self.charts.render(task, await self.capabilities(cluster))
            if digest and not self._has_actions(task.component):
                self._rendered.put(digest, ctx.objects)
        if not await self._hook("reconcile", ctx, phase):
            await self._apply(ctx, outcome, phase, previous, digest, index, regenerate)
        await self._hook("post_reconcile", ctx, phase)

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
        fingerprint, digest = await self._inputs(task, cluster)
        previous = await inventory.read(
            cluster, task.component, task.namespace, live or LiveIndex(shared=False)
        )
        regenerate = _regenerates(task, previous)
        if not self._may_reuse_render(task, digest, regenerate):
            return None
        if previous is not None and self._may_skip_render(task, previous, digest):
            return None  # the fast path's turn: it renders nothing unless something drifted
        return len(await self._render_once(task, cluster, digest, fingerprint))

    def _may_reuse_render(self, task: Task, digest: str, regenerate: bool) -> bool:
        """A full run may take its render from the cache: inputs known, no component actions
        (they may change the objects they are given), and neither forced nor regenerating
        (both promise a render made now, not one kept from an earlier run of a long-lived
        reconciler)."""
        return bool(digest) and not (task.force or regenerate or self._has_actions(task.component))

    @staticmethod
    async def _fingerprint(cluster: Cluster) -> str:
        """Changes whenever the cluster's capabilities may (cached by the connection)."""
        return f"{await cluster.version()}/{await cluster.mapper.fingerprint()}"

    async def _inputs(self, task: Task, cluster: Cluster) -> tuple[str, str]:
        """The capabilities' fingerprint, and the digest of everything `task`'s render depends
        on (that fingerprint included)."""
        fingerprint = await self._fingerprint(cluster)
        return fingerprint, await self.charts.digest(task, fingerprint)

    async def _render_once(
        self, task: Task, cluster: Cluster, digest: str, fingerprint: str
    ) -> list[KubeObject]:
        """The render for `digest` (taken with the capabilities' `fingerprint`): from the cache,
        from a render of it still running, or rendered now (and cached: callers copy the list,
        never change its objects)."""
        cached = self._rendered.get(digest)
        if cached is not None:
            return cached
        flight = self._rendering.get(digest)
        if flight is None or flight.cancelled():
            flight = asyncio.ensure_future(
                self._render_into_cache(task, cluster, digest, fingerprint)
            )
            self._rendering[digest] = flight

            def done(finished: asyncio.Future[list[KubeObject]]) -> None:
                if self._rendering.get(digest) is finished:
                    del self._rendering[digest]
                if not finished.cancelled():
                    finished.exception()  # retrieved: a render ahead's failure is not logged

            flight.add_done_callback(done)
        return await asyncio.shield(flight)

    async def _render_into_cache(
        self, task: Task, cluster: Cluster, digest: str, fingerprint: str
    ) -> list[KubeObject]:
        objects = await self.charts.render(task, await self.capabilities(cluster))
        if await self._fingerprint(cluster) == fingerprint:  # capabilities did not move since
            self._rendered.put(digest, objects)
        return objects

    def _has_actions(self, component: str) -> bool:
        return any(self.actions.hook(component, name) for name in HOOKS)

    def _may_skip_render(self, task: Task, previous: inventory.Inventory, digest: str) -> bool:
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
        ctx: ActionContext,
        digest: str,
        phase: Callable[[str], None],
        record: inventory.Inventory,
        existing: set[ObjectKey],
    ) -> tuple[list[KubeObject], str]:
        """The prepared objects for `digest` (from the render cache, else rendered again) with
        the generated values of `existing` ones kept, and the generated paths to record."""
        task = ctx.task
        rendered = self._rendered.get(digest)
        if rendered is None:
            phase("render chart")
            rendered = await self.charts.render(task, await self.capabilities(ctx.kube))
            self._rendered.put(digest, rendered)
        objects = await self._prepared(ctx, [*rendered, _namespace_object(task.namespace)])
        objects, generated = await keep_generated(
            ctx.kube,
            objects,
            existing,
            Generated.load(record.generated),
            digest,
            lambda: self._render_prepared(ctx),
            lambda: self.charts.may_vary(task),
        )
        return objects, generated.dump()

    async def _prepared(self, ctx: ActionContext, objects: list[KubeObject]) -> list[KubeObject]:
        task = ctx.task
        prepared, _ = await prepare_all(
            ctx.kube,
            objects,
            namespace=task.namespace,
            version=task.version,
            component=task.component,
        )
        return prepared

    async def _render_prepared(self, ctx: ActionContext) -> list[KubeObject]:
        capabilities = await self.capabilities(ctx.kube)
        return await self._prepared(ctx, await self.charts.render(ctx.task, capabilities))

    async def _apply(
        self,
        ctx: ActionContext,
        outcome: Outcome,
        phase: Phase,
        previous: inventory.Inventory | None,
        digest: str,
        index: LiveIndex,
        regenerate: bool,
    ) -> None:
        task, cluster = ctx.task, ctx.kube
        objects, outcome.warnings = await prepare_all(
            cluster,
            ctx.objects,
            namespace=task.namespace,
            version=task.version,
            component=task.component,
        )
        old = previous.by_key() if previous else {}
        owned_namespace, created = await self._ensure_namespace(cluster, task, old)
        intent = {
            obj.key: inventory.Entry(obj.api_version, obj.kind, obj.namespace, obj.name)
            for obj in (*objects, *([owned_namespace] if owned_namespace else []))
        }
        if owned_namespace is not None and created is None:
            objects.append(owned_namespace)  # created just now: its apply needs no repeat
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
        observed = await index.observe(cluster, objects, task.component) if old else {}
        generated = Generated.load(previous.generated) if previous else Generated()
        if not regenerate:
            objects, generated = await keep_generated(
                cluster,
                objects,
                set(observed),
                generated,
                digest,
                lambda: self._render_prepared(ctx),
                lambda: self.charts.may_vary(task),
            )
        result = await apply_objects(
            cluster,
            objects,
            before={key: state.resource_version for key, state in observed.items()},
            concurrency=self.concurrency,
            on_phase=phase,
        )
        if created is not None:
            result.live.append(created)
            result.changed.append(created.key)
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
        final = {live.key: live for live in result.live}
        record = inventory.Inventory(
            task.component,
            task.namespace,
            task.version,
            "applied",
            [inventory.Entry.of(live) for live in final.values()],
            digest=digest,
            full_at=time.time(),
            generated=generated.dump(),
            regenerated=task.regenerate if regenerate else previous.regenerated if previous else "",
        )
        if task.wait and not all_ready(result.live):
            # recorded before waiting: what was applied and pruned stays known if the wait fails
            await inventory.write(cluster, record)
            phase("waiting for readiness")
            final.update(
                await wait_ready(
                    cluster, result.live, timeout=task.timeout, on_waiting=phase.blocked
                )
            )
        # observed after readiness: the controllers' status writes are part of the record
        record.entries = [inventory.Entry.of(live) for live in final.values()]
        record.ready = task.wait
        await inventory.write(cluster, record)
        outcome.record = record

    @staticmethod
    async def _still_ours(
        cluster: Cluster, candidates: list[KubeObject], component: str
    ) -> list[KubeObject]:
        """Prune only what still carries our component label: another component (e.g. the CRDs
        pseudo-component) may have taken an object over since we recorded it. Returns the live
        objects: their annotations say whether Helm's resource policy keeps them."""
        lives = await asyncio.gather(*(cluster.get(obj) for obj in candidates))
        return [
            live for live in lives if live is not None and live.labels.get(COMPONENT) == component
        ]

    async def _ensure_namespace(
        self, cluster: Cluster, task: Task, old: dict[ObjectKey, inventory.Entry]
    ) -> tuple[KubeObject | None, KubeObject | None]:
        """The component's namespace as an object to own when we create it or created it
        before (else None), and the live namespace when it was created just now."""
        (namespace,), _ = await prepare_all(
            cluster,
            [_namespace_object(task.namespace)],
            namespace="",
            version=task.version,
            component=task.component,
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
        return (namespace if namespace.key in old else None), None

    async def _delete(
        self,
        ctx: ActionContext,
        outcome: Outcome,
        phase: Callable[[str], None],
        namespace_waits: NamespaceWaits | None = None,
    ) -> None:
        task, cluster = ctx.task, ctx.kube
        await self._hook("pre_delete", ctx, phase)
        if not await self._hook("delete", ctx, phase):
            phase("render chart")
            rendered, unserved = await without_unserved(
                cluster, await self.charts.render(task, await self.capabilities(cluster))
            )
            outcome.warnings.extend(unserved)
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
                namespace_waits=namespace_waits,
            )
            outcome.deleted = [obj.key for obj in deleted]
            await inventory.remove(cluster, task.component, task.namespace)
        await self._hook("post_delete", ctx, phase)


def _regenerates(task: Task, previous: inventory.Inventory | None) -> bool:
    """The run applies generated values as rendered now: a new `--regenerate` token."""
    return bool(task.regenerate) and (previous is None or previous.regenerated != task.regenerate)
