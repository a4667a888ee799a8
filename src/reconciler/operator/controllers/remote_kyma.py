"""Remote Kyma sync: the Kyma `kyma-system/default` in each remote cluster, the control plane's
Kyma merged with it, and the module catalog and module configuration in between.

Per Kyma with a remote cluster (finalizer `operator.kyma-project.io/remote-sync`): install the
Kyma, ModuleTemplate and ModuleReleaseMeta CRDs there (labelled ours, unless they were there
already) and the `kyma-system` namespace with the lifecycle manager's labels, keep the remote
Kyma (created with the control plane's spec; then its `channel` and `modules` are the remote
users' truth, `remote_merge.py`; the lifecycle manager's labels from the control-plane Kyma),
mirror the aggregated status back as the lifecycle manager does, copy the catalog
(`remote_catalog.py`) and the module custom resources' specs into ModuleConfigs
(`module_configs.py`), and watch the remote side (`remote_watch.py`).
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
    CHANNEL,
    FIELD_MANAGER,
    GROUP,
    KYMA_FINALIZER,
    KYMA_NAME,
    MANAGED_BY,
    MANAGER,
    MODULE_NAME,
    SKIP_RECONCILIATION,
    SYNC,
    KymaKind,
    ModuleReleaseMetaKind,
    ModuleTemplateKind,
)
from reconciler.observability.logging import get_logger
from reconciler.operator.catalog.resolve import Choose
from reconciler.operator.clusters.control import ControlPlane
from reconciler.operator.clusters.crds import crd
from reconciler.operator.clusters.drift import Kind
from reconciler.operator.clusters.fleet import FleetIndex
from reconciler.operator.clusters.remote_watch import RemoteWatch
from reconciler.operator.clusters.targets import TargetClusters, TargetMissing, connection_lost
from reconciler.operator.controllers.module_configs import ModuleConfigs
from reconciler.operator.controllers.remote_catalog import (
    CATALOG_KINDS,
    REMOTE_NAMESPACE,
    remove_catalog,
    sync_catalog,
)
from reconciler.operator.controllers.remote_merge import (
    REMOTE_MODULES,
    REMOTE_SPEC,
    agreed,
    decide,
    spec_of,
    valid_entries,
)
from reconciler.operator.controllers.status import last_operation
from reconciler.operator.rollout.index import RolloutIndex
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
REMOTE_KINDS = (KymaKind, ModuleTemplateKind, ModuleReleaseMetaKind)
LM_MANAGER = "kyma"
"""The lifecycle manager's value of `managed-by` and `watched-by` on the remote Kyma and the
`kyma-system` namespace (what people and tools there select on)."""
WATCHED_BY = f"{GROUP}/watched-by"
ACCOUNT_LABELS = (
    "kyma-project.io/runtime-id",
    "kyma-project.io/global-account-id",
    "kyma-project.io/subaccount-id",
)
"""Copied from the control-plane Kyma to the remote Kyma when present."""
NAMESPACE_LABELS = {
    MANAGED_BY: LM_MANAGER,
    "istio-injection": "enabled",
    "namespaces.warden.kyma-project.io/validate": "enabled",
}
CONFLICT_RETRY = 0.05


class RemoteSync:
    def __init__(
        self,
        control: ControlPlane,
        targets: TargetClusters,
        settings: OperatorSettings,
        watch: RemoteWatch,
        fleet: FleetIndex | None = None,
        rollouts: RolloutIndex | None = None,
    ) -> None:
        self.control = control
        self.fleet = fleet
        self.rollouts = rollouts
        self.configs = ModuleConfigs(control)
        self.targets = targets
        self.settings = settings
        self.watch = watch
        self.backoff = Backoff(settings.error_interval, settings.error_max_interval)
        self._prepared: dict[tuple[str, str], Cluster] = {}
        self._removed: set[tuple[str, str]] = set()
        self.catalog_synced: dict[tuple[str, str], bool] = {}
        """Per Kyma, whether its last catalog copy succeeded (its `ModuleCatalog` condition)."""
        self.crds_synced: dict[tuple[str, str], bool] = {}
        """Per Kyma, whether our CRDs are installed on its cluster (its `CRDsSync` condition)."""
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
            try:
                await self._install_crds(cluster)
            except ReconcilerError:
                self.crds_synced[key] = False
                raise
            self._prepared[key] = cluster
        self.crds_synced[key] = True
        # module configuration first: module managers wait for it, nobody waits for the rest
        module_namespace = self.settings.module_namespace.replace("{kyma}", meta["name"])
        manifests = await self._manifests(kyma)
        kinds: set[Kind] = await self.configs.sync(cluster, kyma, manifests, module_namespace)
        remote = ControlPlane(cluster)
        mirror = await self._remote_kyma(remote, kyma)
        left_out = await self._replace_spec(remote, kyma, mirror)
        await self._mirror(remote, kyma, mirror, left_out)
        try:
            await sync_catalog(self.control, remote, kyma, self._choose(kyma, manifests))
        except ReconcilerError:
            self.catalog_synced[key] = False
            raise
        self.catalog_synced[key] = True
        kinds.add((API_VERSION, "Kyma"))
        self.watch.track(cluster, ("RemoteKyma", *key), kinds)
        self._watched[key] = (cluster, kinds)

    def _choose(self, kyma: Body, manifests: list[Body]) -> Choose | None:
        """The versions a rollout policy gives this Kyma now, for its cluster's catalog copy:
        on the channel a module runs on, the installed version until its wave is admitted; on
        any other channel, what a Kyma switching to it would get."""
        if self.rollouts is None:
            return None
        meta = kyma["metadata"]
        installed: dict[str, str] = {}
        runs_on: dict[str, str] = {}
        for manifest in manifests:
            labels = manifest["metadata"].get("labels") or {}
            module = str(labels.get(MODULE_NAME) or "")
            if module:
                installed[module] = str((manifest.get("spec") or {}).get("version") or "")
                runs_on[module] = str(labels.get(CHANNEL) or "")
        args = (meta["namespace"], meta["name"], meta.get("labels") or {})
        current = self.rollouts.for_kyma(*args, installed)
        elsewhere = self.rollouts.for_kyma(*args, {})

        def choose(module: str, channel: str, offered: str) -> str:
            if runs_on.get(module) in (channel, ""):
                return current(module, channel, offered)
            return elsewhere(module, channel, offered)

        return choose

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
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": REMOTE_NAMESPACE, "labels": NAMESPACE_LABELS},
            },
            field_manager=FIELD_MANAGER,
        )
        await wait_ready(cluster, live, timeout=60)
        cluster.mapper.invalidate()

    async def _remote_kyma(self, remote: ControlPlane, kyma: Body) -> Body:
        """The remote Kyma: created with the control plane's spec (as the lifecycle manager
        does); its labels and owner annotation kept; its spec left to `_replace_spec`."""
        meta = kyma["metadata"]
        owner = f"{meta['namespace']}/{meta['name']}"
        labels = {MANAGED_BY: LM_MANAGER, WATCHED_BY: LM_MANAGER, KYMA_NAME: meta["name"]}
        control_labels = meta.get("labels") or {}
        labels |= {k: control_labels[k] for k in ACCOUNT_LABELS if k in control_labels}
        have = await remote.get("Kyma", REMOTE_NAMESPACE, REMOTE_NAME)
        if have is not None:
            other = (have["metadata"].get("annotations") or {}).get(OWNER)
            if other and other != owner:
                raise ReconcilerError(
                    f"the remote Kyma {REMOTE_NAMESPACE}/{REMOTE_NAME} mirrors Kyma {other}, "
                    f"not {owner}: one remote cluster belongs to one Kyma"
                )
            have_labels = have["metadata"].get("labels") or {}
            if other == owner and all(have_labels.get(k) == v for k, v in labels.items()):
                return have
            patch = {"metadata": {"labels": labels, "annotations": {OWNER: owner}}}
            await remote.patch("Kyma", REMOTE_NAMESPACE, REMOTE_NAME, patch)
            return await remote.get("Kyma", REMOTE_NAMESPACE, REMOTE_NAME) or have
        spec = kyma.get("spec") or {}
        body = {
            "apiVersion": API_VERSION,
            "kind": "Kyma",
            "metadata": {
                "name": REMOTE_NAME,
                "namespace": REMOTE_NAMESPACE,
                "labels": labels,
                "annotations": {OWNER: owner},
            },
            "spec": {"channel": spec.get("channel"), "modules": spec.get("modules") or []},
        }
        return await remote.apply(body)

    async def _replace_spec(self, remote: ControlPlane, kyma: Body, mirror: Body) -> list[str]:
        """The remote spec as the truth (`remote_merge.py`); return why some remote entries
        were left out (for the remote side)."""
        remote_spec = mirror.get("spec") or {}
        problems = valid_entries(remote_spec.get("modules") or [])[1]
        if problems:
            get_logger(kyma=kyma["metadata"]["name"], part="remote-sync").warning(
                "remote modules left out", problems="; ".join(problems)[:2048]
            )
        last = agreed(kyma)
        where, spec = decide(spec_of(kyma.get("spec")), spec_of(remote_spec), last)
        if where in ("remote", "both"):
            mirror_meta = mirror["metadata"]
            patch = {
                "metadata": {"resourceVersion": mirror_meta["resourceVersion"]},
                "spec": spec,
            }  # guarded: a user's edit meanwhile is read (and wins) next time
            await remote.patch("Kyma", REMOTE_NAMESPACE, REMOTE_NAME, patch)
        if where or spec != last:
            await self._agree(kyma, spec, spec if where in ("control", "both") else None)
        return problems

    async def _agree(self, kyma: Body, agreed_spec: Body, spec: Body | None) -> None:
        """Record the agreed spec on the control-plane Kyma, with `spec` its new spec."""
        meta = kyma["metadata"]
        patch: dict[str, Any] = {
            "metadata": {
                "resourceVersion": meta["resourceVersion"],
                "annotations": {REMOTE_SPEC: json.dumps(agreed_spec), REMOTE_MODULES: None},
            },
        }
        if spec is not None:
            patch["spec"] = spec
        await self.control.patch("Kyma", meta["namespace"], meta["name"], patch)

    @staticmethod
    async def _mirror(remote: ControlPlane, kyma: Body, mirror: Body, left_out: list[str]) -> None:
        """The control plane's status on the remote Kyma, with a `RemoteModules` condition
        saying which of the remote user's entries were left out (and why)."""
        status = kyma.get("status") or {}
        wanted = {k: status[k] for k in MIRRORED if k in status}
        if "modules" in wanted:
            wanted["modules"] = [_remote_module(m) for m in wanted["modules"]]
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
        self.crds_synced.pop(key, None)
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
        await remove_catalog(remote, tuple(k for k in CATALOG_KINDS if served[k]))
        for obj in ours:
            await cluster.delete(obj)
        cluster.mapper.invalidate()


def _remote_module(entry: Body) -> Body:
    """A module's status as the remote side sees it (the lifecycle manager's status sync): its
    template in `kyma-system`, where the catalog copy is, and no reference to the control
    plane's Manifest."""
    out = {k: v for k, v in entry.items() if k != "manifest"}
    template = out.get("template")
    if isinstance(template, dict):
        meta = {**(template.get("metadata") or {}), "namespace": REMOTE_NAMESPACE}
        out["template"] = {**template, "metadata": meta}
    return out
