"""The parts of a Shoot every provider shares, as KIM's extenders build them: labels and
annotations, the seed selector, EU access restrictions, the kube-apiserver (structured
authentication, service-account tokens, feature gates, audit policy), DNS, extensions,
maintenance and the structured-authentication ConfigMap the Shoot refers to."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from reconciler.infra.converter.acl import AclAddresses, acl_extension
from reconciler.infra.converter.base import Config, go_duration, seconds_of
from reconciler.infra.converter.config import AuditLogTenant, ConverterConfig, OidcProvider
from reconciler.model.infrastructure import OidcConfig, RuntimeSpec

ACCOUNT, SUBACCOUNT = "account", "subaccount"
GRACE_PERIODS = {
    "shoot.gardener.cloud/cleanup-extended-apis-finalize-grace-period-seconds": "120",
    "shoot.gardener.cloud/cleanup-kubernetes-resources-finalize-grace-period-seconds": "120",
    "shoot.gardener.cloud/cleanup-webhooks-finalize-grace-period-seconds": "60",
}
LICENCE_TYPE = "infrastructuremanager.kyma-project.io/licence-type"
SEED_REGION = "seed.gardener.cloud/region"
EU_ACCESS_REGIONS = frozenset({"cf-eu11", "cf-ch20", "cf-eu01", "cf-eu02", "cf-eu31"})
"""Platform regions whose clusters must stay in the EU (Gardener's `eu-access-only`)."""
EU_ACCESS = {
    "name": "eu-access-only",
    "options": {
        "support.gardener.cloud/eu-access-for-cluster-addons": "true",
        "support.gardener.cloud/eu-access-for-cluster-nodes": "true",
    },
}
STRUCTURED_AUTH = "structured-auth-config-{}"
TOKEN_MIN, TOKEN_MAX = 30 * 86400.0, 90 * 86400.0
AUDIT_SECRET_REFERENCE = "auditlog-credentials"
EXPERIMENTAL_AUDIT_POLICY = "operator.kyma-project.io/experimental-audit-policy"

NETWORK_FILTER = "shoot-networking-filter"
CERT = "shoot-cert-service"
DNS = "shoot-dns-service"
OIDC = "shoot-oidc-service"
AUDIT_LOG = "shoot-auditlog-service"
NVIDIA_OPENSHELL = "shoot-nvidia-openshell"


def metadata_labels(labels: dict[str, str]) -> dict[str, str]:
    return {
        ACCOUNT: labels.get("kyma-project.io/global-account-id", ""),
        SUBACCOUNT: labels.get("kyma-project.io/subaccount-id", ""),
    }


def metadata_annotations(spec: RuntimeSpec) -> dict[str, str]:
    annotations = dict(GRACE_PERIODS)
    if spec.shoot.licence_type:
        annotations[LICENCE_TYPE] = spec.shoot.licence_type
    return annotations


def seed_selector(spec: RuntimeSpec) -> Config | None:
    if spec.shoot.enforce_seed_location and spec.shoot.region:
        return {"matchLabels": {SEED_REGION: spec.shoot.region}}
    return None


def access_restrictions(spec: RuntimeSpec) -> list[Config] | None:
    if spec.shoot.platform_region in EU_ACCESS_REGIONS:
        return [copy.deepcopy(EU_ACCESS)]
    return None


def max_token_expiration(configured: str) -> str:
    """KIM's bounds: unset or under 30 days -> 30 days, over 90 days -> 90 days."""
    seconds = seconds_of(configured) if configured else 0.0
    return go_duration(min(max(seconds, TOKEN_MIN), TOKEN_MAX))


def kube_api_server(
    spec: RuntimeSpec,
    config: ConverterConfig,
    audit: AuditLogTenant | None,
    annotations: dict[str, str],
) -> Config:
    server: Config = {
        "structuredAuthentication": {"configMapName": STRUCTURED_AUTH.format(spec.shoot.name)},
        "serviceAccountConfig": {
            "extendTokenExpiration": False,
            "maxTokenExpiration": max_token_expiration(
                config.kubernetes.kube_api_server.max_token_expiration
            ),
        },
    }
    if config.kubernetes.kube_api_server.feature_gates:
        server["featureGates"] = dict(config.kubernetes.kube_api_server.feature_gates)
    if config.kubernetes.kube_api_server.runtime_config:
        server["runtimeConfig"] = dict(config.kubernetes.kube_api_server.runtime_config)
    if audit is not None:
        policy = config.audit_logging.policy_config_map_name
        if annotations.get(EXPERIMENTAL_AUDIT_POLICY, "").lower() == "true":
            policy = "experimental-audit-policy"
        server["auditConfig"] = {"auditPolicy": {"configMapRef": {"name": policy}}}
    return server


def dns(spec: RuntimeSpec, config: ConverterConfig, existing: Config | None) -> Config | None:
    """`spec.dns`: the Shoot's domain under the configured prefix, with the configured provider
    as primary; none when Gardener's own domain is used. A Shoot created before custom domains
    (its `dns` has no providers) keeps what it has."""
    if config.dns.gardener_internal:
        return None
    if existing is not None and not existing.get("providers"):
        return copy.deepcopy(existing)
    domain = f"{spec.shoot.name}.{config.dns.domain_prefix}"
    return {
        "domain": domain,
        "providers": [
            {
                "primary": True,
                "type": config.dns.provider_type,
                "domains": {"include": [domain]},
                "credentialsRef": {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "name": config.dns.secret_name,
                },
            }
        ],
    }


def _dns_extension(shoot: str, config: ConverterConfig) -> Config:
    provider_config: Config = {
        "apiVersion": "service.dns.extensions.gardener.cloud/v1alpha1",
        "kind": "DNSConfig",
        "dnsProviderReplication": {"enabled": True},
        "syncProvidersFromShootSpecDNS": True,
    }
    if not config.dns.gardener_internal:
        domain = f"{shoot}.{config.dns.domain_prefix}"
        provider_config["providers"] = [
            {
                "domains": {"include": [domain]},
                "type": config.dns.provider_type,
                "credentials": f"{DNS}-{config.dns.secret_name}",
            }
        ]
    return {"type": DNS, "providerConfig": provider_config}


def _network_filter(spec: RuntimeSpec) -> Config:
    filters = spec.security.networking.filter
    if not filters.egress.enabled:
        return {"type": NETWORK_FILTER, "disabled": True}
    extension: Config = {"type": NETWORK_FILTER, "disabled": False}
    if filters.ingress is not None and filters.ingress.enabled:
        extension["providerConfig"] = {"egressFilter": {"blackholingEnabled": True}}
    return extension


def _audit_extension(audit: AuditLogTenant) -> Config:
    return {
        "type": AUDIT_LOG,
        "providerConfig": {
            "apiVersion": "service.auditlog.extensions.gardener.cloud/v1alpha1",
            "kind": "AuditlogConfig",
            "type": "standard",
            "tenantID": audit.tenant_id,
            "serviceURL": audit.service_url,
            "secretReferenceName": AUDIT_SECRET_REFERENCE,
        },
    }


def extensions(
    spec: RuntimeSpec,
    config: ConverterConfig,
    audit: AuditLogTenant | None,
    existing: list[Config] | None,
    acl: AclAddresses | None = None,
) -> list[Config]:
    """Gardener extensions: the networking filter (when enabled in the configuration), cert
    (shoot issuers), DNS, OIDC, audit log (with a tenant), the API-server ACL (with `acl`, the
    addresses of the ACL ConfigMap: `converter/acl.py`), NVIDIA OpenShell (when the Runtime
    asks; the ACL and OpenShell switched off, not dropped, when it stops asking). On an update
    the Shoot's other extensions stay, in their order; ours replace theirs of the same type."""
    wanted: list[Config] = []
    if config.features.network_filter:
        wanted.append(_network_filter(spec))
    if existing is None:
        wanted.append(
            {
                "type": CERT,
                "providerConfig": {
                    "apiVersion": "service.cert.extensions.gardener.cloud/v1alpha1",
                    "kind": "CertConfig",
                    "shootIssuers": {"enabled": True},
                },
            }
        )
    wanted.append(_dns_extension(spec.shoot.name, config))
    if existing is None:
        wanted.append({"type": OIDC, "disabled": False})
    if audit is not None:
        wanted.append(_audit_extension(audit))
    if (api_server_acl := acl_extension(spec, acl, existing)) is not None:
        wanted.append(api_server_acl)
    present = {e.get("type") for e in existing or []}
    if spec.shoot.enable_nvidia_openshell:
        wanted.append({"type": NVIDIA_OPENSHELL, "disabled": False})
    elif NVIDIA_OPENSHELL in present:
        wanted.append({"type": NVIDIA_OPENSHELL, "disabled": True})
    result = [copy.deepcopy(e) for e in existing or []]
    for extension in wanted:
        index = next((i for i, e in enumerate(result) if e.get("type") == extension["type"]), None)
        if index is None:
            result.append(extension)
        else:
            result[index] = extension
    return result


def maintenance(spec: RuntimeSpec, config: ConverterConfig) -> Config:
    result: Config = {
        "autoUpdate": {
            "kubernetesVersion": config.kubernetes.enable_kubernetes_version_auto_update,
            "machineImageVersion": config.kubernetes.enable_machine_image_version_auto_update,
        }
    }
    window = config.maintenance_window.windows.get(spec.shoot.region)
    if spec.shoot.purpose == "production" and window is not None:
        result["timeWindow"] = window.dump()
    return result


def resources(audit: AuditLogTenant | None, existing: list[Config] | None) -> list[Config]:
    result = [copy.deepcopy(r) for r in existing or []]
    if audit is not None:
        reference = {
            "name": AUDIT_SECRET_REFERENCE,
            "resourceRef": {"apiVersion": "v1", "kind": "Secret", "name": audit.secret_name},
        }
        result = [r for r in result if r.get("name") != AUDIT_SECRET_REFERENCE] + [reference]
    return result


def _operator_oidc(spec: RuntimeSpec, default: OidcProvider) -> OidcConfig:
    api = spec.shoot.kubernetes.kube_api_server if spec.shoot.kubernetes else None
    own = api.oidc_config if api is not None else None
    if own is not None and own.issuer_url and own.client_id:
        return own
    return default.as_oidc_config()


def structured_auth_configmap(spec: RuntimeSpec, namespace: str, config: ConverterConfig) -> Config:
    """The ConfigMap `structured-auth-config-<shoot>` in the project namespace the Shoot's
    `structuredAuthentication` names: one JWT authenticator, the Runtime's `oidcConfig` when it
    names an issuer and client, else the configured default (the shared IAS tenant, or the
    operators' OIDC)."""
    oidc = _operator_oidc(spec, config.default_oidc())
    username: dict[str, Any] = {"claim": oidc.username_claim or ""}
    if oidc.username_prefix is not None:
        username["prefix"] = oidc.username_prefix
    authentication = {
        "apiVersion": "apiserver.config.k8s.io/v1beta1",
        "kind": "AuthenticationConfiguration",
        "jwt": [
            {
                "issuer": {"url": oidc.issuer_url or "", "audiences": [oidc.client_id or ""]},
                "claimMappings": {
                    "username": username,
                    "groups": {
                        "claim": oidc.groups_claim or "",
                        "prefix": oidc.groups_prefix or "",
                    },
                },
            }
        ],
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": STRUCTURED_AUTH.format(spec.shoot.name), "namespace": namespace},
        "data": {"config.yaml": yaml.safe_dump(authentication, sort_keys=False)},
    }
