"""The Manifest controller: one module on one target cluster, installed by the component core.

Reconcile: target cluster (local or the Kyma's remote one) -> the core (render, apply, prune
what the previous version applied and this one does not, the no-op fast path when nothing
changed) -> the module's default custom resource when the policy is `CreateAndDelete` ->
readiness of its workloads -> `status.state` and `status.synced`.
Delete (finalizer `declarative.kyma-project.io/finalizer`): the default custom resource first,
then wait until no custom resource of the module's CRDs is left (the status names the ones that
block), then the module, then the finalizer. A Manifest marked unmanaged leaves the module.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from reconciler.core.runner import ComponentReconciler
from reconciler.errors import ReconcilerError
from reconciler.kube import records
from reconciler.kube.cluster import Cluster
from reconciler.kube.readiness import WATCHED_KINDS, readiness
from reconciler.model.kube_object import Body, KubeObject
from reconciler.model.lifecycle import (
    FIELD_MANAGER,
    KYMA_NAME,
    MANIFEST_FINALIZER,
    SKIP_RECONCILIATION,
    UNMANAGED,
    CustomResourcePolicy,
    ManifestSpec,
    State,
    SyncedObject,
    kyma_of,
)
from reconciler.model.task import ChartRef, RawManifest, Task, TaskType
from reconciler.observability.logging import get_logger, log_state_change
from reconciler.operator.catalog.sources import install_link
from reconciler.operator.clusters.control import ControlPlane
from reconciler.operator.clusters.drift import DriftWatch, Kind
from reconciler.operator.clusters.targets import (
    TargetClusters,
    TargetError,
    TargetMissing,
    connection_lost,
)
from reconciler.operator.controllers.status import invalid, last_operation
from reconciler.operator.metrics import OperatorMetrics
from reconciler.operator.settings import OperatorSettings
from reconciler.operator.settled import Covered
from reconciler.util.backoff import Backoff

MAX_NAMED = 5


class ManifestController:
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

    async def handle(self, namespace: str, name: str) -> float | None:
        body = await self.control.get("Manifest", namespace, name)
        if body is None:
            self.backoff.forget((namespace, name))
            self._watched.pop((namespace, name), None)
            return None
        meta = body["metadata"]
        if meta.get("labels", {}).get(SKIP_RECONCILIATION) == "true":
            return None
        log = get_logger(manifest=name, namespace=namespace, kyma=kyma_of(body) or None)
        try:
            spec = ManifestSpec.model_validate(body.get("spec") or {})
        except ValidationError as exc:
            return await self._report(body, State.ERROR, "invalid " + invalid(exc, "spec"))
        try:
            if meta.get("deletionTimestamp"):
                return await self._delete(body, spec)
            await self.control.set_finalizer(body, MANIFEST_FINALIZER, True)
            return await self._reconcile(body, spec)
        except ReconcilerError as exc:
            log.warning("manifest failed", error=str(exc))
            if connection_lost(exc):
                await self._evict(body)
            state = State.DELETING if meta.get("deletionTimestamp") else State.ERROR
            return await self._report(body, state, str(exc), error=True)

    async def _evict(self, body: Body) -> None:
        await self.targets.evict(body["metadata"]["namespace"], kyma_of(body))

    async def _target(self, body: Body, spec: ManifestSpec) -> Cluster:
        meta = body["metadata"]
        kyma = kyma_of(body)
        if spec.remote and not kyma:
            raise TargetError(f"a remote Manifest needs the label {KYMA_NAME}")
        return await self.targets.get(meta["namespace"], kyma, remote=spec.remote)

    def _task(self, body: Body, spec: ManifestSpec, task_type: TaskType) -> Task:
        url, raw = install_link(spec.install.name, spec.install.source)
        if not url:
            raise TargetError("spec.install.source has no `url`")
        return Task(
            component=body["metadata"]["name"],
            namespace=self._namespace(body),
            version=spec.version or "0.0.0",
            source=RawManifest(str(url)) if raw else ChartRef(str(url)),
            type=task_type,
            wait=False,
            timeout=self.settings.timeout,
        )

    async def _reconcile(self, body: Body, spec: ManifestSpec) -> float | None:
        cluster = await self._target(body, spec)
        task = self._task(body, spec, TaskType.RECONCILE)
        outcome = await self.core.run(task, cluster)
        if outcome.error:
            if outcome.transient:
                await self._evict(body)
            return await self._report(body, State.ERROR, outcome.error, error=True)
        record = outcome.record or await records.read(cluster, task.component, task.namespace)
        entries = record.entries if record else []
        watched = [e.as_object() for e in entries if e.kind in WATCHED_KINDS]
        crds = [obj for obj in watched if obj.is_crd]
        waiting = await self._not_ready(cluster, crds)
        if not waiting:  # the default resource needs its CRD served
            if spec.resource and spec.custom_resource_policy != CustomResourcePolicy.IGNORE:
                await cluster.apply(self._default_resource(body, spec), field_manager=FIELD_MANAGER)
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
            return await self._report(body, State.PROCESSING, f"waiting: {waiting}", synced=synced)
        state = State.WARNING if outcome.warnings else State.READY
        message = (
            "; ".join(outcome.warnings[:MAX_NAMED]) if outcome.warnings else "installation is ready"
        )
        return await self._report(body, state, message, synced=synced)

    @staticmethod
    def _key(body: Body) -> tuple[str, str]:
        return body["metadata"]["namespace"], body["metadata"]["name"]

    def _namespace(self, body: Body) -> str:
        kyma = kyma_of(body)
        return self.settings.module_namespace.replace("{kyma}", kyma)

    def _default_resource(self, body: Body, spec: ManifestSpec) -> dict[str, Any]:
        resource = dict(spec.resource or {})
        meta = dict(resource.get("metadata") or {})
        meta.setdefault("namespace", self._namespace(body))
        resource["metadata"] = meta
        return resource

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
        meta = body["metadata"]
        if MANIFEST_FINALIZER not in (meta.get("finalizers") or []):
            return None
        if meta.get("labels", {}).get(UNMANAGED) != "true":
            try:
                cluster = await self._target(body, spec)
            except TargetMissing as exc:
                # the remote cluster is gone with its Secret: nothing left to clean up there,
                # and waiting would keep the Manifest (and its Kyma) forever
                get_logger(manifest=meta["name"], namespace=meta["namespace"]).warning(
                    "remote cleanup skipped", reason=str(exc)
                )
                await self.control.set_finalizer(body, MANIFEST_FINALIZER, False)
                return None
            if spec.resource and spec.custom_resource_policy != CustomResourcePolicy.IGNORE:
                await cluster.delete(self._default_resource(body, spec))
            blocking = await self._custom_resources_left(cluster, body)
            if blocking:
                return await self._report(
                    body,
                    State.DELETING,
                    f"waiting for the module's custom resources to be deleted: {blocking}",
                    busy=True,
                )
            if self.drift is not None:
                self.drift.forget(cluster, meta["name"])
            self._watched.pop(self._key(body), None)
            outcome = await self.core.run(self._task(body, spec, TaskType.DELETE), cluster)
            if outcome.error:
                return await self._report(body, State.DELETING, outcome.error, error=True)
        await self.control.set_finalizer(body, MANIFEST_FINALIZER, False)
        self.backoff.forget((meta["namespace"], meta["name"]))
        return None

    async def _custom_resources_left(self, cluster: Cluster, body: Body) -> str:
        """The custom resources of the module's own CRDs that still exist (named, capped)."""
        left: list[str] = []
        for item in (body.get("status") or {}).get("synced") or []:
            if item.get("kind") != "CustomResourceDefinition":
                continue
            crd = await cluster.get(
                {
                    "apiVersion": "apiextensions.k8s.io/v1",
                    "kind": "CustomResourceDefinition",
                    "metadata": {"name": item["name"]},
                }
            )
            if crd is None:
                continue
            group = crd.raw["spec"]["group"]
            kind = crd.raw["spec"]["names"]["kind"]
            served = [v["name"] for v in crd.raw["spec"]["versions"] if v.get("served")]
            if not served:
                continue
            info = await cluster.mapper.resolve(f"{group}/{served[0]}", kind)
            for obj in await cluster.list(info):
                where = f"{obj.namespace}/{obj.name}" if obj.namespace else obj.name
                left.append(f"{kind} {where}")
        more = f" (and {len(left) - MAX_NAMED} more)" if len(left) > MAX_NAMED else ""
        return ", ".join(left[:MAX_NAMED]) + more

    async def _report(
        self,
        body: Body,
        state: State,
        message: str,
        *,
        synced: list[dict[str, Any]] | None = None,
        error: bool = False,
        busy: bool = False,
    ) -> float:
        previous = body.get("status") or {}
        status: dict[str, Any] = {
            "state": str(state),
            "lastOperation": last_operation(previous, message),
        }
        kept = synced if synced is not None else previous.get("synced")
        if kept is not None:
            status["synced"] = kept
        if previous.get("conditions"):
            status["conditions"] = previous["conditions"]
        await self.control.set_status(body, status)
        meta = body["metadata"]
        log = get_logger(manifest=meta["name"], namespace=meta["namespace"], kyma=kyma_of(body))
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
