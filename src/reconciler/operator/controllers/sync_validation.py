"""What a SyncResource may put into a remote cluster, checked before anything is applied.

Module managers are other teams' code: a SyncResource is refused as a whole (nothing applied,
the status names every problem found) when it holds too many or too large objects, an object
without apiVersion/kind/name, the same object twice, a Kubernetes kind outside `ALLOWED_KINDS`
(cluster-wide or privilege-granting kinds are not there: no Role, ClusterRole or binding), one
of the operator's own kinds, or a namespace of Kubernetes itself. Nothing that grants
permissions: the pod template of every workload kind (Pod, Deployment, StatefulSet, DaemonSet,
ReplicaSet, Job, CronJob) may not ask for privileged containers, privilege escalation, added
capabilities, the host's network/PID/IPC namespaces, hostPath volumes or host ports, nor run as a
ServiceAccount other than `default` or one the same SyncResource creates; a Secret may not be of
type `kubernetes.io/service-account-token`. Each refusal names the object and the rule. Whether
a custom kind is cluster-scoped is only known from the remote cluster's discovery: the
controller refuses those too.
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
WORKLOADS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "Pod"): ("spec",),
    ("apps", "Deployment"): ("spec", "template", "spec"),
    ("apps", "StatefulSet"): ("spec", "template", "spec"),
    ("apps", "DaemonSet"): ("spec", "template", "spec"),
    ("apps", "ReplicaSet"): ("spec", "template", "spec"),
    ("batch", "Job"): ("spec", "template", "spec"),
    ("batch", "CronJob"): ("spec", "jobTemplate", "spec", "template", "spec"),
}
"""Where each workload kind keeps its pod spec."""
TOKEN_SECRET = "kubernetes.io/service-account-token"
_HOST_NAMESPACES = ("hostNetwork", "hostPID", "hostIPC")
_CONTAINERS = ("initContainers", "containers", "ephemeralContainers")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


class SyncContentError(ValueError):
    """A SyncResource's objects break the rules; the message lists every problem."""


def _builtin(group: str) -> bool:
    return group == "" or "." not in group or group.endswith(".k8s.io")


def _dict(node: Any) -> dict[str, Any]:
    return node if isinstance(node, dict) else {}


def _list(node: Any) -> list[dict[str, Any]]:
    return [item for item in node if isinstance(item, dict)] if isinstance(node, list) else []


def _pod_spec(obj: KubeObject) -> dict[str, Any] | None:
    path = WORKLOADS.get((obj.group, obj.kind))
    if path is None:
        return None
    node: Any = obj.raw
    for step in path:
        node = _dict(node).get(step)
    return _dict(node)


def _container_problems(where: str, container: dict[str, Any]) -> list[str]:
    name = f"{where} container {container.get('name')}"
    security = _dict(container.get("securityContext"))
    problems = []
    if security.get("privileged") is True:
        problems.append(f"{name}: privileged containers are not allowed")
    if security.get("allowPrivilegeEscalation") is True:
        problems.append(f"{name}: allowPrivilegeEscalation is not allowed")
    if _dict(security.get("capabilities")).get("add"):
        problems.append(f"{name}: added capabilities are not allowed")
    if any(port.get("hostPort") for port in _list(container.get("ports"))):
        problems.append(f"{name}: host ports are not allowed")
    return problems


def _pod_problems(label: str, spec: dict[str, Any], accounts: set[str]) -> list[str]:
    problems = [f"{label}: {field} is not allowed" for field in _HOST_NAMESPACES if spec.get(field)]
    for volume in _list(spec.get("volumes")):
        if "hostPath" in volume:
            problems.append(f"{label}: hostPath volume {volume.get('name')} is not allowed")
    for field in _CONTAINERS:
        for container in _list(spec.get(field)):
            problems += _container_problems(label, container)
    for field in ("serviceAccountName", "serviceAccount"):
        account = spec.get(field)
        if account not in (None, "", "default") and account not in accounts:
            problems.append(
                f"{label}: {field} {account} is neither default nor created by this SyncResource"
            )
    return problems


def _grants(label: str, obj: KubeObject, accounts: set[str]) -> list[str]:
    """Why `obj` would grant permissions (empty when it does not); `accounts`: names of the
    ServiceAccounts this SyncResource creates in the object's namespace."""
    if (obj.group, obj.kind) == ("", "Secret") and obj.raw.get("type") == TOKEN_SECRET:
        return [f"{label}: Secrets of type {TOKEN_SECRET} are not allowed"]
    spec = _pod_spec(obj)
    return [] if spec is None else _pod_problems(label, spec, accounts)


def _accounts(objects: list[Any], default: str) -> set[tuple[str, str]]:
    """Namespace and name of the ServiceAccounts the SyncResource itself creates."""
    return {
        (
            str(_dict(raw.get("metadata")).get("namespace") or default),
            str(_dict(raw.get("metadata")).get("name")),
        )
        for raw in objects
        if isinstance(raw, dict)
        and raw.get("apiVersion") == "v1"
        and raw.get("kind") == "ServiceAccount"
    }


def _problems(index: int, raw: Any, accounts: set[tuple[str, str]], default: str) -> list[str]:
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
    home = namespace if isinstance(namespace, str) and namespace else default
    problems += _grants(label, obj, {name for ns, name in accounts if ns == home})
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
    accounts = _accounts(objects, default_namespace)
    for index, raw in enumerate(objects):
        found = _problems(index, raw, accounts, default_namespace)
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
