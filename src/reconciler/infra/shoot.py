"""Runtime -> Shoot: the Gardener Shoot a Runtime describes, as KIM's converter builds it (the
parts in `infra/converter/`), for a new Shoot or over the existing one.

On an update nothing Gardener changed is undone: a higher Kubernetes version or machine image
version it rolled out stays, its order of worker pools and zones stays, infrastructure and
control-plane configuration stay unless the Runtime adds zones, and its extensions, resources
and pre-custom-domain DNS stay. A Runtime KIM refuses (a missing required label, no audit-log
tenant where one is mandatory, a layout no provider extension accepts) raises
`ConversionError`: the Runtime is `Failed` and nothing is sent.

The Shoot carries the Runtime's id and generation as annotations: the generation says which
version of the Runtime Gardener was last given, so a Shoot is patched only for a newer one.
"""

from __future__ import annotations

import copy
from typing import Any

from reconciler.infra.converter import ConversionError, aws, azure, common, provider_converter
from reconciler.infra.converter.acl import AclAddresses
from reconciler.infra.converter.config import AuditLogTenant, ConverterConfig
from reconciler.infra.converter.versions import newer
from reconciler.infra.converter.workers import shoot_workers, zones_of
from reconciler.infra.gardener import SHOOT_API_VERSION
from reconciler.model.infrastructure import (
    SHOOT_GENERATION,
    SHOOT_RUNTIME_ID,
    RuntimeSpec,
)

REQUIRED_LABELS = (
    "kyma-project.io/instance-id",
    "kyma-project.io/runtime-id",
    "kyma-project.io/region",
    "operator.kyma-project.io/kyma-name",
    "kyma-project.io/broker-plan-id",
    "kyma-project.io/broker-plan-name",
    "kyma-project.io/global-account-id",
    "kyma-project.io/subaccount-id",
)
"""KIM refuses a Runtime without any of these (or with one empty)."""
DUAL_STACK_PROVIDERS = frozenset({"aws", "gcp"})
GDCH_NETWORK = {
    "apiVersion": "calico.networking.extensions.gardener.cloud/v1alpha1",
    "kind": "NetworkConfig",
    "vxlan": {"enabled": True},
    "overlay": {"enabled": True},
}


class AuditLogError(ConversionError):
    """No audit-log tenant for the Runtime's provider and region, and one is mandatory."""


def refusal_reason(exc: ConversionError) -> str:
    """The condition reason KIM reports for a refusal."""
    return "AuditLogErr" if isinstance(exc, AuditLogError) else "ConversionErr"


def check_labels(labels: dict[str, str]) -> None:
    for key in REQUIRED_LABELS:
        if not labels.get(key):
            raise ConversionError(f"missing required label {key}")


def audit_tenant(spec: RuntimeSpec, config: ConverterConfig) -> AuditLogTenant | None:
    tenant = config.audit_logging.tenant(spec.shoot.provider.type, spec.shoot.region)
    if tenant is None and config.audit_logging.mandatory:
        raise AuditLogError(
            "Failed to configure audit logs: no audit-log tenant for provider "
            f"{spec.shoot.provider.type} in region {spec.shoot.region}"
        )
    return tenant


def _provider(
    spec: RuntimeSpec, config: ConverterConfig, existing: dict[str, Any] | None
) -> dict[str, Any]:
    """`spec.provider`; `existing`: the current Shoot's `spec` (an update), else None."""
    shoot = spec.shoot
    kind = shoot.provider.type
    converter = provider_converter(kind, config)
    worker_config = (
        aws.worker_config() if kind == "aws" and config.provider.aws.enable_imd_sv2 else None
    )
    current = (existing or {}).get("provider") or {}
    workers = shoot_workers(
        [w.dump() for w in shoot.provider.workers],
        [w.dump() for w in shoot.provider.additional_workers or []],
        kind,
        shoot.networking.pods,
        config,
        current.get("workers") if existing is not None else None,
        worker_config,
    )
    dual_stack = bool(shoot.networking.dual_stack) and config.networking.enable_dual_stack_ip
    zones = zones_of(workers)
    old_infrastructure = current.get("infrastructureConfig")
    if shoot.provider.infrastructure_config is not None:
        infrastructure = copy.deepcopy(shoot.provider.infrastructure_config)
        control_plane = copy.deepcopy(shoot.provider.control_plane_config) or (
            converter.control_plane(zones, dual_stack=dual_stack)
        )
    elif old_infrastructure is None:
        infrastructure = converter.infrastructure(
            shoot.networking.nodes, zones, dual_stack=dual_stack, existing=None
        )
        control_plane = converter.control_plane(zones, dual_stack=dual_stack)
    else:
        # an update: the layout Gardener built stays unless the Runtime adds zones
        # the zones in the order the infrastructure has them, so that each keeps its subnets
        # (KIM takes the workers' order, which Gardener may have changed)
        built = (old_infrastructure.get("networks") or {}).get("zones") or []
        existing_zones = [str(z.get("name")) for z in built if isinstance(z, dict)]
        existing_zones += [
            z for z in zones_of(current.get("workers") or []) if z not in existing_zones
        ]
        added = [z for z in zones if z not in existing_zones]
        lite = kind == "azure" and azure.is_lite(old_infrastructure)
        if not added or lite:
            infrastructure = copy.deepcopy(old_infrastructure)
            old_control_plane = current.get("controlPlaneConfig")
            control_plane = (
                copy.deepcopy(old_control_plane)
                if isinstance(old_control_plane, dict)
                else converter.control_plane(zones, dual_stack=False)
            )
        else:
            merged = existing_zones + added
            infrastructure = converter.infrastructure(
                shoot.networking.nodes,
                merged,
                dual_stack=False,
                existing=old_infrastructure if converter.patches_infrastructure else None,
            )
            control_plane = converter.control_plane(merged, dual_stack=False)
    return {
        "type": kind,
        "infrastructureConfig": infrastructure,
        "controlPlaneConfig": control_plane,
        "workers": workers,
        "workersSettings": {"sshAccess": {"enabled": False}},
    }


def _networking(spec: RuntimeSpec, config: ConverterConfig) -> dict[str, Any]:
    net = spec.shoot.networking
    result: dict[str, Any] = {"nodes": net.nodes, "pods": net.pods, "services": net.services}
    if net.type:
        result["type"] = net.type
    kind = spec.shoot.provider.type
    if net.dual_stack and config.networking.enable_dual_stack_ip and kind in DUAL_STACK_PROVIDERS:
        result["ipFamilies"] = ["IPv4", "IPv6"]
    if kind == "gdch":
        result["providerConfig"] = copy.deepcopy(GDCH_NETWORK)
    return result


def shoot_for(
    runtime: dict[str, Any],
    namespace: str,
    config: ConverterConfig,
    existing: dict[str, Any] | None = None,
    acl: AclAddresses | None = None,
) -> dict[str, Any]:
    """The Shoot (for server-side apply) of a Runtime in the project namespace `namespace`;
    `existing`: the Shoot as Gardener has it now (an update), else None (a creation); `acl`:
    the ACL ConfigMap's addresses, read when the Runtime needs the ACL extension
    (`converter.acl.acl_needed`), else None."""
    meta = runtime["metadata"]
    labels = dict(meta.get("labels") or {})
    check_labels(labels)
    spec = RuntimeSpec.model_validate(runtime.get("spec") or {})
    shoot = spec.shoot
    audit = audit_tenant(spec, config)
    converter = provider_converter(shoot.provider.type, config)
    current: dict[str, Any] = (existing or {}).get("spec") or {}

    version = (shoot.kubernetes.version if shoot.kubernetes else None) or (
        config.kubernetes.default_version
    )
    version = newer(version, (current.get("kubernetes") or {}).get("version"))
    kubernetes: dict[str, Any] = {
        "version": version,
        "kubeAPIServer": common.kube_api_server(
            spec, config, audit, dict(meta.get("annotations") or {})
        ),
    }
    if config.kubernetes.kubelet.feature_gates:
        kubernetes["kubelet"] = {"featureGates": dict(config.kubernetes.kubelet.feature_gates)}

    body: dict[str, Any] = {
        "purpose": shoot.purpose,
        "region": shoot.region,
        "cloudProfile": {"kind": "CloudProfile", "name": converter.cloud_profile},
        "networking": _networking(spec, config),
        "kubernetes": kubernetes,
        "provider": _provider(spec, config, current if existing is not None else None),
        "extensions": common.extensions(
            spec, config, audit, current.get("extensions") if existing is not None else None, acl
        ),
        "maintenance": common.maintenance(spec, config),
    }
    if config.gardener.enable_credential_binding:
        body["credentialsBindingName"] = shoot.secret_binding_name
    else:
        body["secretBindingName"] = shoot.secret_binding_name
    if shoot.control_plane is not None:
        body["controlPlane"] = shoot.control_plane.dump()
    if (selector := common.seed_selector(spec)) is not None:
        body["seedSelector"] = selector
    if (restrictions := common.access_restrictions(spec)) is not None:
        body["accessRestrictions"] = restrictions
    if shoot.provider.type == "openstack":
        body["exposureClassName"] = "converged-cloud-internet"
    if (dns := common.dns(spec, config, current.get("dns") if existing else None)) is not None:
        body["dns"] = dns
    if resources := common.resources(audit, current.get("resources")):
        body["resources"] = resources
    if tolerations := config.tolerations.get(shoot.region):
        body["tolerations"] = copy.deepcopy(tolerations)
    annotations = common.metadata_annotations(spec)
    annotations[SHOOT_RUNTIME_ID] = meta["name"]
    annotations[SHOOT_GENERATION] = str(meta.get("generation", 0))
    return {
        "apiVersion": SHOOT_API_VERSION,
        "kind": "Shoot",
        "metadata": {
            "name": shoot.name,
            "namespace": namespace,
            "labels": common.metadata_labels(labels),
            "annotations": annotations,
        },
        "spec": body,
    }


def written_generation(shoot: dict[str, Any]) -> int:
    """The Runtime generation the Shoot was last written from (0: unknown)."""
    value = (shoot.get("metadata", {}).get("annotations") or {}).get(SHOOT_GENERATION, "0")
    try:
        return int(value)
    except ValueError:
        return 0
