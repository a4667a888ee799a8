"""Is a live object ready, and if not, why not, in words an operator understands.

Pure functions over the status the controllers (or the kubelet) write, one rule per kind in
`RULES` (Deployment, StatefulSet, DaemonSet, Job, Pod, CustomResourceDefinition, APIService);
`WATCHED_KINDS`, the kinds `wait.py` polls, is that table's keys. Every other kind is ready once
applied. `reconciler.kyma-project.io/ignore-readiness: "true"` opts an object out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reconciler.kube.transform import IGNORE_READINESS
from reconciler.model.kube_object import KubeObject


@dataclass(frozen=True)
class Readiness:
    ready: bool
    reason: str = ""
    failed: bool = False
    """True when waiting is pointless (a Job that failed)."""


READY = Readiness(True)


def _condition(status: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") == kind:
            return dict(condition)
    return None


def _is_true(status: dict[str, Any], kind: str) -> bool:
    condition = _condition(status, kind)
    return bool(condition and condition.get("status") == "True")


def _generation_observed(obj: KubeObject, status: dict[str, Any]) -> bool:
    generation = obj.metadata.get("generation")
    return generation is None or status.get("observedGeneration", 0) >= generation


@dataclass(frozen=True)
class _View:
    """What a rule reads: the object's spec and status, and its name for the reason."""

    spec: dict[str, Any]
    status: dict[str, Any]
    where: str

    def waiting(self, why: str, *, failed: bool = False) -> Readiness:
        return Readiness(False, f"{self.where}: {why}", failed=failed)


def _deployment(v: _View) -> Readiness:
    want = int(v.spec.get("replicas", 1))
    updated = int(v.status.get("updatedReplicas", 0))
    available = int(v.status.get("availableReplicas", 0))
    if updated < want:
        return v.waiting(f"{updated}/{want} replicas updated")
    if available < want:
        return v.waiting(f"{available}/{want} replicas available")
    return READY


def _statefulset(v: _View) -> Readiness:
    want = int(v.spec.get("replicas", 1))
    ready_count = int(v.status.get("readyReplicas", 0))
    if ready_count < want:
        return v.waiting(f"{ready_count}/{want} replicas ready")
    rolling = (v.spec.get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"
    if rolling and v.status.get("updateRevision") != v.status.get("currentRevision"):
        return v.waiting("rolling update to a new revision in progress")
    return READY


def _daemonset(v: _View) -> Readiness:
    want = int(v.status.get("desiredNumberScheduled", 0))
    available = int(v.status.get("numberAvailable", 0))
    updated = int(v.status.get("updatedNumberScheduled", 0))
    if updated < want or available < want:
        return v.waiting(f"{available}/{want} pods available")
    return READY


def _job(v: _View) -> Readiness:
    if _is_true(v.status, "Complete"):
        return READY
    failed = _condition(v.status, "Failed")
    if failed and failed.get("status") == "True":
        return v.waiting(f"failed: {failed.get('message', '')}", failed=True)
    return v.waiting(f"not complete ({v.status.get('succeeded', 0)} succeeded)")


def _pod(v: _View) -> Readiness:
    phase = v.status.get("phase", "Pending")
    if phase == "Succeeded" or _is_true(v.status, "Ready"):
        return READY
    if phase == "Failed":
        return v.waiting("failed", failed=True)
    return v.waiting(f"{phase}, not ready")


def _crd(v: _View) -> Readiness:
    return READY if _is_true(v.status, "Established") else v.waiting("not established")


def _apiservice(v: _View) -> Readiness:
    if _is_true(v.status, "Available"):
        return READY
    condition = _condition(v.status, "Available") or {}
    return v.waiting(f"not available {condition.get('message', '')}".strip())


@dataclass(frozen=True)
class Rule:
    check: Callable[[_View], Readiness]
    generation: bool = False
    """The controller must have observed the latest generation first (workload controllers)."""


RULES: dict[str, Rule] = {
    "Deployment": Rule(_deployment, generation=True),
    "StatefulSet": Rule(_statefulset, generation=True),
    "DaemonSet": Rule(_daemonset, generation=True),
    "Job": Rule(_job),
    "Pod": Rule(_pod),
    "CustomResourceDefinition": Rule(_crd),
    "APIService": Rule(_apiservice),
}
"""Kind -> how to tell it is ready. Kinds without a rule are ready once applied."""

WATCHED_KINDS = frozenset(RULES)
"""The kinds worth waiting for (and reading again): exactly those with a rule."""


def readiness(obj: KubeObject) -> Readiness:
    """Readiness of one live object."""
    rule = RULES.get(obj.kind)
    if rule is None or obj.annotations.get(IGNORE_READINESS) == "true":
        return READY
    status: dict[str, Any] = obj.raw.get("status") or {}
    where = f"{obj.kind.lower()} {obj.namespace + '/' if obj.namespace else ''}{obj.name}"
    view = _View(obj.raw.get("spec") or {}, status, where)
    if rule.generation and not _generation_observed(obj, status):
        return view.waiting("controller has not observed the latest generation")
    return rule.check(view)
