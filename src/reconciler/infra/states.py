"""The state machine's decisions, one small pure function per state: given what was observed,
which state comes next (or what to report). `machine.py` performs the I/O around them, so each
transition is unit-tested without a cluster (`tests/infra/test_states.py`).

    take snapshot -> initialise -> create shoot | patch shoot | wait for shoot
    wait for shoot -> (Processing: look again) | (Error: retry with backoff) | (Failed: Failed)
                   -> kubeconfig -> OIDC -> administrators -> Ready
    deletion: delete kubeconfig -> delete shoot -> wait for deletion -> remove finalizer
"""

from __future__ import annotations

import datetime as dt
import enum
import hashlib
import re
from dataclasses import dataclass
from typing import Any

from reconciler.infra.shoot import written_generation
from reconciler.model.infrastructure import FINALIZER, FORCE_ROTATION, LAST_SYNC, SHOOT_RUNTIME_ID

EXPIRES_AT = "operator.kyma-project.io/expires-at"


class Step(enum.StrEnum):
    TAKE_SNAPSHOT = "take snapshot"
    INITIALISE = "initialise"
    CREATE_SHOOT = "create shoot"
    PATCH_SHOOT = "patch shoot"
    WAIT_FOR_SHOOT = "wait for shoot"
    KUBECONFIG = "kubeconfig"
    OIDC = "configure OIDC"
    ADMINISTRATORS = "administrators"
    READY = "ready"
    DELETE_KUBECONFIG = "delete kubeconfig"
    DELETE_SHOOT = "delete shoot"
    REMOVE_FINALIZER = "remove finalizer"


def initialise(runtime: dict[str, Any], shoot: dict[str, Any] | None) -> Step:
    """Where a freshly read Runtime continues (the finalizer is ensured by the caller)."""
    meta = runtime["metadata"]
    if meta.get("deletionTimestamp"):
        if FINALIZER in (meta.get("finalizers") or []):
            return Step.DELETE_KUBECONFIG
        return Step.REMOVE_FINALIZER  # nothing of ours is left: nothing to do
    if shoot is None:
        return Step.CREATE_SHOOT
    if int(meta.get("generation") or 0) > written_generation(shoot):
        return Step.PATCH_SHOOT
    return Step.WAIT_FOR_SHOOT


def shoot_owner(shoot: dict[str, Any]) -> str:
    """The Runtime a Shoot belongs to: the one recorded on it ("" when none is)."""
    return str((shoot.get("metadata", {}).get("annotations") or {}).get(SHOOT_RUNTIME_ID) or "")


def foreign_shoot(shoot: dict[str, Any] | None, runtime: str) -> str | None:
    """Why the Runtime `runtime` must leave this Shoot alone (None: it is its own, or there is
    none). A Shoot belongs to the Runtime recorded on it; another Runtime naming it would get
    its kubeconfig, replace its administrators and delete it."""
    if shoot is None:
        return None
    owner = shoot_owner(shoot)
    if owner == runtime:
        return None
    name = shoot.get("metadata", {}).get("name", "")
    whose = f"Runtime {owner}" if owner else "no Runtime (it was not created by this manager)"
    return (
        f"Shoot {name} belongs to {whose}: this Runtime may not use it; "
        "choose another spec.shoot.name"
    )


class Progress(enum.Enum):
    PROCESSING = "processing"
    RETRYABLE = "retryable"
    FAILED = "failed"
    SUCCEEDED = "succeeded"


@dataclass(frozen=True)
class ShootProgress:
    progress: Progress
    message: str


def shoot_progress(shoot: dict[str, Any]) -> ShootProgress:
    """What Gardener says about the Shoot's current generation (its `lastOperation`)."""
    meta, status = shoot["metadata"], shoot.get("status") or {}
    last = status.get("lastOperation") or {}
    kind, state = str(last.get("type") or "Create"), str(last.get("state") or "Pending")
    name = meta["name"]
    errors = "; ".join(
        f"{e.get('description', '')} ({', '.join(e.get('codes') or [])})".strip()
        for e in status.get("lastErrors") or []
    )
    if status.get("observedGeneration") != meta.get("generation") or state in (
        "Pending",
        "Processing",
    ):
        return ShootProgress(Progress.PROCESSING, f"Shoot {name}: {kind} in progress")
    if state == "Succeeded":
        return ShootProgress(Progress.SUCCEEDED, f"Shoot {name}: {kind} succeeded")
    detail = f": {errors}" if errors else ""
    if state == "Failed" or state == "Aborted":
        return ShootProgress(Progress.FAILED, f"Shoot {name}: {kind} {state.lower()}{detail}")
    return ShootProgress(
        Progress.RETRYABLE, f"Shoot {name}: {kind} error, Gardener retries{detail}"
    )


def _stamp(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def rotation_due(
    secret: dict[str, Any] | None,
    now: dt.datetime,
    ratio: float,
    *forced_by: dict[str, Any] | None,
) -> dt.datetime | None:
    """When the kubeconfig must be replaced: now (no Secret, forced, unreadable) or at `ratio`
    of its validity; None never happens for a Secret we wrote."""
    if secret is None:
        return now
    for owner in forced_by:
        annotations = ((owner or {}).get("metadata") or {}).get("annotations") or {}
        if annotations.get(FORCE_ROTATION) == "true":
            return now
    annotations = secret["metadata"].get("annotations") or {}
    synced, expires = _stamp(annotations.get(LAST_SYNC)), _stamp(annotations.get(EXPIRES_AT))
    if synced is None or expires is None or expires <= synced:
        return now
    return synced + (expires - synced) * ratio


def binding_name(user: str) -> str:
    """A ClusterRoleBinding name per administrator: readable and unique."""
    readable = re.sub(r"[^a-z0-9-]+", "-", user.lower()).strip("-")[:40]
    return f"admin-{readable}-{hashlib.sha256(user.encode()).hexdigest()[:8]}"


def set_condition(
    conditions: list[dict[str, Any]],
    kind: str,
    status: bool,
    reason: str,
    message: str,
    generation: int | None,
    now: dt.datetime,
) -> list[dict[str, Any]]:
    """`conditions` with `kind` set; its transition time kept while its status stays."""
    value = "True" if status else "False"
    old = next((c for c in conditions if c.get("type") == kind), None)
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    if old is not None and old.get("status") == value:
        stamp = str(old.get("lastTransitionTime") or stamp)
    condition: dict[str, Any] = {
        "type": kind,
        "status": value,
        "reason": reason,
        "message": message,
        "lastTransitionTime": stamp,
    }
    if generation is not None:
        condition["observedGeneration"] = generation
    return [*(c for c in conditions if c.get("type") != kind), condition]
