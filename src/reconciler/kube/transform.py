"""Make rendered manifests safe and ours before they are applied.

Sets the reconciler's labels, fixes the namespace according to the kind's scope, fills in the
port protocol the API defaults (Kubernetes 1.20 rejects an apply whose list element omits a key
field) and the defaults inside lists applied as a whole (webhook rule `scope`), drops `null`
values (they mean "remove" to server-side apply) and does not claim fields another controller
owns by design (`rules` of aggregated ClusterRoles). Duplicate entries in lists server-side
apply keys by field (`env` by name, ports, volumes, volumeMounts) make it refuse the whole
object; the last entry is kept, as the container runtime and kubectl's client-side apply do.
Each change that alters what the chart said is reported as a warning.
"""

from __future__ import annotations

import base64
import copy
from typing import Any

from reconciler.model.kube_object import KubeObject
from reconciler.model.task import Stamp

MANAGED_BY = "reconciler.kyma-project.io/managed-by"
ORIGIN_VERSION = "reconciler.kyma-project.io/origin-version"
COMPONENT = "reconciler.kyma-project.io/component"
IGNORE_READINESS = "reconciler.kyma-project.io/ignore-readiness"
MANAGER = "reconciler"
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
# x-kubernetes-list-map-keys of the built-in types: server-side apply refuses duplicate keys
_CONTAINER_KEYED: dict[str, tuple[str, ...]] = {
    "env": ("name",),
    "ports": ("containerPort", "protocol"),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
}
_POD_KEYED: dict[str, tuple[str, ...]] = {"volumes": ("name",)}
_SERVICE_KEYED: dict[str, tuple[str, ...]] = {"ports": ("port", "protocol")}


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


def _keep_last(node: dict[str, Any], keyed: dict[str, tuple[str, ...]], path: str) -> list[str]:
    """Drop all but the last entry per key in `node`'s keyed lists; say what was dropped."""
    warnings = []
    for field, keys in keyed.items():
        items = node.get(field)
        if not isinstance(items, list):
            continue
        last = {
            tuple(item.get(k) for k in keys): index
            for index, item in enumerate(items)
            if isinstance(item, dict)
        }
        keep = [
            not isinstance(item, dict) or last[tuple(item.get(k) for k in keys)] == index
            for index, item in enumerate(items)
        ]
        if not all(keep):
            dropped = sorted(
                {_describe(keys, i) for i, k in zip(items, keep, strict=True) if not k}
            )
            node[field] = [item for item, k in zip(items, keep, strict=True) if k]
            warnings.append(
                f"kept the last of duplicate entries in {path}.{field}: {', '.join(dropped)}"
            )
    return warnings


def _describe(keys: tuple[str, ...], item: Any) -> str:
    return ",".join(f"{k}={item.get(k)}" for k in keys if item.get(k) is not None)


def _dedupe_pod_specs(node: Any, path: str) -> list[str]:
    """Keep the last duplicate in the keyed lists of every pod spec (any dict with containers)."""
    warnings: list[str] = []
    if isinstance(node, dict):
        if isinstance(node.get("containers"), list):
            warnings += _keep_last(node, _POD_KEYED, path)
            for list_name in _CONTAINER_LISTS:
                for container in node.get(list_name) or []:
                    if isinstance(container, dict):
                        where = f"{path}.{list_name}[{container.get('name')}]"
                        warnings += _keep_last(container, _CONTAINER_KEYED, where)
        for key, value in node.items():
            warnings += _dedupe_pod_specs(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            warnings += _dedupe_pod_specs(item, f"{path}[{index}]")
    return warnings


def _default_in_atomic_lists(group: str, kind: str, raw: dict[str, Any]) -> None:
    """Fill in what the apiserver defaults inside lists server-side apply replaces as a whole
    (webhook `rules[].scope`, NetworkPolicy ports' `protocol`): left out, the applied list
    differs from the stored, defaulted one and every apply rewrites the object."""
    if group == "admissionregistration.k8s.io" and kind.endswith("WebhookConfiguration"):
        for webhook in _dicts(raw.get("webhooks")):
            for rule in _dicts(webhook.get("rules")):
                rule.setdefault("scope", "*")
    elif group == "networking.k8s.io" and kind == "NetworkPolicy":
        spec: dict[str, Any] = raw["spec"] if isinstance(raw.get("spec"), dict) else {}
        for direction in ("ingress", "egress"):
            for rule in _dicts(spec.get(direction)):
                for port in _dicts(rule.get("ports")):
                    port.setdefault("protocol", "TCP")


def _dicts(items: Any) -> list[dict[str, Any]]:
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def prepare(
    obj: KubeObject,
    *,
    namespace: str,
    namespaced: bool,
    version: str,
    component: str,
    stamp: Stamp | None = None,
) -> tuple[KubeObject, list[str]]:
    """Return the object to apply (a copy) and warnings about what was changed and why;
    `stamp`'s labels and annotations are added (over the object's own)."""
    warnings: list[str] = []
    raw = _drop_nulls(copy.deepcopy(obj.raw), obj.kind, warnings)
    prepared = KubeObject(raw)
    meta = prepared.metadata
    if namespaced:
        if not meta.get("namespace"):  # absent or "": Helm's resource builder fills it in too
            meta["namespace"] = namespace
    elif "namespace" in meta:
        del meta["namespace"]
    labels = meta.setdefault("labels", {})
    if stamp:
        labels.update(stamp.labels)
        if stamp.annotations:
            meta["annotations"] = {**(meta.get("annotations") or {}), **stamp.annotations}
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
    _default_in_atomic_lists(prepared.group, prepared.kind, raw)
    warnings += _dedupe_pod_specs(raw.get("spec", {}), "spec")
    if prepared.kind == "Service" and prepared.group == "" and isinstance(raw.get("spec"), dict):
        warnings += _keep_last(raw["spec"], _SERVICE_KEYED, "spec")
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
