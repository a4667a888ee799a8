"""The simulator refuses what Gardener refuses (pure; the proxy's answer on the test bed is in
test_gardener.py): a Shoot missing what its provider extension needs, and downgrades."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from reconciler.devcluster import shootvalidation
from tests.infra.samples import shoot


def _spec() -> dict[str, Any]:
    return copy.deepcopy(shoot("s-valid", "garden-p")["spec"])


def _drop(spec: dict[str, Any], path: str) -> dict[str, Any]:
    *parents, leaf = path.split(".")
    node: Any = spec
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    del node[leaf]
    return spec


def test_a_complete_shoot_is_accepted() -> None:
    assert shootvalidation.validate(_spec()) == []


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("provider.infrastructureConfig", "spec.provider.infrastructureConfig"),
        ("provider.controlPlaneConfig", "spec.provider.controlPlaneConfig"),
        (
            "provider.infrastructureConfig.networks.zones",
            "spec.provider.infrastructureConfig.networks.zones",
        ),
        ("provider.workers.0.machine.image", "spec.provider.workers[0].machine.image.name"),
        ("provider.workers.0.zones", "spec.provider.workers[0].zones"),
        ("networking.type", "spec.networking.type"),
        ("cloudProfile", "spec.cloudProfile.name"),
        ("credentialsBindingName", "spec.credentialsBindingName"),
        ("kubernetes.version", "spec.kubernetes.version"),
        ("dns.providers.0.credentialsRef", "spec.dns.providers[0].credentialsRef"),
    ],
)
def test_a_shoot_missing_what_gardener_needs_is_invalid(path: str, field: str) -> None:
    causes = shootvalidation.validate(_drop(_spec(), path))
    assert field in [c.field for c in causes]


def test_a_configuration_of_another_provider_or_an_empty_image_version_is_invalid() -> None:
    spec = _spec()
    spec["provider"]["infrastructureConfig"]["apiVersion"] = (
        "gcp.provider.extensions.gardener.cloud/v1alpha1"
    )
    spec["provider"]["workers"][0]["machine"]["image"] = {"name": "gardenlinux", "version": ""}
    causes = {c.field: c for c in shootvalidation.validate(spec)}
    assert causes["spec.provider.infrastructureConfig"].reason == "FieldValueInvalid"
    assert causes["spec.provider.workers[0].machine.image.version"].reason == "FieldValueRequired"


def test_downgrades_and_changed_zones_are_forbidden_as_gardener_answers() -> None:
    old = _spec()
    new = copy.deepcopy(old)
    old["kubernetes"]["version"] = "1.31.2"
    old["provider"]["workers"][0]["machine"]["image"]["version"] = "1600.0.0"
    old["provider"]["workers"][0]["zones"] = ["eu-central-1a", "eu-central-1b"]
    old["provider"]["infrastructureConfig"]["networks"]["zones"][0]["public"] = "10.250.40.0/21"
    causes = shootvalidation.validate_update(new, old)
    zone = "spec.provider.infrastructureConfig.networks.zones[eu-central-1a]"
    assert {c.field: c.reason for c in causes} == {
        "spec.kubernetes.version": "FieldValueForbidden",
        "spec.provider.workers[0].machine.image.version": "FieldValueForbidden",
        "spec.provider.workers[0].zones": "FieldValueForbidden",
        f"{zone}.public": "FieldValueInvalid",
    }
    status = shootvalidation.status("s-valid", causes)
    assert status["code"] == 422
    assert status["reason"] == "Invalid"
    assert status["message"].startswith('Shoot.core.gardener.cloud "s-valid" is invalid: [')
    assert status["details"]["causes"][0] == causes[0].as_status()
