"""The state machine's decisions, one small pure function per state: given what was observed,
which state comes next (or what to report). `machine.py` performs the I/O around them, so each
transition is unit-tested without a cluster (`tests/infra/test_states.py`).

    take snapshot -> initialise -> create shoot | patch shoot | wait for shoot
    wait for shoot -> (in progress, or failed with errors KIM retries: look again)
                   | (failed for good: Failed)
                   -> kubeconfig -> kyma-system -> provisioning info, OIDC -> administrators
                   -> Ready
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
from reconciler.model.infrastructure import (
    FINALIZER,
    FORCE_ROTATION,
    LAST_SYNC,
    RUNTIME_ID,
    SHOOT_RUNTIME_ID,
)

EXPIRES_AT = "operator.kyma-project.io/expires-at"


class Step(enum.StrEnum):
    TAKE_SNAPSHOT = "take snapshot"
    INITIALISE = "initialise"
    CREATE_SHOOT = "create shoot"
    PATCH_SHOOT = "patch shoot"
    WAIT_FOR_SHOOT = "wait for shoot"
    KUBECONFIG = "kubeconfig"
    KYMA_SYSTEM = "kyma-system namespace"
    CONFIGURE_SKR = "provisioning info and OIDC"
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


def runtime_id(runtime: dict[str, Any]) -> str:
    """The runtime id: KIM names the GardenerCluster and the kubeconfig Secret after the label
    `kyma-project.io/runtime-id`; the Runtime's name when it lacks the label. The broker names
    a Runtime after its runtime id, and `runtime_id_mismatch` refuses any other."""
    meta = runtime["metadata"]
    return str((meta.get("labels") or {}).get(RUNTIME_ID) or meta["name"])


def runtime_id_mismatch(runtime: dict[str, Any]) -> str | None:
    """Why a Runtime's runtime-id label is refused (None: it is its name, or absent). A label
    is not unique: a Runtime labelled with another Runtime's id would write that Runtime's
    kubeconfig Secret, and operator mode would send that Kyma's modules to this Runtime's
    shoot."""
    meta = runtime["metadata"]
    label = (meta.get("labels") or {}).get(RUNTIME_ID)
    if not label or label == meta["name"]:
        return None
    return (
        f"label {RUNTIME_ID}={label!r} differs from the Runtime's name {meta['name']!r}: "
        "the runtime id names the kubeconfig Secret and the GardenerCluster, so it must be "
        "the Runtime's own name"
    )


def shoot_owner(shoot: dict[str, Any]) -> str:
    """The Runtime a Shoot belongs to: the one recorded on it ("" when none is)."""
    return str((shoot.get("metadata", {}).get("annotations") or {}).get(SHOOT_RUNTIME_ID) or "")


def foreign_shoot(shoot: dict[str, Any] | None, runtime: str, *aliases: str) -> str | None:
    """Why the Runtime `runtime` (also known as `aliases`: its name and its runtime id) must
    leave this Shoot alone (None: it is its own, or there is none). A Shoot belongs to the
    Runtime recorded on it; another Runtime naming it would get its kubeconfig, replace its
    administrators and delete it."""
    if shoot is None:
        return None
    owner = shoot_owner(shoot)
    if owner and owner in (runtime, *aliases):
        return None
    name = shoot.get("metadata", {}).get("name", "")
    whose = f"Runtime {owner}" if owner else "no Runtime (it was not created by this manager)"
    return (
        f"Shoot {name} belongs to {whose}: this Runtime may not use it; "
        "choose another spec.shoot.name"
    )


NON_RETRYABLE_CODES = frozenset({"ERR_INFRA_UNAUTHENTICATED", "ERR_INFRA_UNAUTHORIZED"})
"""Gardener error codes KIM never retries: the credentials of the project are wrong."""


def gardener_retries(last_errors: list[dict[str, Any]] | None) -> bool:
    """KIM's reading of a failed operation's `lastErrors` (`gardener.IsRetryable`): retryable
    unless there are none or one carries a credentials code. Configuration problems,
    problematic webhooks, infrastructure dependencies, rate limits, quota, and any code Gardener
    adds later are retried, though Gardener itself marks most of them final."""
    if not last_errors:
        return False
    return not any(
        code in NON_RETRYABLE_CODES for error in last_errors for code in error.get("codes") or []
    )


def error_codes(last_errors: list[dict[str, Any]] | None) -> str:
    """The codes of `lastErrors`, as KIM's condition reason lists them (`A, B`)."""
    return ", ".join(str(code) for error in last_errors or [] for code in error.get("codes") or [])


class Progress(enum.Enum):
    PROCESSING = "processing"
    RETRYING = "retrying"
    """Gardener's operation failed with errors KIM retries: still Pending, look again."""
    FAILED = "failed"
    SUCCEEDED = "succeeded"


@dataclass(frozen=True)
class ShootProgress:
    progress: Progress
    creating: bool
    """The operation is the Shoot's creation (else a reconcile after an update)."""
    codes: str = ""
    """Gardener's error codes (`lastErrors`), if any."""


def shoot_progress(shoot: dict[str, Any]) -> ShootProgress:
    """What Gardener says about the Shoot's current generation (its `lastOperation`), read as
    KIM reads it: `Pending`, `Processing`, `Error` and `Aborted` are in progress (Gardener
    retries an `Error` itself), `Failed` is retried unless its codes say otherwise
    (`gardener_retries`), `Succeeded` goes on."""
    meta, status = shoot["metadata"], shoot.get("status") or {}
    last = status.get("lastOperation") or {}
    creating = str(last.get("type") or "Create") == "Create"
    state = str(last.get("state") or "Pending")
    errors = status.get("lastErrors") or []
    codes = error_codes(errors)
    if status.get("observedGeneration") != meta.get("generation") or state not in (
        "Succeeded",
        "Failed",
    ):
        return ShootProgress(Progress.PROCESSING, creating, codes)
    if state == "Succeeded":
        return ShootProgress(Progress.SUCCEEDED, creating)
    if gardener_retries(errors):
        return ShootProgress(Progress.RETRYING, creating, codes)
    return ShootProgress(Progress.FAILED, creating, codes)


def _stamp(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


ROTATION_MARGIN = 0.95
"""KIM rotates a kubeconfig once 95 % of its rotation period (`ratio` of its validity) has
passed since its last sync, so a pass looking a little late still finds it valid."""


def rotation_due(
    secret: dict[str, Any] | None,
    now: dt.datetime,
    ratio: float,
    *forced_by: dict[str, Any] | None,
) -> dt.datetime | None:
    """When the kubeconfig must be replaced: now (no Secret, forced, unreadable) or, as KIM
    times it, after `ROTATION_MARGIN` of `ratio` of its validity since its last sync. The
    force annotation counts whatever its value (KIM: present is enough)."""
    if secret is None:
        return now
    for owner in forced_by:
        annotations = ((owner or {}).get("metadata") or {}).get("annotations") or {}
        if FORCE_ROTATION in annotations:
            return now
    annotations = secret["metadata"].get("annotations") or {}
    synced, expires = _stamp(annotations.get(LAST_SYNC)), _stamp(annotations.get(EXPIRES_AT))
    if synced is None or expires is None or expires <= synced:
        return now
    return synced + (expires - synced) * (ratio * ROTATION_MARGIN)


def binding_name(user: str) -> str:
    """A ClusterRoleBinding name per administrator: readable and unique."""
    readable = re.sub(r"[^a-z0-9-]+", "-", user.lower()).strip("-")[:40]
    return f"admin-{readable}-{hashlib.sha256(user.encode()).hexdigest()[:8]}"


class Reason(enum.StrEnum):
    """Condition reasons, KIM's words (the broker and KCP tooling read them)."""

    PENDING = "Pending"
    PROCESSING = "Processing"
    PROCESSING_ERR = "ProcessingErr"
    CREATION_ERR = "CreationErr"
    GARDENER_ERR = "GardenerErr"
    CONVERSION_ERR = "ConversionErr"
    SEED_NOT_FOUND = "SeedNotFound"
    AUDIT_LOG_ERR = "AuditLogErr"
    KUBERNETES_ERR = "KubernetesErr"
    SHOOT_CREATION_COMPLETED = "ShootCreationCompleted"
    CONFIGURATION_COMPLETED = "ConfigurationCompleted"
    GARDENER_CR_READY = "GardenerClusterCRReady"
    KYMA_SYSTEM_NS_READY = "KymaSystemNSReady"
    OIDC_AND_CMS_CONFIGURED = "OidcAndConfigMapsConfigured"
    ADMINISTRATORS_CONFIGURED = "AdministratorsConfigured"
    GARDENER_SHOOT_DELETED = "GardenerShootDeleted"


def set_condition(
    conditions: list[dict[str, Any]],
    kind: str,
    status: bool | None,
    reason: str,
    message: str,
    generation: int | None,
    now: dt.datetime,
) -> list[dict[str, Any]]:
    """`conditions` with `kind` set (`status` None: Unknown, as KIM reports a step in
    progress); its transition time kept while its status stays."""
    value = "Unknown" if status is None else "True" if status else "False"
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
