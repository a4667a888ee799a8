"""What a SyncResource may put into a remote cluster, checked before anything is applied.

Module managers are other teams' code: a SyncResource is refused as a whole (nothing applied,
the status names every problem found) when it holds too many or too large objects, an object
without apiVersion/kind/name, the same object twice, a Kubernetes kind outside `ALLOWED_KINDS`
(cluster-wide or privilege-granting kinds are not there), one of the operator's own kinds, or a
namespace of Kubernetes itself. Whether a custom kind is cluster-scoped is only known from the
remote cluster's discovery: the controller refuses those too.
"""

from __future__ import annotations

import json
import re
from typing import Any

from reconciler.model.kube_object import KubeObject
from reconciler.model.lifecycle import GROUP

MAX_OBJECTS = 100
MAX_OBJECT_BYTES = 128 * 1024
MAX_TOTAL_BYTES = 512 * 1024
SYSTEM_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease"})
ALLOWED_KINDS = frozenset(
    {
        ("", "ConfigMap"),
        ("", "Secret"),
        ("", "Service"),
        ("", "ServiceAccount"),
        ("apps", "Deployment"),
        ("apps", "StatefulSet"),
        ("apps", "DaemonSet"),
        ("batch", "Job"),
        ("batch", "CronJob"),
        ("networking.k8s.io", "NetworkPolicy"),
        ("networking.k8s.io", "Ingress"),
        ("policy", "PodDisruptionBudget"),
        ("autoscaling", "HorizontalPodAutoscaler"),
    }
)
"""Kubernetes' own kinds a SyncResource may hold; custom resources (other groups) may be any."""
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


class SyncContentError(ValueError):
    """A SyncResource's objects break the rules; the message lists every problem."""


def _builtin(group: str) -> bool:
    return group == "" or "." not in group or group.endswith(".k8s.io")


def _problems(index: int, raw: Any) -> list[str]:
    where = f"spec.objects[{index}]"
    if not isinstance(raw, dict):
        return [f"{where}: not an object"]
    meta = raw.get("metadata")
    if not isinstance(raw.get("apiVersion"), str) or not raw["apiVersion"]:
        return [f"{where}: apiVersion is missing"]
    if not isinstance(raw.get("kind"), str) or not raw["kind"]:
        return [f"{where}: kind is missing"]
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        return [f"{where}: metadata.name is missing"]
    problems = []
    obj = KubeObject(raw)
    label = f"{where} ({obj.kind} {meta['name']})"
    if not _NAME.match(meta["name"]):
        problems.append(f"{label}: metadata.name is not a valid Kubernetes name")
    if obj.group == GROUP:
        problems.append(f"{label}: the operator's own kinds cannot be synced")
    elif _builtin(obj.group) and (obj.group, obj.kind) not in ALLOWED_KINDS:
        allowed = ", ".join(sorted(kind for _, kind in ALLOWED_KINDS))
        problems.append(f"{label}: kind {obj.kind} is not allowed (allowed: {allowed})")
    namespace = meta.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        problems.append(f"{label}: metadata.namespace is not a string")
    elif namespace in SYSTEM_NAMESPACES:
        problems.append(f"{label}: namespace {namespace} is Kubernetes' own")
    size = len(json.dumps(raw))
    if size > MAX_OBJECT_BYTES:
        problems.append(f"{label}: {size} bytes, more than {MAX_OBJECT_BYTES}")
    return problems


def check_objects(objects: list[Any], default_namespace: str) -> list[KubeObject]:
    """The objects as KubeObjects (namespace defaulted), or `SyncContentError`."""
    problems: list[str] = []
    if len(objects) > MAX_OBJECTS:
        problems.append(f"spec.objects: {len(objects)} objects, more than {MAX_OBJECTS}")
    total = len(json.dumps(objects))
    if total > MAX_TOTAL_BYTES:
        problems.append(f"spec.objects: {total} bytes in all, more than {MAX_TOTAL_BYTES}")
    checked: list[KubeObject] = []
    seen: set[tuple[str, str, str, str]] = set()
    for index, raw in enumerate(objects):
        found = _problems(index, raw)
        problems += found
        if found:
            continue
        body = dict(raw)
        body.pop("status", None)
        body["metadata"] = dict(raw["metadata"])
        body["metadata"].setdefault("namespace", default_namespace)
        obj = KubeObject(body)
        key = (obj.group, obj.kind, obj.namespace, obj.name)
        if key in seen:
            problems.append(f"spec.objects[{index}]: {obj} is listed twice")
        seen.add(key)
        checked.append(obj)
    if problems:
        raise SyncContentError("; ".join(problems))
    return checked
