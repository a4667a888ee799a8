"""Remote Kyma sync: the Kyma `kyma-system/default` in each remote cluster, the control plane's
Kyma merged with it, and the module catalog and module configuration in between.

Per Kyma with a remote cluster (finalizer `operator.kyma-project.io/remote-sync`): install the
Kyma and ModuleTemplate CRDs there (labelled ours, unless they were there already), keep the
remote Kyma (owner annotation, the control plane's channel; `spec.modules` belong to the
remote users), merge its modules into the control-plane Kyma (`remote_merge.py`), mirror the
aggregated status back, copy the catalog (`remote_catalog.py`) and the module custom resources'
specs into ModuleConfigs (`module_configs.py`), and watch the remote side (`remote_watch.py`).
Deleting the control-plane Kyma removes the remote Kyma, the copied catalog and our CRDs.
"""

from __future__ import annotations

import json
from typing import Any

from reconciler.errors import ReconcilerError
from reconciler.kube.cluster import Cluster
from reconciler.kube.wait import wait_ready
from reconciler.model.kube_object import Body
from reconciler.model.lifecycle import (
    API_VERSION,
    FIELD_MANAGER,
    GROUP,
    KYMA_FINALIZER,
    KYMA_NAME,
    MANAGED_BY,
    MANAGER,
    SKIP_RECONCILIATION,
    SYNC,
    KymaKind,
    ModuleTemplateKind,
)
from reconciler.observability.logging import get_logger
from reconciler.operator.clusters.control import ControlPlane
from reconciler.operator.clusters.crds import crd
from reconciler.operator.clusters.drift import Kind
from reconciler.operator.clusters.fleet import FleetIndex
from reconciler.operator.clusters.remote_watch import RemoteWatch
from reconciler.operator.clusters.targets import TargetClusters, TargetMissing, connection_lost
from reconciler.operator.controllers.module_configs import ModuleConfigs
from reconciler.operator.controllers.remote_catalog import (
    REMOTE_NAMESPACE,
    remove_catalog,
    sync_catalog,
)
from reconciler.operator.controllers.remote_merge import (
    REMOTE_MODULES,
    merge,
    remote_names,
    valid_entries,
)
from reconciler.operator.controllers.status import last_operation
from reconciler.operator.settings import OperatorSettings
from reconciler.operator.settled import Covered
from reconciler.util.backoff import Backoff

REMOTE_NAME = "default"
REMOTE_FINALIZER = f"{GROUP}/remote-sync"
OWNER = f"{GROUP}/owner"
"""Annotation on the remote Kyma: `<namespace>/<name>` of the control-plane Kyma it mirrors."""
LEFT_OUT_CONDITION = "RemoteModules"
"""Condition on the remote Kyma: which of its `spec.modules` entries were not taken, and why."""
MIRRORED = ("state", "modules", "activeChannel", "conditions", "lastOperation")
REMOTE_KINDS = (KymaKind, ModuleTemplateKind)
CONFLICT_RETRY = 0.05


class RemoteSync:
    def __init__(
        self,
        control: ControlPlane,
        targets: TargetClusters,
        settings: OperatorSettings,
        watch: RemoteWatch,
        fleet: FleetIndex | None = None,
    ) -> None:
        self.control = control
        self.fleet = fleet
        self.configs = ModuleConfigs(control)
        self.targets = targets
        self.settings = settings
        self.watch = watch
        self.backoff = Backoff(settings.error_interval, settings.error_max_interval)
        self._prepared: dict[tuple[str, str], Cluster] = {}
        self._removed: set[tuple[str, str]] = set()
        self.catalog_synced: dict[tuple[str, str], bool] = {}
        """Per Kyma, whether its last catalog copy succeeded (its `ModuleCatalog` condition)."""
        self._watched: dict[tuple[str, str], tuple[Cluster, set[Kind]]] = {}
        """Per Kyma, its remote cluster and the kinds the remote watch covers there."""

    async def handle(self, namespace: str, name: str) -> float | None:
        self._watched.pop((namespace, name), None)  # set again by a complete sync
        kyma = await self.control.get("Kyma", namespace, name)
        if kyma is None:
            self.backoff.forget((namespace, name))
            return None
        labels = kyma["metadata"].get("labels") or {}
        if labels.get(SKIP_RECONCILIATION) == "true":
            return None
        log = get_logger(kyma=name, namespace=namespace, part="remote-sync")
        try:
            if kyma["metadata"].get("deletionTimestamp") or labels.get(SYNC) == "false":
                return await self._remove(kyma)
            if KYMA_FINALIZER not in (kyma["metadata"].get("finalizers") or []):
                return None  # the Kyma controller's finalizer first (its event brings us back)
            try:
                cluster = await self.targets.get(namespace, name, remote=True)
            except TargetMissing:
                return None  # the Secret's event brings the Kyma back here
            await self.control.set_finalizer(kyma, REMOTE_FINALIZER, True)
            await self._sync(kyma, cluster)
        except ReconcilerError as exc:
            if getattr(exc, "status", 0) == 409:
                return CONFLICT_RETRY  # the Kyma moved between read and write: read it again
            log.warning("remote sync failed", error=str(exc))
            if connection_lost(exc):
                self._prepared.pop((namespace, name), None)
                await self.targets.evict(namespace, name)
            return self.backoff.next((namespace, name))
        self.backoff.forget((namespace, name))
        return self.settings.success_interval

    async def _sync(self, kyma: Body, cluster: Cluster) -> None:
        meta = kyma["metadata"]
        key = (meta["namespace"], meta["name"])
        if self._prepared.get(key) is not cluster:
            await self._install_crds(cluster)
            self._prepared[key] = cluster
        # module configuration first: module managers wait for it, nobody waits for the rest
        module_namespace = self.settings.module_namespace.replace("{kyma}", meta["name"])
        kinds: set[Kind] = await self.configs.sync(
            cluster, kyma, await self._manifests(kyma), module_namespace
        )
        remote = ControlPlane(cluster)
        mirror = await self._remote_kyma(remote, kyma)
        left_out = await self._merge(kyma, mirror)
        await self._mirror(remote, kyma, mirror, left_out)
        try:
            await sync_catalog(self.control, remote, kyma)
        except ReconcilerError:
            self.catalog_synced[key] = False
            raise
        self.catalog_synced[key] = True
        kinds.add((API_VERSION, "Kyma"))
        self.watch.track(cluster, ("RemoteKyma", *key), kinds)
        self._watched[key] = (cluster, kinds)

    def covered(self, namespace: str, name: str) -> Covered:
        """Whether every remote change since a moment would have been reported by the remote
        watch (never, before the first sync)."""
        watched = self._watched.get((namespace, name))
        if watched is None:
            return lambda since: False
        cluster, kinds = watched
        return lambda since: self.watch.covers(cluster, kinds, since)

    async def _manifests(self, kyma: Body) -> list[Body]:
        meta = kyma["metadata"]
        known = self.fleet.manifests(meta["namespace"], meta["name"]) if self.fleet else []
        if known:
            return known
        selector = f"{KYMA_NAME}={meta['name']}"
        return await self.control.list("Manifest", meta["namespace"], selector)

    async def _install_crds(self, cluster: Cluster) -> None:
        """Our CRDs, labelled ours; a CRD that was there without our label is someone else's
        and is left alone (and never deleted by us)."""
        live = []
        for kind in REMOTE_KINDS:
            body = crd(kind)
            have = await cluster.get(body)
            if have is not None and have.labels.get(MANAGED_BY) != MANAGER:
                continue
            body["metadata"]["labels"] = {MANAGED_BY: MANAGER}
            live.append(await cluster.apply(body, field_manager=FIELD_MANAGER))
        await cluster.apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": REMOTE_NAMESPACE}},
            field_manager=FIELD_MANAGER,
        )
        await wait_ready(cluster, live, timeout=60)
        cluster.mapper.invalidate()

    async def _remote_kyma(self, remote: ControlPlane, kyma: Body) -> Body:
        meta = kyma["metadata"]
        owner = f"{meta['namespace']}/{meta['name']}"
        channel = (kyma.get("spec") or {}).get("channel")
        have = await remote.get("Kyma", REMOTE_NAMESPACE, REMOTE_NAME)
        if have is not None:
            other = (have["metadata"].get("annotations") or {}).get(OWNER)
            if other and other != owner:
                raise ReconcilerError(
                    f"the remote Kyma {REMOTE_NAMESPACE}/{REMOTE_NAME} mirrors Kyma {other}, "
                    f"not {owner}: one remote cluster belongs to one Kyma"
                )
            if other == owner and (have.get("spec") or {}).get("channel") == channel:
                return have
        body = {
            "apiVersion": API_VERSION,
            "kind": "Kyma",
            "metadata": {
                "name": REMOTE_NAME,
                "namespace": REMOTE_NAMESPACE,
                "labels": {MANAGED_BY: MANAGER, KYMA_NAME: meta["name"]},
                "annotations": {OWNER: owner},
            },
            "spec": {"channel": channel},
        }
        return await remote.apply(body)

    async def _merge(self, kyma: Body, mirror: Body) -> list[str]:
        """Merge the remote entries in; return why some were left out (for the remote side)."""
        entries, problems = valid_entries((mirror.get("spec") or {}).get("modules") or [])
        if problems:
            get_logger(kyma=kyma["metadata"]["name"], part="remote-sync").warning(
                "remote modules left out", problems="; ".join(problems)[:2048]
            )
        current = (kyma.get("spec") or {}).get("modules") or []
        added = remote_names(kyma)
        modules, names = merge(current, added, entries)
        if modules == current and names == added:
            return problems
        meta = kyma["metadata"]
        patch: dict[str, Any] = {
            "metadata": {
                "resourceVersion": meta["resourceVersion"],
                "annotations": {REMOTE_MODULES: json.dumps(names) if names else None},
            },
            "spec": {"modules": modules},
        }
        await self.control.patch("Kyma", meta["namespace"], meta["name"], patch)
        return problems

    @staticmethod
    async def _mirror(remote: ControlPlane, kyma: Body, mirror: Body, left_out: list[str]) -> None:
        """The control plane's status on the remote Kyma, with a `RemoteModules` condition
        saying which of the remote user's entries were left out (and why)."""
        status = kyma.get("status") or {}
        wanted = {k: status[k] for k in MIRRORED if k in status}
        conditions = [
            c for c in wanted.get("conditions") or [] if c.get("type") != LEFT_OUT_CONDITION
        ]
        if left_out:
            message = "; ".join(left_out[:20])
            if len(left_out) > 20:
                message += f"; and {len(left_out) - 20} more"
            old = next(
                (
                    c
                    for c in (mirror.get("status") or {}).get("conditions") or []
                    if c.get("type") == LEFT_OUT_CONDITION and c.get("message") == message
                ),
                None,
            )  # the same stamp for the same news: no status write (and watch event) per sync
            stamp = (old or {}).get("lastTransitionTime")
            stamp = stamp or last_operation({}, "")["lastUpdateTime"]
            conditions.append(
                {
                    "type": LEFT_OUT_CONDITION,
                    "status": "False",
                    "reason": "EntriesLeftOut",
                    "message": message,
                    "lastTransitionTime": stamp,
                }
            )
        if conditions or "conditions" in wanted:
            wanted["conditions"] = conditions
        if wanted:
            await remote.set_status(mirror, wanted)

    async def _remove(self, kyma: Body) -> float | None:
        """The remote Kyma, the copied catalog, our CRDs there, the ModuleConfigs, the watches;
        then the finalizer, after the Kyma controller's (both are guarded by the
        resourceVersion: one at a time, so neither controller sees a conflict). No Secret (the
        cluster is gone): nothing left to remove there."""
        meta = kyma["metadata"]
        finalizers = meta.get("finalizers") or []
        if REMOTE_FINALIZER not in finalizers:
            return None
        key = (meta["namespace"], meta["name"])
        self._prepared.pop(key, None)
        self.catalog_synced.pop(key, None)
        if key not in self._removed:
            await self._remove_all(kyma)
            self._removed.add(key)
        if meta.get("deletionTimestamp") and KYMA_FINALIZER in finalizers:
            return self.settings.busy_interval
        await self.control.set_finalizer(kyma, REMOTE_FINALIZER, False)
        self._removed.discard(key)
        self.backoff.forget(key)
        return None

    async def _remove_all(self, kyma: Body) -> None:
        meta = kyma["metadata"]
        key = (meta["namespace"], meta["name"])
        try:
            cluster: Cluster | None = await self.targets.get(*key, remote=True)
        except TargetMissing:
            cluster = None
        if cluster is not None:
            await self.watch.forget(cluster, ("RemoteKyma", *key))
            await self._remove_remote(cluster, f"{key[0]}/{key[1]}")
        await self.configs.remove(meta["namespace"], meta["name"])

    @staticmethod
    async def _remove_remote(cluster: Cluster, owner: str) -> None:
        remote = ControlPlane(cluster)
        served: dict[str, bool] = {}
        ours = []
        for kind in REMOTE_KINDS:
            have = await cluster.get(crd(kind))
            served[kind.kind] = have is not None
            if have is not None and have.labels.get(MANAGED_BY) == MANAGER:
                ours.append(have)
        if served["Kyma"]:
            mirror = await remote.get("Kyma", REMOTE_NAMESPACE, REMOTE_NAME)
            annotations = (mirror or {}).get("metadata", {}).get("annotations") or {}
            if mirror is not None and annotations.get(OWNER) == owner:
                await remote.delete("Kyma", REMOTE_NAMESPACE, REMOTE_NAME)
        if served["ModuleTemplate"]:
            await remove_catalog(remote)
        for obj in ours:
            await cluster.delete(obj)
        cluster.mapper.invalidate()
