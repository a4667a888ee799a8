"""The SyncResource controller: a module manager's objects, applied to its Kyma's remote
cluster by the component core.

Each SyncResource is one component (`sync-<name>`) of the core on the Kyma's remote cluster:
server-side apply, prune of objects a newer version no longer lists, the no-op fast path, drift
watched like a Manifest's. Module managers are other teams' code, so a SyncResource applies only
for a module its Kyma has (in spec or status), only to that Kyma's remote cluster and never to
the control plane (a Kyma with `sync: "false"` gets none: the status says so). The objects are
checked first (`sync_validation.py`, and cluster-scoped kinds refused via discovery), and every
object that already exists on the remote cluster must have been created by this SyncResource
(our component label): another module's or component's object, or one nobody labelled, is
refused, never taken over. A refused SyncResource applies nothing. `status.objects` has one
entry per object. Deletion (finalizer `operator.kyma-project.io/sync-resource`) removes the
objects this SyncResource created, never another's, unless the cluster went away.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from reconciler.core.results import Outcome
from reconciler.core.runner import ComponentReconciler
from reconciler.errors import ApplyError, ReconcilerError
from reconciler.kube.cluster import Cluster
from reconciler.kube.transform import COMPONENT
from reconciler.model.kube_object import Body, KubeObject
from reconciler.model.lifecycle import GROUP, SYNC, State
from reconciler.model.module_sync import SyncResourceSpec
from reconciler.model.task import GivenObjects, Task, TaskType
from reconciler.operator.clusters.control import ControlPlane
from reconciler.operator.clusters.drift import DriftWatch
from reconciler.operator.clusters.targets import TargetClusters, TargetMissing
from reconciler.operator.controllers.remote_object import RemoteObjectController
from reconciler.operator.controllers.status import last_operation
from reconciler.operator.controllers.sync_validation import SyncContentError, check_objects
from reconciler.operator.settings import OperatorSettings
from reconciler.util.backoff import Backoff

SYNC_FINALIZER = f"{GROUP}/sync-resource"


class SyncTargetRefused(ReconcilerError):
    """The SyncResource's Kyma does not allow it (no remote cluster, or not its module): nothing
    is applied; tried again later, since the Kyma may change."""


def _entry(obj: KubeObject, state: str, message: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"version": obj.version, "kind": obj.kind, "name": obj.name}
    if obj.group:
        entry["group"] = obj.group
    if obj.namespace:
        entry["namespace"] = obj.namespace
    entry["state"] = state
    if message:
        entry["message"] = message
    return entry


class SyncResourceController(RemoteObjectController[SyncResourceSpec]):
    kind: ClassVar[str] = "SyncResource"
    finalizer: ClassVar[str] = SYNC_FINALIZER
    spec_model = SyncResourceSpec
    failures: ClassVar[tuple[type[Exception], ...]] = (ReconcilerError, SyncContentError)

    def __init__(
        self,
        control: ControlPlane,
        targets: TargetClusters,
        core: ComponentReconciler,
        settings: OperatorSettings,
        drift: DriftWatch | None = None,
    ) -> None:
        self.control = control
        self.targets = targets
        self.core = core
        self.settings = settings
        self.drift = drift
        self.backoff = Backoff(settings.error_interval, settings.error_max_interval)

    def _kyma(self, body: Body, spec: SyncResourceSpec) -> str:
        return spec.kyma

    async def _failed(self, body: Body, state: State, exc: Exception) -> float | None:
        delay = await self._report(body, state, str(exc))
        # refused content stays refused until the spec changes, whose event brings it back
        return None if isinstance(exc, SyncContentError) else delay

    def _namespace(self, spec: SyncResourceSpec) -> str:
        return self.settings.module_namespace.replace("{kyma}", spec.kyma)

    def _task(
        self, body: Body, spec: SyncResourceSpec, task_type: TaskType, objects: list[KubeObject]
    ) -> Task:
        meta = body["metadata"]
        return Task(
            component=f"sync-{meta['name']}",
            namespace=self._namespace(spec),
            version=f"0.0.{meta.get('generation') or 0}",
            source=GivenObjects(tuple(objects)),
            type=task_type,
            wait=False,
            timeout=self.settings.timeout,
        )

    async def _target(self, body: Body, spec: SyncResourceSpec, *, deleting: bool) -> Cluster:
        """The Kyma's remote cluster, never the control plane; when applying, only for a
        module the Kyma has (in spec or status)."""
        namespace = body["metadata"]["namespace"]
        kyma = await self.control.get("Kyma", namespace, spec.kyma)
        if kyma is None:
            raise TargetMissing(f"Kyma {spec.kyma} does not exist in namespace {namespace}")
        if (kyma["metadata"].get("labels") or {}).get(SYNC) == "false":
            raise SyncTargetRefused(
                f'Kyma {spec.kyma} is not synced ({SYNC}: "false"): a SyncResource applies '
                "only to a Kyma's remote cluster, never to the control plane; nothing applied"
            )
        if not deleting:
            if not spec.module:
                raise SyncTargetRefused("spec.module is missing: nothing applied")
            modules = [
                *((kyma.get("spec") or {}).get("modules") or []),
                *((kyma.get("status") or {}).get("modules") or []),
            ]
            if spec.module not in {m.get("name") for m in modules if isinstance(m, dict)}:
                raise SyncTargetRefused(
                    f"Kyma {spec.kyma} has no module {spec.module}: nothing applied"
                )
        return await self.targets.get(namespace, spec.kyma, remote=True)

    async def _checked(
        self, cluster: Cluster, spec: SyncResourceSpec, component: str
    ) -> list[KubeObject]:
        objects = check_objects(spec.objects, self._namespace(spec))
        problems = []
        for obj in objects:
            if not (await cluster.info(obj)).namespaced:
                problems.append(f"{obj.kind} {obj.name}: cluster-scoped kinds cannot be synced")
        if problems:
            raise SyncContentError("; ".join(problems))
        for obj, live in zip(objects, await self._live(cluster, objects), strict=True):
            if live is None:
                continue
            owner = (live.metadata.get("labels") or {}).get(COMPONENT)
            if owner != component:
                whose = f"component {owner}" if owner else "no component of ours"
                problems.append(
                    f"{obj}: exists and belongs to {whose}, not created by this SyncResource"
                    " (objects of others are never taken over)"
                )
        if problems:
            raise SyncContentError("; ".join(problems))
        return objects

    @staticmethod
    async def _live(cluster: Cluster, objects: list[KubeObject]) -> list[KubeObject | None]:
        """The live objects (None: gone, or its kind is not served any more)."""

        async def live(obj: KubeObject) -> KubeObject | None:
            try:
                return await cluster.get(obj)
            except ApplyError:
                return None

        return list(await asyncio.gather(*(live(obj) for obj in objects)))

    async def _own(
        self, cluster: Cluster, objects: list[KubeObject], component: str
    ) -> list[KubeObject]:
        """Those of `objects` that exist and carry this SyncResource's component label."""
        live = await self._live(cluster, objects)
        return [
            obj
            for obj, found in zip(objects, live, strict=True)
            if found is not None
            and (found.metadata.get("labels") or {}).get(COMPONENT) == component
        ]

    async def _reconcile(self, body: Body, spec: SyncResourceSpec) -> float:
        cluster = await self._target(body, spec, deleting=False)
        objects = await self._checked(cluster, spec, f"sync-{body['metadata']['name']}")
        task = self._task(body, spec, TaskType.RECONCILE, objects)
        outcome = await self.core.run(task, cluster)
        if outcome.transient:
            await self.targets.evict(body["metadata"]["namespace"], spec.kyma)
        if self.drift is not None and outcome.ok:
            kinds = {(obj.api_version, obj.kind) for obj in objects}
            owner = ("SyncResource", *self._key(body))
            self.drift.track(cluster, task.component, owner, kinds)
        return await self._finish(body, objects, outcome)

    async def _finish(self, body: Body, objects: list[KubeObject], outcome: Outcome) -> float:
        if outcome.ok:
            entries = [_entry(obj, "Applied") for obj in objects]
            message = f"{len(objects)} objects applied"
            if outcome.pruned:
                message += f", {len(outcome.pruned)} pruned"
            return await self._report(body, State.READY, message, entries)
        entries = [
            _entry(obj, "Error", outcome.error)
            if str(obj.key) in outcome.error
            else _entry(obj, "Pending")
            for obj in objects
        ]
        return await self._report(body, State.ERROR, outcome.error, entries)

    @staticmethod
    def _key(body: Body) -> tuple[str, str]:
        return body["metadata"]["namespace"], body["metadata"]["name"]

    async def _delete(self, body: Body, spec: SyncResourceSpec) -> float | None:
        meta = body["metadata"]
        if SYNC_FINALIZER not in (meta.get("finalizers") or []):
            return None
        try:
            cluster: Cluster | None = await self._target(body, spec, deleting=True)
        except (TargetMissing, SyncTargetRefused):
            cluster = None  # the cluster is gone, or never got anything: nothing to remove
        if cluster is not None:
            try:
                listed = check_objects(spec.objects, self._namespace(spec))
            except SyncContentError:
                listed = []  # never applied as they are: the inventory names what was
            # only what this SyncResource created; the inventory adds what it applied
            objects = await self._own(cluster, listed, f"sync-{meta['name']}")
            task = self._task(body, spec, TaskType.DELETE, objects)
            if self.drift is not None:
                self.drift.forget(cluster, task.component)
            outcome = await self.core.run(task, cluster)
            if outcome.error:
                return await self._report(body, State.DELETING, outcome.error)
        await self.control.set_finalizer(body, SYNC_FINALIZER, False)
        self.backoff.forget(self._key(body))
        return None

    async def _report(
        self,
        body: Body,
        state: State,
        message: str,
        objects: list[dict[str, Any]] | None = None,
    ) -> float:
        previous = body.get("status") or {}
        status: dict[str, Any] = {
            "state": str(state),
            "lastOperation": last_operation(previous, message),
        }
        if body["metadata"].get("generation") is not None:
            status["observedGeneration"] = body["metadata"]["generation"]
        kept = objects if objects is not None else previous.get("objects")
        if kept is not None:
            status["objects"] = kept
        await self.control.set_status(body, status)
        key = self._key(body)
        if state is State.READY:
            self.backoff.forget(key)
            return self.settings.success_interval
        return self.backoff.next(key)
