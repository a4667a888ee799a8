"""The Manifest controller: one module on one target cluster, installed by the component core,
in the lifecycle manager's steps and with its marks.

Reconcile: target cluster (local or the Kyma's remote one) -> the core (render, apply with the
lifecycle manager's labels and annotations on every object, prune what the previous version
applied and this one does not, the no-op fast path when nothing changed) -> once the module's
CRDs are served, its default custom resource, created only when missing (policy
`CreateAndDelete`; a user's edit of it stays, and the `ModuleCR` condition remembers it was
created, across restarts) -> readiness of its workloads -> `status.state`, `status.synced` and
the conditions `Resources`, `Installation`, `ModuleCR`.

Delete (finalizer `declarative.kyma-project.io/finalizer`), the lifecycle manager's order, each
step requeued (busy) until done, never waited for in a worker:
1. custom resources of the default resource's kind, other than the default resource itself (all
   of them with policy `Ignore`), in any namespace, block: `Deleting`, "waiting for module crs
   deletion", naming them; nothing is removed meanwhile;
2. the default resource is deleted, and waited for (its controller's finalizer);
3. the module's objects of other kinds than the operator's own (its custom resources,
   ConfigMaps, ...) are deleted and waited for, while the operator still runs;
4. the rest through the core (Deployments, RBAC, Services, CRDs, namespaces), then the finalizer.
A Manifest marked unmanaged (the Kyma gives the module up) leaves the module installed and takes
only its marks off the module's objects (`UNMARKED`).
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from reconciler.core.runner import ComponentReconciler
from reconciler.errors import ApplyError, KubeApiError
from reconciler.kube import records
from reconciler.kube.cluster import Cluster
from reconciler.kube.readiness import WATCHED_KINDS, readiness
from reconciler.model.kube_object import Body, KubeObject
from reconciler.model.lifecycle import (
    FIELD_MANAGER,
    GROUP,
    KYMA_NAME,
    MANAGED_BY,
    MANIFEST_FINALIZER,
    UNMANAGED,
    UNMANAGED_ANNOTATION,
    CustomResourcePolicy,
    ManifestSpec,
    State,
    SyncedObject,
    kyma_of,
)
from reconciler.model.task import ChartRef, RawManifest, Stamp, Task, TaskType
from reconciler.observability.logging import get_logger, log_state_change
from reconciler.operator.catalog.sources import install_link
from reconciler.operator.clusters.control import MERGE_PATCH, ControlPlane
from reconciler.operator.clusters.drift import DriftWatch, Kind
from reconciler.operator.clusters.targets import (
    TargetClusters,
    TargetError,
    TargetMissing,
)
from reconciler.operator.controllers.remote_object import RemoteObjectController
from reconciler.operator.controllers.status import condition, last_operation
from reconciler.operator.metrics import OperatorMetrics
from reconciler.operator.settings import OperatorSettings
from reconciler.operator.settled import Covered
from reconciler.util.backoff import Backoff

MAX_NAMED = 5

# the lifecycle manager's marks on every object of a module (its default resource transforms)
MANAGED_BY_KYMA = "kyma"
PART_OF = "app.kubernetes.io/part-of"
APP_COMPONENT = "app.kubernetes.io/component"
OWNED_BY = f"deprecated-{GROUP}/owned-by"
DISCLAIMER = f"{GROUP}/managed-by-reconciler-disclaimer"
DISCLAIMER_TEXT = (
    "DO NOT EDIT - This resource is managed by Kyma.\n"
    "Any modifications are discarded and the resource is reverted to the original state."
)
UNMARKED = {"labels": (MANAGED_BY,), "annotations": (OWNED_BY, DISCLAIMER)}
"""Taken off a module's objects when it becomes unmanaged: the marks that claim an owner."""

OPERATOR_KINDS = frozenset(
    {
        "CustomResourceDefinition",
        "Namespace",
        "ServiceAccount",
        "Role",
        "ClusterRole",
        "RoleBinding",
        "ClusterRoleBinding",
        "Service",
        "Deployment",
    }
)
"""The module operator's own kinds: deleted last, after everything it may need to clean up."""

# the Manifest's conditions: type -> (reason, message while False, message once True)
CONDITIONS = {
    "Resources": (
        "ResourcesAvailable",
        "resources not parsed",
        "resources are parsed and ready for use",
    ),
    "Installation": (
        "Ready",
        "installation is not ready",
        "installation is ready and resources can be used",
    ),
    "ModuleCR": (
        "ModuleCRCreated",
        "module CR has not been created to SKR",
        "module CR was created",
    ),
}
READY_MESSAGE = "resources are ready"
BLOCKED_MESSAGE = "waiting for module crs deletion"


def _synced(body: Body) -> list[KubeObject]:
    """The objects `status.synced` names (references: kind, name, namespace)."""
    found = []
    for item in (body.get("status") or {}).get("synced") or []:
        entry = SyncedObject.model_validate(item)
        meta = {"name": entry.name, **({"namespace": entry.namespace} if entry.namespace else {})}
        api_version = f"{entry.group}/{entry.version}" if entry.group else entry.version
        found.append(KubeObject({"apiVersion": api_version, "kind": entry.kind, "metadata": meta}))
    return found


def label_value(text: str) -> str:
    """`text` as a label value: at most 63 characters, ending alphanumeric."""
    return text[:63].rstrip("-_.")


def _named(objects: list[KubeObject]) -> str:
    names = [
        f"{o.kind} {o.namespace}/{o.name}" if o.namespace else f"{o.kind} {o.name}" for o in objects
    ]
    more = f" (and {len(names) - MAX_NAMED} more)" if len(names) > MAX_NAMED else ""
    return ", ".join(names[:MAX_NAMED]) + more


class ManifestController(RemoteObjectController[ManifestSpec]):
    kind: ClassVar[str] = "Manifest"
    finalizer: ClassVar[str] = MANIFEST_FINALIZER
    spec_model = ManifestSpec

    def __init__(
        self,
        control: ControlPlane,
        targets: TargetClusters,
        core: ComponentReconciler,
        settings: OperatorSettings,
        drift: DriftWatch | None = None,
        metrics: OperatorMetrics | None = None,
    ) -> None:
        self.drift = drift
        self.metrics = metrics or OperatorMetrics()
        self.control = control
        self.targets = targets
        self.core = core
        self.settings = settings
        self.backoff = Backoff(settings.error_interval, settings.error_max_interval)
        self._watched: dict[tuple[str, str], tuple[Cluster, set[Kind]]] = {}
        """Per Manifest, its target cluster and the kinds its drift watches cover."""

    def covered(self, namespace: str, name: str) -> Covered:
        """Whether every change of the Manifest's objects since a moment would have been
        reported by the drift watch (never, without one)."""
        watched = self._watched.get((namespace, name))
        drift = self.drift
        if watched is None or drift is None:
            return lambda since: False
        cluster, kinds = watched
        return lambda since: drift.covers(cluster, kinds, since)

    def _forget(self, key: tuple[str, str]) -> None:
        self._watched.pop(key, None)

    def _kyma(self, body: Body, spec: ManifestSpec) -> str:
        return kyma_of(body)

    async def _failed(self, body: Body, state: State, exc: Exception) -> float:
        return await self._report(body, state, str(exc), error=True)

    async def _evict(self, body: Body) -> None:
        await self.targets.evict(body["metadata"]["namespace"], kyma_of(body))

    @staticmethod
    def _unmanaged(body: Body) -> bool:
        obj = KubeObject(body)
        return (
            obj.labels.get(UNMANAGED) == "true"
            or obj.annotations.get(UNMANAGED_ANNOTATION) == "true"
        )

    async def _target(self, body: Body, spec: ManifestSpec) -> Cluster:
        kyma = kyma_of(body)
        if spec.remote and not kyma:
            raise TargetError(f"a remote Manifest needs the label {KYMA_NAME}")
        return await self.targets.get(KubeObject(body).namespace, kyma, remote=spec.remote)

    def _task(self, body: Body, spec: ManifestSpec, task_type: TaskType) -> Task:
        url, raw = install_link(spec.install.name, spec.install.source)
        if not url:
            raise TargetError("spec.install.source has no `url`")
        manifest = KubeObject(body)
        return Task(
            component=manifest.name,
            namespace=self._namespace(body),
            version=spec.version or "0.0.0",
            source=RawManifest(str(url)) if raw else ChartRef(str(url)),
            type=task_type,
            wait=False,
            timeout=self.settings.timeout,
            stamp=Stamp(
                labels={
                    MANAGED_BY: MANAGED_BY_KYMA,
                    PART_OF: "Kyma",
                    APP_COMPONENT: label_value(manifest.name),
                },
                annotations={
                    OWNED_BY: f"{manifest.namespace}/{manifest.name}",
                    DISCLAIMER: DISCLAIMER_TEXT,
                },
            ),
        )

    async def _reconcile(self, body: Body, spec: ManifestSpec) -> float | None:
        if self._unmanaged(body):
            return None  # given up: its deletion (which leaves the module) follows
        cluster = await self._target(body, spec)
        task = self._task(body, spec, TaskType.RECONCILE)
        outcome = await self.core.run(task, cluster)
        if outcome.error:
            if outcome.transient:
                await self._evict(body)
            return await self._report(body, State.ERROR, outcome.error, error=True)
        done = {"Resources"}
        record = outcome.record or await records.read(cluster, task.component, task.namespace)
        entries = record.entries if record else []
        watched = [e.as_object() for e in entries if e.kind in WATCHED_KINDS]
        crds = [obj for obj in watched if obj.is_crd]
        waiting = await self._not_ready(cluster, crds)
        if not waiting:  # the default resource needs its CRD served
            if self._has_default(spec):
                await self._create_default(cluster, body, spec)
                done.add("ModuleCR")
            waiting = await self._not_ready(cluster, [o for o in watched if not o.is_crd])
        synced = [
            SyncedObject(
                group=e.as_object().group,
                version=e.as_object().version,
                kind=e.kind,
                namespace=e.namespace,
                name=e.name,
            ).dump()
            for e in entries
        ]
        if self.drift is not None:
            kinds = {(e.api_version, e.kind) for e in entries}
            self.drift.track(cluster, task.component, ("Manifest", *self._key(body)), kinds)
            self._watched[self._key(body)] = (cluster, kinds)
        if waiting:
            return await self._report(
                body, State.PROCESSING, f"waiting: {waiting}", synced=synced, done=done
            )
        done.add("Installation")
        state = State.WARNING if outcome.warnings else State.READY
        message = "; ".join(outcome.warnings[:MAX_NAMED]) if outcome.warnings else READY_MESSAGE
        return await self._report(body, state, message, synced=synced, done=done)

    @staticmethod
    def _key(body: Body) -> tuple[str, str]:
        obj = KubeObject(body)
        return obj.namespace, obj.name

    def _namespace(self, body: Body) -> str:
        return self.settings.module_namespace.replace("{kyma}", kyma_of(body))

    @staticmethod
    def _has_default(spec: ManifestSpec) -> bool:
        """The module has a default resource we create and delete (policy `CreateAndDelete`,
        the default)."""
        return bool(spec.resource) and spec.custom_resource_policy != CustomResourcePolicy.IGNORE

    def _default_resource(self, body: Body, spec: ManifestSpec) -> KubeObject:
        resource = KubeObject(dict(spec.resource or {}))
        resource.raw["metadata"] = {
            "namespace": self._namespace(body),
            **resource.metadata,
        }
        return resource

    async def _create_default(self, cluster: Cluster, body: Body, spec: ManifestSpec) -> None:
        """Create the default resource when it is missing, once: after the `ModuleCR` condition
        says it was created, it is the user's (edited, or even deleted, it stays so)."""
        if self._condition_true(body, "ModuleCR"):
            return
        default = self._default_resource(body, spec)
        if await cluster.get(default) is None:
            await cluster.create(default, field_manager=FIELD_MANAGER)

    @staticmethod
    def _condition_true(body: Body, kind: str) -> bool:
        conditions = (body.get("status") or {}).get("conditions") or []
        return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)

    async def _not_ready(self, cluster: Cluster, objects: list[KubeObject]) -> str:
        reasons = []
        for obj in objects:
            live = await cluster.get(obj)
            if live is None:
                reasons.append(f"{obj}: does not exist")
                continue
            state = readiness(live)
            if not state.ready:
                reasons.append(state.reason)
        return "; ".join(reasons[:MAX_NAMED])

    async def _delete(self, body: Body, spec: ManifestSpec) -> float | None:
        manifest = KubeObject(body)
        if MANIFEST_FINALIZER not in (manifest.metadata.get("finalizers") or []):
            return None
        try:
            cluster = await self._target(body, spec)
        except TargetMissing as exc:
            # the remote cluster is gone with its Secret: nothing left to clean up there,
            # and waiting would keep the Manifest (and its Kyma) forever
            get_logger(manifest=manifest.name, namespace=manifest.namespace).warning(
                "remote cleanup skipped", reason=str(exc)
            )
            await self._release(body)
            return None
        if self._unmanaged(body):
            await self._unmark(cluster, body)
            self._untrack(cluster, body)
            await self._release(body)
            return None
        waiting = await self._deletion_waits_for(cluster, body, spec)
        if waiting:
            return await self._report(body, State.DELETING, waiting, busy=True)
        self._untrack(cluster, body)
        outcome = await self.core.run(self._task(body, spec, TaskType.DELETE), cluster)
        if outcome.error:
            return await self._report(body, State.DELETING, outcome.error, error=True)
        await self._release(body)
        return None

    async def _deletion_waits_for(self, cluster: Cluster, body: Body, spec: ManifestSpec) -> str:
        """Steps 1 to 3 of the deletion (see the module's docstring): what the next step waits
        for, "" once only the core's part is left."""
        blocking = await self._module_crs(cluster, body, spec)
        if blocking:
            return f"{BLOCKED_MESSAGE}: {_named(blocking)}"
        if self._has_default(spec):
            default = self._default_resource(body, spec)
            if await cluster.delete(default):
                return f"waiting for the default module CR deletion: {_named([default])}"
        first = [obj for obj in _synced(body) if obj.kind not in OPERATOR_KINDS]
        deleted = await asyncio.gather(*(self._delete_quietly(cluster, obj) for obj in first))
        left = [obj for obj, existed in zip(first, deleted, strict=True) if existed]
        if left:
            return f"waiting for the module's resources to be deleted: {_named(left)}"
        return ""

    @staticmethod
    async def _delete_quietly(cluster: Cluster, obj: KubeObject) -> bool:
        """Delete; whether it still existed (a kind no longer served: gone)."""
        try:
            return await cluster.delete(obj)
        except ApplyError:
            return False

    async def _module_crs(
        self, cluster: Cluster, body: Body, spec: ManifestSpec
    ) -> list[KubeObject]:
        """The custom resources that block the deletion: every one of the default resource's
        group and kind in any namespace but the default resource itself (that one too with
        policy `Ignore`). None without a default resource, or once its kind is not served."""
        if not spec.resource:
            return []
        default = self._default_resource(body, spec)
        try:
            info = await cluster.info(default)
            found = await cluster.list(info)
        except ApplyError:
            return []  # not served (any more): none can exist
        except KubeApiError as exc:
            if exc.status != 404:
                raise
            return []  # its CRD went meanwhile
        if spec.custom_resource_policy == CustomResourcePolicy.IGNORE:
            return found
        return [
            obj
            for obj in found
            if not (
                obj.name == default.name
                and (not info.namespaced or obj.namespace == default.namespace)
            )
        ]

    async def _unmark(self, cluster: Cluster, body: Body) -> None:
        """Take the lifecycle manager's owner marks (`UNMARKED`) off the module's objects."""
        patch: dict[str, Any] = {
            "metadata": {part: dict.fromkeys(keys) for part, keys in UNMARKED.items()}
        }
        for obj in _synced(body):
            try:
                live = await cluster.get(obj)
                if live is None or not any(
                    key in (live.labels if part == "labels" else live.annotations)
                    for part, keys in UNMARKED.items()
                    for key in keys
                ):
                    continue
                path = (await cluster.info(obj)).path(obj.namespace or None, obj.name)
                await cluster.client.request("PATCH", path, body=patch, content_type=MERGE_PATCH)
            except ApplyError:
                continue  # its kind is not served any more: nothing to unmark

    def _untrack(self, cluster: Cluster, body: Body) -> None:
        if self.drift is not None:
            self.drift.forget(cluster, KubeObject(body).name)
        self._watched.pop(self._key(body), None)

    async def _release(self, body: Body) -> None:
        await self.control.set_finalizer(body, MANIFEST_FINALIZER, False)
        self.backoff.forget(self._key(body))

    async def _report(
        self,
        body: Body,
        state: State,
        message: str,
        *,
        synced: list[dict[str, Any]] | None = None,
        error: bool = False,
        busy: bool = False,
        done: set[str] | None = None,
    ) -> float:
        previous = body.get("status") or {}
        status: dict[str, Any] = {
            "state": str(state),
            "lastOperation": last_operation(previous, message),
        }
        kept = synced if synced is not None else previous.get("synced")
        if kept is not None:
            status["synced"] = kept
        spec = body.get("spec") or {}
        status["conditions"] = self._conditions(
            previous,
            done or set(),
            bool(spec.get("resource"))
            and spec.get("customResourcePolicy") != CustomResourcePolicy.IGNORE,
            KubeObject(body).metadata.get("generation"),
        )
        await self.control.set_status(body, status)
        meta = KubeObject(body)
        log = get_logger(manifest=meta.name, namespace=meta.namespace, kyma=kyma_of(body))
        log_state_change(log, "manifest", previous.get("state"), str(state), message)
        key = self._key(body)
        if error:
            reason, delay = "error", self.backoff.next(key)
        elif busy or state is State.PROCESSING or state is State.DELETING:
            reason, delay = "busy", self.settings.busy_interval
        elif state is State.WARNING:
            reason, delay = "warning", self.settings.warning_interval
        else:
            reason, delay = "success", self.settings.success_interval
        if not error:
            self.backoff.forget(key)
        self.metrics.requeues.labels("Manifest", reason).inc()
        return delay

    @staticmethod
    def _conditions(
        previous: Body, done: set[str], has_default: bool, generation: int | None
    ) -> list[dict[str, Any]]:
        """The lifecycle manager's three conditions: each False until its step first succeeds,
        True from then on (`ModuleCR` only for a module with a default resource); conditions
        of other types are kept."""
        have = {c.get("type"): c for c in previous.get("conditions") or []}
        result = []
        for kind, (reason, waiting, reached) in CONDITIONS.items():
            old = have.get(kind)
            if kind == "ModuleCR" and not has_default and old is None:
                continue
            true = kind in done or (old is not None and old.get("status") == "True")
            result.append(
                condition(
                    old,
                    kind,
                    true,
                    reason,
                    reached if true else waiting,
                    generation,
                )
            )
        return result + [c for kind, c in have.items() if kind not in CONDITIONS]
