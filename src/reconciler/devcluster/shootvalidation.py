"""What Gardener refuses of a Shoot, for the simulator (`devcluster/gardener.py`): the checks of
Gardener's API validation and of the provider extensions' admission (infrastructure and
control-plane configuration of the provider's API, machine images, networking, DNS, workers'
zones), and on an update its refusal of a lower Kubernetes or machine image version, of changed
immutable fields, of removed or reordered zones and of changed subnets of an existing zone.

Pure: a list of `Cause`s, each as Kubernetes reports a field error (`field`, `reason`
`FieldValueRequired` / `FieldValueInvalid` / `FieldValueForbidden` / `FieldValueNotSupported`,
`message`). The simulator answers them as Gardener does: 422 `Invalid` with the causes.
Test tooling: not all of Gardener, the part a converter can get wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

PROVIDER_APIS = {
    "aws": "aws.provider.extensions.gardener.cloud/v1alpha1",
    "azure": "azure.provider.extensions.gardener.cloud/v1alpha1",
    "gcp": "gcp.provider.extensions.gardener.cloud/v1alpha1",
    "openstack": "openstack.provider.extensions.gardener.cloud/v1alpha1",
    "alicloud": "alicloud.provider.extensions.gardener.cloud/v1alpha1",
    "gdch": "gdch.provider.extensions.gardener.gdc.goog/v1alpha1",
}
ZONED = frozenset({"aws", "gcp", "alicloud"})
"""Providers whose every worker pool must name its zones."""
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+].*)?$")

Spec = dict[str, Any]


@dataclass(frozen=True)
class Cause:
    field: str
    reason: str
    message: str

    def render(self) -> str:
        return f"{self.field}: {self.message}"

    def as_status(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}


def required(field: str, detail: str) -> Cause:
    return Cause(field, "FieldValueRequired", f"Required value: {detail}")


def invalid(field: str, value: Any, detail: str) -> Cause:
    return Cause(field, "FieldValueInvalid", f'Invalid value: "{value}": {detail}')


def forbidden(field: str, detail: str) -> Cause:
    return Cause(field, "FieldValueForbidden", f"Forbidden: {detail}")


def version(text: Any) -> tuple[int, int, int] | None:
    match = _VERSION.match(str(text or ""))
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _config(provider: Spec, key: str, kind: str, api: str) -> tuple[dict[str, Any], list[Cause]]:
    field = f"spec.provider.{key}"
    config = provider.get(key)
    if not isinstance(config, dict):
        return {}, [required(field, f"{key} must be set for {provider.get('type')} shoots")]
    if config.get("apiVersion") != api or config.get("kind") != kind:
        found = f"{config.get('apiVersion')}, Kind={config.get('kind')}"
        return config, [invalid(field, found, f"must be {kind} of {api}")]
    return config, []


def _worker_zones(workers: list[Any]) -> list[str]:
    zones: list[str] = []
    for worker in workers:
        for zone in _list(_dict(worker).get("zones")):
            if zone not in zones:
                zones.append(str(zone))
    return zones


def _provider_configs(kind: str, provider: Spec) -> list[Cause]:
    """What the provider extension's admission requires of its two configurations."""
    api = PROVIDER_APIS[kind]
    infra, causes = _config(provider, "infrastructureConfig", "InfrastructureConfig", api)
    control, more = _config(provider, "controlPlaneConfig", "ControlPlaneConfig", api)
    causes += more
    if causes:
        return causes
    field = "spec.provider.infrastructureConfig.networks"
    networks = _dict(infra.get("networks"))
    zones = _worker_zones(_list(provider.get("workers")))
    if kind in ("aws", "alicloud"):
        vpc = _dict(networks.get("vpc"))
        if not vpc.get("cidr") and not vpc.get("id"):
            causes.append(required(f"{field}.vpc", "either a VPC CIDR or an existing VPC id"))
        declared = [str(_dict(z).get("name")) for z in _list(networks.get("zones"))]
        if not declared:
            causes.append(required(f"{field}.zones", "at least one zone"))
        for zone in zones:
            if declared and zone not in declared:
                causes.append(
                    invalid(f"{field}.zones", zone, "a worker zone has no network configured")
                )
    elif kind == "azure":
        vnet = _dict(networks.get("vnet"))
        if not vnet.get("cidr") and not vnet.get("name"):
            causes.append(required(f"{field}.vnet", "either a VNet CIDR or an existing VNet"))
        if infra.get("zoned"):
            declared = [str(_dict(z).get("name")) for z in _list(networks.get("zones"))]
            for zone in zones:
                if declared and zone not in declared:
                    causes.append(
                        invalid(f"{field}.zones", zone, "a worker zone has no subnet configured")
                    )
    elif kind == "gcp":
        if not networks.get("workers") and not networks.get("worker"):
            causes.append(required(f"{field}.workers", "the workers network CIDR"))
        control_zone = str(control.get("zone") or "")
        if not control_zone:
            causes.append(required("spec.provider.controlPlaneConfig.zone", "a zone"))
        elif zones and control_zone not in zones:
            causes.append(
                invalid("spec.provider.controlPlaneConfig.zone", control_zone, "not a worker zone")
            )
    elif kind == "openstack":
        if not infra.get("floatingPoolName"):
            causes.append(
                required("spec.provider.infrastructureConfig.floatingPoolName", "a floating pool")
            )
        if not networks.get("workers"):
            causes.append(required(f"{field}.workers", "the workers network CIDR"))
        if not control.get("loadBalancerProvider"):
            causes.append(
                required(
                    "spec.provider.controlPlaneConfig.loadBalancerProvider",
                    "a load balancer provider",
                )
            )
    elif kind == "gdch" and not networks.get("nodeCIDR"):
        causes.append(required(f"{field}.nodeCIDR", "the nodes CIDR"))
    return causes


def _workers(kind: str, workers: list[Any]) -> list[Cause]:
    causes: list[Cause] = []
    if not workers:
        return [required("spec.provider.workers", "at least one worker pool")]
    for index, raw in enumerate(workers):
        worker = _dict(raw)
        field = f"spec.provider.workers[{index}]"
        if not worker.get("name"):
            causes.append(required(f"{field}.name", "a name"))
        machine = _dict(worker.get("machine"))
        if not machine.get("type"):
            causes.append(required(f"{field}.machine.type", "a machine type"))
        image = _dict(machine.get("image"))
        if not image.get("name"):
            causes.append(required(f"{field}.machine.image.name", "must specify a machine image"))
        if not image.get("version"):
            causes.append(required(f"{field}.machine.image.version", "a machine image version"))
        low, high = worker.get("minimum"), worker.get("maximum")
        if isinstance(low, int) and isinstance(high, int) and low > high:
            causes.append(forbidden(f"{field}.minimum", "minimum value must be <= maximum"))
        if kind in ZONED and not _list(worker.get("zones")):
            causes.append(required(f"{field}.zones", "at least one zone"))
    return causes


def _networking(networking: Spec) -> list[Cause]:
    causes = []
    if not networking.get("type"):
        causes.append(required("spec.networking.type", "a networking type (e.g. calico)"))
    for key in ("nodes", "pods", "services"):
        if key in networking and not networking.get(key):
            causes.append(invalid(f"spec.networking.{key}", "", "must be a CIDR"))
    return causes


def _dns(dns: Spec) -> list[Cause]:
    causes = []
    for index, raw in enumerate(_list(dns.get("providers"))):
        provider = _dict(raw)
        field = f"spec.dns.providers[{index}]"
        if not provider.get("type"):
            causes.append(required(f"{field}.type", "a DNS provider type"))
        if not provider.get("credentialsRef") and not provider.get("secretName"):
            causes.append(required(f"{field}.credentialsRef", "the provider's credentials"))
    return causes


def validate(spec: Spec) -> list[Cause]:
    """A Shoot's `spec` on its own (creation or update)."""
    causes: list[Cause] = []
    if not spec.get("region"):
        causes.append(required("spec.region", "a region"))
    profile = _dict(spec.get("cloudProfile")).get("name") or spec.get("cloudProfileName")
    if not profile:
        causes.append(required("spec.cloudProfile.name", "must specify a cloud profile"))
    if not spec.get("credentialsBindingName") and not spec.get("secretBindingName"):
        causes.append(
            required("spec.credentialsBindingName", "must be set for shoots with workers")
        )
    kubernetes = _dict(spec.get("kubernetes"))
    if version(kubernetes.get("version")) is None:
        value = kubernetes.get("version", "")
        causes.append(invalid("spec.kubernetes.version", value, "must be a semantic version"))
    causes += _networking(_dict(spec.get("networking")))
    provider = _dict(spec.get("provider"))
    kind = str(provider.get("type") or "")
    if kind not in PROVIDER_APIS:
        causes.append(
            Cause(
                "spec.provider.type",
                "FieldValueNotSupported",
                f'Unsupported value: "{kind}": supported values: {", ".join(PROVIDER_APIS)}',
            )
        )
        return causes
    causes += _workers(kind, _list(provider.get("workers")))
    causes += _provider_configs(kind, provider)
    causes += _dns(_dict(spec.get("dns")))
    return causes


def _profile(spec: Spec) -> Any:
    return _dict(spec.get("cloudProfile")).get("name") or spec.get("cloudProfileName")


def validate_update(spec: Spec, old: Spec) -> list[Cause]:
    """An update of `old` to `spec`: immutable fields, no downgrades, zones kept as they are."""
    causes: list[Cause] = []
    for field, mine, theirs in (
        ("spec.region", spec.get("region"), old.get("region")),
        (
            "spec.provider.type",
            _dict(spec.get("provider")).get("type"),
            _dict(old.get("provider")).get("type"),
        ),
        ("spec.cloudProfile.name", _profile(spec), _profile(old)),
    ):
        if theirs and mine != theirs:
            causes.append(invalid(field, mine, "field is immutable"))
    new_version = version(_dict(spec.get("kubernetes")).get("version"))
    old_version = version(_dict(old.get("kubernetes")).get("version"))
    if new_version is not None and old_version is not None and new_version < old_version:
        causes.append(
            forbidden("spec.kubernetes.version", "kubernetes version downgrade is not supported")
        )
    old_workers = {
        _dict(w).get("name"): _dict(w) for w in _list(_dict(old.get("provider")).get("workers"))
    }
    for index, raw in enumerate(_list(_dict(spec.get("provider")).get("workers"))):
        worker = _dict(raw)
        before = old_workers.get(worker.get("name"))
        if before is None:
            continue
        field = f"spec.provider.workers[{index}]"
        image = _dict(_dict(worker.get("machine")).get("image"))
        old_image = _dict(_dict(before.get("machine")).get("image"))
        if image.get("name") == old_image.get("name"):
            mine_v, theirs_v = version(image.get("version")), version(old_image.get("version"))
            if mine_v is not None and theirs_v is not None and mine_v < theirs_v:
                causes.append(
                    forbidden(
                        f"{field}.machine.image.version",
                        "machine image version downgrade is not supported",
                    )
                )
        zones, old_zones = _list(worker.get("zones")), _list(before.get("zones"))
        if zones[: len(old_zones)] != old_zones:
            causes.append(
                forbidden(
                    f"{field}.zones",
                    f"zones of an existing worker pool cannot be removed or reordered "
                    f"(was {old_zones})",
                )
            )
    causes += _zone_networks(spec, old)
    return causes


def _zone_networks(spec: Spec, old: Spec) -> list[Cause]:
    """An existing zone's subnets are immutable (the infrastructure exists)."""

    def zones(s: Spec) -> dict[str, dict[str, Any]]:
        infra = _dict(_dict(s.get("provider")).get("infrastructureConfig"))
        return {
            str(_dict(z).get("name")): _dict(z)
            for z in _list(_dict(infra.get("networks")).get("zones"))
        }

    causes = []
    new = zones(spec)
    for name, before in zones(old).items():
        after = new.get(name)
        if after is None:
            continue
        for key in ("workers", "public", "internal", "cidr"):
            if key in before and after.get(key) != before[key]:
                causes.append(
                    invalid(
                        f"spec.provider.infrastructureConfig.networks.zones[{name}].{key}",
                        after.get(key),
                        "field is immutable",
                    )
                )
    return causes


def structured_references(spec: Spec) -> list[tuple[str, str]]:
    """(field, ConfigMap name) of each ConfigMap the Shoot refers to in its project namespace."""
    server = _dict(_dict(spec.get("kubernetes")).get("kubeAPIServer"))
    result = []
    auth = _dict(server.get("structuredAuthentication")).get("configMapName")
    if auth:
        result.append(
            ("spec.kubernetes.kubeAPIServer.structuredAuthentication.configMapName", str(auth))
        )
    policy = _dict(_dict(_dict(server.get("auditConfig")).get("auditPolicy")).get("configMapRef"))
    if policy.get("name"):
        result.append(
            (
                "spec.kubernetes.kubeAPIServer.auditConfig.auditPolicy.configMapRef.name",
                policy["name"],
            )
        )
    return result


def status(name: str, causes: list[Cause]) -> dict[str, Any]:
    """The 422 `Invalid` Status Gardener's API answers with."""
    rendered = [c.render() for c in causes]
    listing = rendered[0] if len(rendered) == 1 else f"[{', '.join(rendered)}]"
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'Shoot.core.gardener.cloud "{name}" is invalid: {listing}',
        "reason": "Invalid",
        "details": {
            "name": name,
            "group": "core.gardener.cloud",
            "kind": "Shoot",
            "causes": [c.as_status() for c in causes],
        },
        "code": 422,
    }
