"""Each remote module custom resource's spec, copied into a ModuleConfig in the control plane.

The module custom resource of a Kyma's module is the one its Manifest names (`spec.resource`,
in the module namespace unless it names one). Its `spec` goes into the ModuleConfig
`<kyma>-<module>` (owner: the Kyma; labels `kyma-name`, `module-name`, `managed-by`), written by
server-side apply with the field manager `MODULE_CONFIG_MANAGER`, forced: the operator is the
only writer of its spec, and a spec changed by anyone else is overwritten at once (every
ModuleConfig event updates what the operator knows of it and requeues the Kyma's sync, which
compares). A ModuleConfig whose remote object is gone is deleted.
"""

from __future__ import annotations

from typing import Any

from reconciler.errors import ApplyError
from reconciler.kube.cluster import Cluster
from reconciler.model.kube_object import Body
from reconciler.model.lifecycle import (
    API_VERSION,
    GROUP,
    KYMA_NAME,
    MANAGED_BY,
    MANAGER,
    MODULE_NAME,
    module_object_name,
)
from reconciler.operator.clusters.control import ControlPlane
from reconciler.operator.clusters.drift import Kind

MODULE_CONFIG_MANAGER = f"{GROUP}/module-config"


def _config(kyma: Body, module: str, live: Body) -> Body:
    meta = kyma["metadata"]
    source = live["metadata"]
    spec: dict[str, Any] = {
        "kyma": meta["name"],
        "module": module,
        "resource": {
            "apiVersion": live["apiVersion"],
            "kind": live["kind"],
            "metadata": {k: source[k] for k in ("name", "namespace") if source.get(k)},
        },
        "config": live.get("spec") or {},
    }
    if source.get("generation") is not None:
        spec["sourceGeneration"] = source["generation"]
    return {
        "apiVersion": API_VERSION,
        "kind": "ModuleConfig",
        "metadata": {
            "name": module_object_name(meta["name"], module),  # old names: replaced below
            "namespace": meta["namespace"],
            "labels": {KYMA_NAME: meta["name"], MODULE_NAME: module, MANAGED_BY: MANAGER},
            "ownerReferences": [
                {
                    "apiVersion": API_VERSION,
                    "kind": "Kyma",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "blockOwnerDeletion": False,
                }
            ],
        },
        "spec": spec,
    }


class ModuleConfigs:
    """Writes the ModuleConfigs; knows what each holds from the watch (`observe`, fed by the
    operator's kopf events, the initial listing included), so a sync reads no ModuleConfig
    from the apiserver: a LIST per sync would scan the namespace's every ModuleConfig."""

    def __init__(self, control: ControlPlane) -> None:
        self.control = control
        self._specs: dict[tuple[str, str], dict[str, Any]] = {}
        """(namespace, name) -> the spec as last watched or written."""

    def observe(self, body: Body, *, deleted: bool = False) -> None:
        meta = body["metadata"]
        key = (str(meta["namespace"]), str(meta["name"]))
        if deleted:
            self._specs.pop(key, None)
        else:
            self._specs[key] = body.get("spec") or {}

    def _of(self, namespace: str, kyma: str) -> dict[str, dict[str, Any]]:
        return {
            name: spec
            for (ns, name), spec in self._specs.items()
            if ns == namespace and spec.get("kyma") == kyma
        }

    async def sync(
        self, cluster: Cluster, kyma: Body, manifests: list[Body], module_namespace: str
    ) -> set[Kind]:
        """Bring the Kyma's ModuleConfigs in line with its remote module custom resources;
        return the kinds of those resources (what to watch on the remote cluster)."""
        meta = kyma["metadata"]
        namespace = str(meta["namespace"])
        kinds: set[Kind] = set()
        wanted: dict[str, Body] = {}
        for manifest in manifests:
            resource = (manifest.get("spec") or {}).get("resource") or {}
            module = (manifest["metadata"].get("labels") or {}).get(MODULE_NAME)
            if not module or not resource.get("kind") or not resource.get("apiVersion"):
                continue
            res_meta = resource.get("metadata") or {}
            reference = {
                "apiVersion": resource["apiVersion"],
                "kind": resource["kind"],
                "metadata": {
                    "name": res_meta.get("name", ""),
                    "namespace": res_meta.get("namespace") or module_namespace,
                },
            }
            try:
                live = await cluster.get(reference)
            except ApplyError:  # its CRD is not served (yet): watched once it is
                continue
            kinds.add((str(resource["apiVersion"]), str(resource["kind"])))
            if live is not None:
                body = _config(kyma, module, live.raw)
                wanted[body["metadata"]["name"]] = body
        existing = self._of(namespace, str(meta["name"]))
        for name, body in wanted.items():
            if existing.get(name) != body["spec"]:
                await self.control.cluster.apply(body, field_manager=MODULE_CONFIG_MANAGER)
                self.observe(body)
        for name in existing.keys() - wanted.keys():
            await self.control.delete("ModuleConfig", namespace, name)
            self._specs.pop((namespace, name), None)
        return kinds

    async def remove(self, namespace: str, kyma: str) -> None:
        """Every ModuleConfig of the Kyma (it is being deleted or no longer synced)."""
        selector = f"{KYMA_NAME}={kyma}"
        for config in await self.control.list("ModuleConfig", namespace, selector):
            await self.control.delete("ModuleConfig", namespace, config["metadata"]["name"])
            self._specs.pop((namespace, config["metadata"]["name"]), None)
