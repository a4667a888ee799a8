"""Is a live object ready, and if not, why not, in words an operator understands.

Pure functions over the status the controllers (or the kubelet) write: Deployment, StatefulSet,
DaemonSet, Job, Pod, CustomResourceDefinition and APIService. Every other kind is ready once
applied. `reconciler.kyma-project.io/ignore-readiness: "true"` opts an object out.
"""

from __future__ import annotations

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


def readiness(obj: KubeObject) -> Readiness:
    """Readiness of one live object."""
    if obj.annotations.get(IGNORE_READINESS) == "true":
        return READY
    status: dict[str, Any] = obj.raw.get("status") or {}
    spec: dict[str, Any] = obj.raw.get("spec") or {}
    kind = obj.kind.lower()
    where = f"{kind} {obj.namespace + '/' if obj.namespace else ''}{obj.name}"
    if obj.kind in ("Deployment", "StatefulSet", "DaemonSet") and not _generation_observed(
        obj, status
    ):
        return Readiness(False, f"{where}: controller has not observed the latest generation")
    if obj.kind == "Deployment":
        want = int(spec.get("replicas", 1))
        updated = int(status.get("updatedReplicas", 0))
        available = int(status.get("availableReplicas", 0))
        if updated < want:
            return Readiness(False, f"{where}: {updated}/{want} replicas updated")
        if available < want:
            return Readiness(False, f"{where}: {available}/{want} replicas available")
        return READY
    if obj.kind == "StatefulSet":
        want = int(spec.get("replicas", 1))
        ready_count = int(status.get("readyReplicas", 0))
        if ready_count < want:
            return Readiness(False, f"{where}: {ready_count}/{want} replicas ready")
        rolling = (spec.get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"
        if rolling and status.get("updateRevision") != status.get("currentRevision"):
            return Readiness(False, f"{where}: rolling update to a new revision in progress")
        return READY
    if obj.kind == "DaemonSet":
        want = int(status.get("desiredNumberScheduled", 0))
        available = int(status.get("numberAvailable", 0))
        updated = int(status.get("updatedNumberScheduled", 0))
        if updated < want or available < want:
            return Readiness(False, f"{where}: {available}/{want} pods available")
        return READY
    if obj.kind == "Job":
        if _is_true(status, "Complete"):
            return READY
        failed = _condition(status, "Failed")
        if failed and failed.get("status") == "True":
            return Readiness(False, f"{where}: failed: {failed.get('message', '')}", failed=True)
        return Readiness(False, f"{where}: not complete ({status.get('succeeded', 0)} succeeded)")
    if obj.kind == "Pod":
        phase = status.get("phase", "Pending")
        if phase == "Succeeded" or _is_true(status, "Ready"):
            return READY
        if phase == "Failed":
            return Readiness(False, f"{where}: failed", failed=True)
        return Readiness(False, f"{where}: {phase}, not ready")
    if obj.kind == "CustomResourceDefinition":
        if _is_true(status, "Established"):
            return READY
        return Readiness(False, f"{where}: not established")
    if obj.kind == "APIService":
        if _is_true(status, "Available"):
            return READY
        condition = _condition(status, "Available") or {}
        return Readiness(False, f"{where}: not available {condition.get('message', '')}".strip())
    return READY
