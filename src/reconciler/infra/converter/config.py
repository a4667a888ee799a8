"""The converter's configuration, as KIM has it (`converter` of its `converter_config.json`):
defaults per provider, machine image, Kubernetes version, DNS, audit-log tenants per provider and
region, maintenance windows, feature switches. Loaded from the file (or mounted ConfigMap key)
the setting `RECONCILER_INFRA_CONVERTER_CONFIG` names, validated at start-up; without it the
built-in defaults below (a development landscape: Gardener's own DNS, no audit log).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from reconciler.errors import ReconcilerError
from reconciler.infra.converter.base import ConversionError, seconds_of
from reconciler.model.infrastructure import OidcConfig
from reconciler.model.resource import ResourceModel

SETTING = "RECONCILER_INFRA_CONVERTER_CONFIG"


class ConverterConfigError(ReconcilerError):
    """The converter configuration cannot be used; the message is one line naming the setting."""


class OidcProvider(ResourceModel):
    client_id: str = Field(alias="clientID", min_length=1)
    issuer_url: str = Field(alias="issuerURL", min_length=1)
    groups_claim: str = "groups"
    groups_prefix: str | None = None
    signing_algs: list[str] = Field(default_factory=lambda: ["RS256"])
    username_claim: str = "sub"
    username_prefix: str = "-"

    def as_oidc_config(self) -> OidcConfig:
        """The provider in the Runtime's terms (`oidcConfig`)."""
        return OidcConfig.model_validate(self.dump())


def _check_duration(value: str) -> None:
    try:
        seconds_of(value)
    except ConversionError as exc:
        raise ValueError(str(exc)) from None


class AclConfig(ResourceModel):
    config_map_name: str = ""
    """The ConfigMap (in the Runtimes' namespace of the control plane, KIM's `kcp-system`)
    with the operators' CIDRs and the control plane's NAT address for the API-server ACL;
    required when `RECONCILER_INFRA_API_SERVER_ACL_ENABLED` is on (`converter/acl.py`)."""


class KubeApiServerConfig(ResourceModel):
    acl: AclConfig = Field(default_factory=AclConfig)
    max_token_expiration: str = ""

    @field_validator("max_token_expiration")
    @classmethod
    def _duration(cls, value: str) -> str:
        if value:
            _check_duration(value)
        return value

    runtime_config: dict[str, bool] | None = None
    feature_gates: dict[str, bool] | None = None


class KubeletConfig(ResourceModel):
    feature_gates: dict[str, bool] | None = None


class KubernetesConfig(ResourceModel):
    default_version: str = Field(min_length=1)
    enable_kubernetes_version_auto_update: bool = True
    enable_machine_image_version_auto_update: bool = False
    default_operator_oidc: OidcProvider
    kube_api_server: KubeApiServerConfig = Field(default_factory=KubeApiServerConfig)
    kubelet: KubeletConfig = Field(default_factory=KubeletConfig)


class DnsConfig(ResourceModel):
    secret_name: str = ""
    domain_prefix: str = ""
    provider_type: str = ""

    @property
    def gardener_internal(self) -> bool:
        """No DNS configured: Gardener's own default domain (no `spec.dns`)."""
        return not (self.secret_name or self.domain_prefix or self.provider_type)

    @model_validator(mode="after")
    def _all_or_nothing(self) -> DnsConfig:
        if not self.gardener_internal and not (
            self.secret_name and self.domain_prefix and self.provider_type
        ):
            raise ValueError("dns needs secretName, domainPrefix and providerType, or none")
        return self


class AwsConfig(ResourceModel):
    enable_imd_sv2: bool = Field(default=False, alias="enableIMDSv2")


class GdchConfig(ResourceModel):
    cloud_profile_name: str = ""
    parent_reference_name: str = ""
    parent_reference_namespace: str = ""
    parent_reference_type: str = ""


class WorkerConfig(ResourceModel):
    default_max_evict_retries: int = 2
    default_machine_drain_timeout: str = "15m"

    @field_validator("default_max_evict_retries", mode="before")
    @classmethod
    def _retries(cls, value: Any) -> Any:
        return 2 if value in ("", None) else value

    @field_validator("default_machine_drain_timeout", mode="before")
    @classmethod
    def _timeout(cls, value: Any) -> Any:
        return "15m" if value in ("", None) else value

    @field_validator("default_machine_drain_timeout")
    @classmethod
    def _duration(cls, value: str) -> str:
        _check_duration(value)
        return value


class ProviderConfig(ResourceModel):
    aws: AwsConfig = Field(default_factory=AwsConfig)
    gdch: GdchConfig = Field(default_factory=GdchConfig)
    worker: WorkerConfig = Field(default_factory=WorkerConfig)


class MachineImageConfig(ResourceModel):
    default_name: str = Field(min_length=1)
    default_version: str = Field(min_length=1)


class GardenerConfig(ResourceModel):
    project_name: str = ""
    enable_credential_binding: bool = True


class AuditLogTenant(ResourceModel):
    tenant_id: str = Field(alias="tenantID", min_length=1)
    service_url: str = Field(alias="serviceURL", min_length=1)
    secret_name: str = Field(min_length=1)


class AuditLogConfig(ResourceModel):
    policy_config_map_name: str = "audit-policy"
    tenant_config_path: str = ""
    """KIM's separate file `{provider: {region: {tenantID, serviceURL, secretName}}}`."""
    tenants: dict[str, dict[str, AuditLogTenant]] = Field(default_factory=dict)
    """The same, inline (ours; merged over the file's)."""
    mandatory: bool = False
    """KIM's `--audit-log-mandatory`: a Runtime without a tenant for its provider and region is
    refused (`Failed`, `AuditLogErr`) instead of created without audit logging."""

    def tenant(self, provider: str, region: str) -> AuditLogTenant | None:
        return self.tenants.get(provider, {}).get(region)


class TimeWindow(ResourceModel):
    begin: str = Field(pattern=r"^\d{6}[+-]\d{4}$")
    end: str = Field(pattern=r"^\d{6}[+-]\d{4}$")


class MaintenanceWindowConfig(ResourceModel):
    window_map_path: str = ""
    windows: dict[str, TimeWindow] = Field(default_factory=dict)
    """Region -> time window, for `production` Runtimes (KIM: the file at `windowMapPath`)."""


class NetworkingConfig(ResourceModel):
    enable_dual_stack_ip: bool = Field(default=False, alias="enableDualStackIP")


class FeaturesConfig(ResourceModel):
    network_filter: bool = True
    """KIM's `--network-filtering-enabled`: the `shoot-networking-filter` extension per Runtime."""


class ClusterConfig(ResourceModel):
    """KIM's `cluster` section (beside `converter` in its file)."""

    default_shared_ias_tenant: OidcProvider | None = Field(
        default=None, alias="defaultSharedIASTenant"
    )
    """The OIDC provider of a Runtime that names none of its own: its `OpenIDConnect` in the
    shoot, and its structured authentication. None: the Runtime's `oidcConfig` for the former,
    `kubernetes.defaultOperatorOidc` for the latter."""


class ConverterConfig(ResourceModel):
    kubernetes: KubernetesConfig
    dns: DnsConfig = Field(default_factory=DnsConfig)
    provider: ProviderConfig = Field(default_factory=ProviderConfig)
    machine_image: MachineImageConfig
    gardener: GardenerConfig = Field(default_factory=GardenerConfig)
    audit_logging: AuditLogConfig = Field(default_factory=AuditLogConfig)
    maintenance_window: MaintenanceWindowConfig = Field(default_factory=MaintenanceWindowConfig)
    tolerations: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    networking: NetworkingConfig = Field(default_factory=NetworkingConfig)
    features: FeaturesConfig = Field(default_factory=FeaturesConfig)
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    """KIM's `cluster` section; in KIM's whole file it stands beside `converter`."""

    def default_oidc(self) -> OidcProvider:
        """The OIDC provider a Runtime without its own gets for its structured authentication:
        the shared IAS tenant when configured (as KIM), else the operators' default."""
        return self.cluster.default_shared_ias_tenant or self.kubernetes.default_operator_oidc


DEFAULT = ConverterConfig.model_validate(
    {
        "kubernetes": {
            "defaultVersion": "1.33.4",
            "defaultOperatorOidc": {
                "clientID": "kyma-operators",
                "issuerURL": "https://kyma.accounts.example.com",
            },
        },
        "machineImage": {"defaultName": "gardenlinux", "defaultVersion": "1877.4.0"},
    }
)


def _read(path: Path) -> Any:
    text = path.read_text()
    return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)


def _one_line(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in error['loc']) or '(top)'}: {error['msg']}"
        for error in exc.errors()[:3]
    )


def load_converter_config(path: Path | None) -> ConverterConfig:
    """The configuration at `path` (JSON or YAML; KIM's whole file with its `converter` key and
    its `cluster` section, or the converter object alone), the files it names read too; `None`:
    the defaults."""
    if path is None:
        return DEFAULT
    try:
        data = _read(path)
        if isinstance(data, dict) and "converter" in data:
            cluster = data.get("cluster")
            data = data["converter"]
            if isinstance(data, dict) and cluster is not None:
                data = {**data, "cluster": cluster}
        config = ConverterConfig.model_validate(data)
        audit = config.audit_logging
        if audit.tenant_config_path:
            tenants = dict(_read(Path(audit.tenant_config_path)) or {})
            for provider, regions in audit.tenants.items():
                tenants.setdefault(provider, {}).update(
                    {region: t.dump() for region, t in regions.items()}
                )
            config = config.model_copy(
                update={
                    "audit_logging": AuditLogConfig.model_validate(
                        {**audit.dump(), "tenants": tenants}
                    )
                }
            )
        window = config.maintenance_window
        if window.window_map_path:
            windows = dict(_read(Path(window.window_map_path)) or {})
            windows.update({r: w.dump() for r, w in window.windows.items()})
            config = config.model_copy(
                update={
                    "maintenance_window": MaintenanceWindowConfig.model_validate(
                        {**window.dump(), "windows": windows}
                    )
                }
            )
    except ValidationError as exc:
        raise ConverterConfigError(f"{SETTING} ({path}): {_one_line(exc)}") from None
    except (OSError, ValueError, yaml.YAMLError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConverterConfigError(f"{SETTING} ({path}): {message}") from None
    return config
