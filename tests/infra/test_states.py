"""Each state's decision on its own: which state follows what was observed."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from pydantic import ValidationError

from reconciler.infra.shoot import shoot_for, written_generation
from reconciler.infra.states import (
    EXPIRES_AT,
    Progress,
    Step,
    binding_name,
    foreign_shoot,
    gardener_retries,
    initialise,
    rotation_due,
    set_condition,
    shoot_progress,
)
from reconciler.model.infrastructure import (
    FINALIZER,
    FORCE_ROTATION,
    LAST_SYNC,
    SHOOT_GENERATION,
    SHOOT_RUNTIME_ID,
    RuntimeSpec,
)
from tests.infra.samples import CONVERTER, runtime, worker

NOW = dt.datetime(2026, 11, 24, 12, 0, tzinfo=dt.UTC)


def live_runtime(generation: int = 1, **meta: Any) -> dict[str, Any]:
    body = runtime("rt", "kcp-system", shoot="s")
    body["metadata"].update({"generation": generation, **meta})
    return body


def shoot(generation: int, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "s",
            "generation": 3,
            "annotations": {SHOOT_GENERATION: str(generation)},
        },
        "status": {"observedGeneration": 3, **status},
    }


@pytest.mark.parametrize(
    ("runtime_meta", "shoot_body", "expected"),
    [
        ({}, None, Step.CREATE_SHOOT),
        ({"generation": 2}, shoot(1), Step.PATCH_SHOOT),
        ({"generation": 2}, shoot(2), Step.WAIT_FOR_SHOOT),
        ({"generation": 1}, shoot(2), Step.WAIT_FOR_SHOOT),
        ({"deletionTimestamp": "x", "finalizers": [FINALIZER]}, shoot(1), Step.DELETE_KUBECONFIG),
        ({"deletionTimestamp": "x", "finalizers": []}, None, Step.REMOVE_FINALIZER),
    ],
)
def test_initialise_chooses_create_patch_wait_or_delete(
    runtime_meta: dict[str, Any], shoot_body: dict[str, Any] | None, expected: Step
) -> None:
    assert initialise(live_runtime(**runtime_meta), shoot_body) is expected


@pytest.mark.parametrize(
    ("last", "observed", "errors", "expected"),
    [
        ({"type": "Create", "state": "Processing"}, 3, None, Progress.PROCESSING),
        ({"type": "Reconcile", "state": "Succeeded"}, 2, None, Progress.PROCESSING),
        ({"type": "Create", "state": "Succeeded"}, 3, None, Progress.SUCCEEDED),
        # Gardener retries an Error by itself, an Aborted operation starts again: in progress
        (
            {"type": "Create", "state": "Error"},
            3,
            ["ERR_INFRA_QUOTA_EXCEEDED"],
            Progress.PROCESSING,
        ),
        ({"type": "Reconcile", "state": "Aborted"}, 3, None, Progress.PROCESSING),
        ({"type": "Create", "state": "Pending"}, 3, None, Progress.PROCESSING),
        # Failed: KIM retries unless the codes say the credentials are wrong, or there are none
        (
            {"type": "Create", "state": "Failed"},
            3,
            ["ERR_CONFIGURATION_PROBLEM"],
            Progress.RETRYING,
        ),
        ({"type": "Reconcile", "state": "Failed"}, 3, ["ERR_INFRA_UNAUTHORIZED"], Progress.FAILED),
        ({"type": "Create", "state": "Failed"}, 3, None, Progress.FAILED),
        (None, None, None, Progress.PROCESSING),
    ],
)
def test_waiting_for_gardener_reads_last_operation_of_the_current_generation(
    last: dict[str, Any] | None, observed: int | None, errors: list[str] | None, expected: Progress
) -> None:
    status: dict[str, Any] = {"observedGeneration": observed, "lastOperation": last}
    if errors:
        status["lastErrors"] = [{"description": "boom", "codes": errors}]
    seen = shoot_progress({"metadata": {"name": "s", "generation": 3}, "status": status})
    assert seen.progress is expected
    assert seen.creating is ((last or {}).get("type", "Create") == "Create")
    assert seen.codes == ", ".join(errors or [])


# KIM's own table (pkg/gardener gardener_error_handler_test): which `lastErrors` it retries
RETRIED = [
    "ERR_RETRYABLE_CONFIGURATION_PROBLEM",
    "ERR_CONFIGURATION_PROBLEM",
    "ERR_RETRYABLE_INFRA_DEPENDENCIES",
    "ERR_INFRA_RATE_LIMITS_EXCEEDED",
    "ERR_INFRA_QUOTA_EXCEEDED",
    "ERR_PROBLEMATIC_WEBHOOK",
    "ERR_INFRA_DEPENDENCIES",
    "NEW_RETRYABLE_ERROR",  # a code Gardener adds later
]
FINAL = ["ERR_INFRA_UNAUTHENTICATED", "ERR_INFRA_UNAUTHORIZED"]


@pytest.mark.parametrize(
    ("codes", "retried"),
    [
        *(([[code]], True) for code in RETRIED),
        ([RETRIED], True),  # all of them at once
        *(([[code]], False) for code in FINAL),
        ([[FINAL[0]], [FINAL[1]]], False),
        ([[RETRIED[0]], [FINAL[1]], [RETRIED[4]]], False),  # a mixture: not retried
        ([], False),  # Failed without errors
        ([[]], True),  # an error without codes: nothing says it is final
    ],
)
def test_gardener_errors_are_retried_as_kim_retries_them(
    codes: list[list[str]], retried: bool
) -> None:
    errors = [{"description": f"error {i}", "codes": c} for i, c in enumerate(codes)]
    assert gardener_retries(errors) is retried


def _secret(synced: dt.datetime, expires: dt.datetime) -> dict[str, Any]:
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    return {
        "metadata": {
            "annotations": {LAST_SYNC: synced.strftime(stamp), EXPIRES_AT: expires.strftime(stamp)}
        }
    }


def test_rotation_is_due_as_kim_times_it_at_once_when_forced_or_missing() -> None:
    """KIM: rotation period 60 % of 24 h (14.4 h), rotated once 95 % of it passed (13.68 h)."""
    secret = _secret(NOW, NOW + dt.timedelta(hours=24))
    assert rotation_due(secret, NOW, 0.6) == NOW + dt.timedelta(hours=13.68)
    assert rotation_due(None, NOW, 0.6) == NOW
    forced = {"metadata": {"annotations": {FORCE_ROTATION: "true"}}}
    assert rotation_due(secret, NOW, 0.6, None, forced) == NOW
    any_value = {"metadata": {"annotations": {FORCE_ROTATION: ""}}}  # KIM: present is enough
    assert rotation_due(secret, NOW, 0.6, any_value) == NOW
    assert rotation_due({"metadata": {}}, NOW, 0.6) == NOW  # unreadable: replace it


def test_a_condition_keeps_its_transition_time_while_its_status_stays() -> None:
    first = set_condition([], "Provisioned", False, "Pending", "a", 1, NOW)
    later = set_condition(
        first, "Provisioned", False, "Pending", "b", 2, NOW + dt.timedelta(hours=1)
    )
    assert later[0]["lastTransitionTime"] == first[0]["lastTransitionTime"]
    assert later[0]["observedGeneration"] == 2
    flipped = set_condition(later, "Provisioned", True, "Done", "c", 2, NOW + dt.timedelta(hours=2))
    assert flipped[0]["lastTransitionTime"] == "2026-11-24T14:00:00Z"
    unknown = set_condition(flipped, "Provisioned", None, "Processing", "d", 3, NOW)
    assert unknown[0]["status"] == "Unknown"


def test_binding_names_are_valid_and_distinct_per_administrator() -> None:
    names = {binding_name(u) for u in ("A@x.com", "a@x.com", "a.x.com")}
    assert len(names) == 3
    assert all(n.startswith("admin-") and n == n.lower() and len(n) <= 63 for n in names)


def test_the_shoot_carries_the_runtime_spec_id_and_generation() -> None:
    body = live_runtime(generation=4)
    body["spec"]["shoot"]["provider"]["workers"] = [worker(cri={"name": "containerd"})]
    shoot_body = shoot_for(body, "garden-p", CONVERTER)
    assert shoot_body["metadata"]["namespace"] == "garden-p"
    assert written_generation(shoot_body) == 4
    spec = shoot_body["spec"]
    assert spec["cloudProfile"] == {"kind": "CloudProfile", "name": "aws"}
    assert spec["provider"]["workers"][0]["cri"] == {"name": "containerd"}
    assert spec["kubernetes"]["kubeAPIServer"]["structuredAuthentication"] == {
        "configMapName": f"structured-auth-config-{spec_name(body)}"
    }
    assert spec["networking"]["pods"] == "100.64.0.0/12"


def test_a_shoot_belongs_to_the_runtime_recorded_on_it() -> None:
    shoot = shoot_for(live_runtime(), "garden-p", CONVERTER)
    assert foreign_shoot(None, "rt") is None
    assert foreign_shoot(shoot, "rt") is None
    assert "belongs to Runtime rt" in (foreign_shoot(shoot, "other") or "")
    shoot["metadata"]["annotations"].pop(SHOOT_RUNTIME_ID)
    assert "not created by this manager" in (foreign_shoot(shoot, "rt") or "")


@pytest.mark.parametrize(
    ("path", "value", "problem"),
    [
        (("shoot", "name"), "x/../../api/v1/secrets", "pattern"),
        (("shoot", "name"), "a" * 64, "at most 63"),
        (("security", "administrators"), ["system:anonymous"], "system identity"),
        (("security", "administrators"), [""], "must not be empty"),
    ],
)
def test_the_manager_validates_what_reaches_gardener_and_the_shoot(
    path: tuple[str, str], value: Any, problem: str
) -> None:
    """Again in the manager: a CRD installed before these rules (or edited) lets them pass."""
    spec = runtime("rt", "kcp-system")["spec"]
    spec[path[0]][path[1]] = value
    with pytest.raises(ValidationError, match=problem):
        RuntimeSpec.model_validate(spec)


def spec_name(body: dict[str, Any]) -> str:
    return str(body["spec"]["shoot"]["name"])
