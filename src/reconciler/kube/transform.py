"""Make rendered manifests safe and ours before they are applied.

Sets the reconciler's labels, fixes the namespace according to the kind's scope, fills in the
port protocol the API defaults (Kubernetes 1.20 rejects an apply whose list element omits a key
field), drops `null` values (they mean "remove" to server-side apply) and does not claim fields
another controller owns by design (`rules` of aggregated ClusterRoles). Each change that alters
what the chart said is reported as a warning.
"""

from __future__ import annotations

import base64
import copy
from typing import Any

from reconciler.model.kube_object import KubeObject

MANAGED_BY = "reconciler.kyma-project.io/managed-by"
ORIGIN_VERSION = "reconciler.kyma-project.io/origin-version"
COMPONENT = "reconciler.kyma-project.io/component"
IGNORE_READINESS = "reconciler.kyma-project.io/ignore-readiness"
MANAGER = "reconciler"
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def _drop_nulls(node: Any, path: str, warnings: list[str]) -> Any:
    if isinstance(node, dict):
        result = {}
        for key, value in node.items():
            if value is None:
                warnings.append(f"dropped null value at {path}.{key}")
                continue
            result[key] = _drop_nulls(value, f"{path}.{key}", warnings)
        return result
    if isinstance(node, list):
        kept = [item for item in node if item is not None]
        if len(kept) != len(node):
            warnings.append(f"dropped null list items at {path}")
        return [_drop_nulls(item, f"{path}[{i}]", warnings) for i, item in enumerate(kept)]
    return node


def _default_protocols(node: Any, in_service_spec: bool = False) -> None:
    """Set `protocol: TCP` on container ports and Service ports that omit it."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _CONTAINER_LISTS and isinstance(value, list):
                for container in value:
                    for port in (
                        (container.get("ports") or []) if isinstance(container, dict) else []
                    ):
                        if isinstance(port, dict):
                            port.setdefault("protocol", "TCP")
            elif key == "ports" and in_service_spec and isinstance(value, list):
                for port in value:
                    if isinstance(port, dict):
                        port.setdefault("protocol", "TCP")
            else:
                _default_protocols(value)
    elif isinstance(node, list):
        for item in node:
            _default_protocols(item)


def prepare(
    obj: KubeObject, *, namespace: str, namespaced: bool, version: str, component: str
) -> tuple[KubeObject, list[str]]:
    """Return the object to apply (a copy) and warnings about what was changed and why."""
    warnings: list[str] = []
    raw = _drop_nulls(copy.deepcopy(obj.raw), obj.kind, warnings)
    prepared = KubeObject(raw)
    meta = prepared.metadata
    if namespaced:
        meta.setdefault("namespace", namespace)
    elif "namespace" in meta:
        del meta["namespace"]
    labels = meta.setdefault("labels", {})
    labels[MANAGED_BY] = MANAGER
    labels[ORIGIN_VERSION] = version
    labels[COMPONENT] = component
    for transient in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
        meta.pop(transient, None)
    raw.pop("status", None)
    if prepared.kind == "Secret" and prepared.group == "" and raw.get("stringData"):
        # the apiserver stores stringData as data and drops it: applying stringData would
        # rewrite the Secret on every reconciliation
        encoded = {
            key: base64.b64encode(str(value).encode()).decode()
            for key, value in raw.pop("stringData").items()
        }
        raw["data"] = {**(raw.get("data") or {}), **encoded}
    if prepared.kind == "Service":
        _default_protocols(raw.get("spec", {}), in_service_spec=True)
    _default_protocols(raw.get("spec", {}))
    if (
        prepared.kind == "ClusterRole"
        and prepared.group == "rbac.authorization.k8s.io"
        and raw.get("aggregationRule")
        and "rules" in raw
    ):
        del raw["rules"]
        warnings.append(
            f"{prepared}: not applying 'rules' of an aggregated ClusterRole "
            "(the controller-manager owns them)"
        )
    return prepared, [f"{obj}: {w}" if not w.startswith(str(obj)) else w for w in warnings]
