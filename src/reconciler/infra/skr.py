"""What the manager configures inside a shoot (the SKR) once it exists, as KIM does, so a cluster
KIM configured can be taken over and handed back: the `kyma-system` namespace, the
`kyma-provisioning-info` ConfigMap, the `OpenIDConnect` resources and the administrators'
`cluster-admin` ClusterRoleBindings.

Objects are recognised by KIM's labels, not by names of our own: KIM creates a binding with a
generated name (`admin-xxxxx`) labelled `reconciler.kyma-project.io/managed-by:
infrastructure-manager`, so an administrator counts as bound when any such binding names them
as a `User` subject, and a binding of that label naming none of the administrators is removed.
Bindings the manager wrote before it followed KIM's label (`app: kyma`,
`operator.kyma-project.io/managed-by`) count the same way, so an upgrade leaves no duplicate.
OpenIDConnect resources are KIM's `kyma-oidc-<n>` labelled `operator.kyma-project.io/managed-by:
infrastructure-manager`: applied under the same names (adopted), surplus ones deleted.
"""

from __future__ import annotations

from typing import Any

import yaml

from reconciler.errors import KubeApiError
from reconciler.infra.converter.config import OidcProvider
from reconciler.infra.states import binding_name, runtime_id
from reconciler.kube.client import KubeClient
from reconciler.model.infrastructure import (
    FIELD_MANAGER,
    MANAGED_BY,
    MANAGER,
    AdditionalOidcConfig,
    OidcConfig,
    RuntimeSpec,
)
from reconciler.model.kube_object import Body
from reconciler.model.seeds import seed_provider

RBAC = "rbac.authorization.k8s.io"
OIDC_API_VERSION = "authentication.gardener.cloud/v1alpha1"
OIDC_EXTENSION = "shoot-oidc-service"
RECONCILER_MANAGED_BY = "reconciler.kyma-project.io/managed-by"
BINDING_LABELS = {RECONCILER_MANAGED_BY: MANAGER}
"""KIM's label on the administrators' bindings (and on the provisioning-info ConfigMap)."""
LEGACY_BINDING_LABELS = {"app": "kyma", MANAGED_BY: MANAGER}
"""What this manager labelled its bindings with before it followed KIM."""
OIDC_LABELS = {MANAGED_BY: MANAGER}
KYMA_SYSTEM = "kyma-system"
PROVISIONING_INFO = "kyma-provisioning-info"
APPLY_PATCH = "application/apply-patch+yaml"
BINDINGS = f"/apis/{RBAC}/v1/clusterrolebindings"
OPENIDCONNECTS = f"/apis/{OIDC_API_VERSION}/openidconnects"


def _selector(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in labels.items())


async def _apply(client: KubeClient, path: str, body: Body) -> None:
    params = {"fieldManager": FIELD_MANAGER, "force": "true"}
    await client.request("PATCH", path, params=params, body=body, content_type=APPLY_PATCH)


async def _delete(client: KubeClient, path: str) -> None:
    try:
        await client.request("DELETE", path)
    except KubeApiError as exc:
        if exc.status != 404:
            raise


# --- kyma-system and the provisioning info ------------------------------------------------------


async def ensure_kyma_system(client: KubeClient) -> None:
    """The `kyma-system` namespace (KIM creates it; one that exists is left as it is)."""
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KYMA_SYSTEM}}
    try:
        await client.request("POST", "/api/v1/namespaces", body=body)
    except KubeApiError as exc:
        if exc.status != 409:
            raise


def _pool(worker: dict[str, Any]) -> dict[str, Any]:
    zones = worker.get("zones") or []
    return {
        "name": worker.get("name", ""),
        "machineType": (worker.get("machine") or {}).get("type", ""),
        "haZones": len(zones) >= 3 and len(zones) % 2 == 1,
        "autoScalerMin": worker.get("minimum", 0),
        "autoScalerMax": worker.get("maximum", 0),
    }


def provisioning_info(runtime: Body, shoot: Body, seed: Body | None = None) -> dict[str, Any]:
    """KIM's `kyma-provisioning-info` details: the worker pools (the first is Kyma's), the
    account and instance ids from the Runtime's labels, the regions (the seed's region: of
    `seed`, the Seed the Shoot is placed on), the shoot's infrastructure config, its last
    reconcile time and its network details. Empty values are left out."""
    labels = runtime["metadata"].get("labels") or {}
    spec = (runtime.get("spec") or {}).get("shoot") or {}
    provider = spec.get("provider") or {}
    workers = provider.get("workers") or []
    shoot_spec = shoot.get("spec") or {}
    families = ((shoot_spec.get("networking") or {}).get("ipFamilies")) or []
    pools: dict[str, Any] = {"kyma": _pool(workers[0]) if workers else _pool({})}
    custom = [_pool(w) for w in provider.get("additionalWorkers") or []]
    if custom:
        pools["custom"] = custom
    network: dict[str, Any] = {"dualStackIPEnabled": sorted(families) == ["IPv4", "IPv6"]}
    acl = (((spec.get("kubernetes") or {}).get("kubeAPIServer") or {}).get("acl") or {}).get(
        "allowedCIDRs"
    )
    if acl and provider.get("type") in ("aws", "azure"):
        network["kubeAPIServer"] = {"acl": list(acl)}
    last = ((shoot.get("status") or {}).get("lastOperation") or {}).get("lastUpdateTime")
    details: dict[str, Any] = {
        "workerPools": pools,
        "globalAccountID": labels.get("kyma-project.io/global-account-id"),
        "subaccountID": labels.get("kyma-project.io/subaccount-id"),
        "environmentInstanceID": labels.get("kyma-project.io/instance-id"),
        "instanceName": labels.get("operator.kyma-project.io/kyma-name"),
        "runtimeID": runtime_id(runtime),
        "instanceID": labels.get("kyma-project.io/instance-id"),
        "lastReconcileTime": last,
        "region": spec.get("region"),
        "platformRegion": spec.get("platformRegion"),
        "infrastructureConfig": (shoot_spec.get("provider") or {}).get("infrastructureConfig"),
        "networkDetails": network,
        "seedRegion": seed_provider(seed)[1] if seed is not None else None,
    }
    return {key: value for key, value in details.items() if value not in (None, "", {})}


def provisioning_info_configmap(runtime: Body, shoot: Body, seed: Body | None = None) -> Body:
    details = yaml.safe_dump(provisioning_info(runtime, shoot, seed), sort_keys=True)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": PROVISIONING_INFO,
            "namespace": KYMA_SYSTEM,
            "labels": dict(BINDING_LABELS),
        },
        "data": {"details": details},
    }


async def apply_provisioning_info(
    client: KubeClient, runtime: Body, shoot: Body, seed: Body | None = None
) -> None:
    path = f"/api/v1/namespaces/{KYMA_SYSTEM}/configmaps/{PROVISIONING_INFO}"
    await _apply(client, path, provisioning_info_configmap(runtime, shoot, seed))


# --- OIDC ----------------------------------------------------------------------------------------


def oidc_enabled(shoot: Body) -> bool:
    """KIM configures OpenIDConnect resources only where the shoot's OIDC extension runs; a
    Shoot that does not list the extension is taken as having it (KIM's converter always adds
    it, enabled)."""
    for extension in (shoot.get("spec") or {}).get("extensions") or []:
        if extension.get("type") == OIDC_EXTENSION:
            return not extension.get("disabled", False)
    return True


def _complete(config: OidcConfig | None) -> bool:
    return config is not None and bool(config.client_id) and bool(config.issuer_url)


def oidc_configs(spec: RuntimeSpec, shared: OidcProvider | None = None) -> list[OidcConfig]:
    """The providers KIM turns into OpenIDConnect resources: `additionalOidcConfig`; an empty
    list means none; a missing one, or one with an entry lacking client id or issuer, means the
    default: `shared`, the shared IAS tenant of the converter configuration, as KIM; without
    one configured, the Runtime's own `oidcConfig` when it names both."""
    api = spec.shoot.kubernetes.kube_api_server if spec.shoot.kubernetes else None
    additional: list[AdditionalOidcConfig] | None = (
        None if api is None else api.additional_oidc_config
    )
    if additional is not None and all(_complete(c) for c in additional):
        return list(additional)
    if shared is not None:
        return [shared.as_oidc_config()]
    default = None if api is None else api.oidc_config
    return [default] if default is not None and _complete(default) else []


def openidconnect(config: OidcConfig, index: int) -> Body:
    """One provider in the OIDC webhook authenticator's API (`OIDCAuthenticationSpec`)."""
    spec: dict[str, Any] = {"issuerURL": config.issuer_url, "clientID": config.client_id}
    for field, value in (
        ("usernameClaim", config.username_claim),
        ("usernamePrefix", config.username_prefix),
        ("groupsClaim", config.groups_claim),
        ("groupsPrefix", config.groups_prefix),
        ("requiredClaims", config.required_claims),
        ("supportedSigningAlgs", config.signing_algs),
    ):
        if value:
            spec[field] = value
    jwks = getattr(config, "jwks", None)
    if jwks:
        spec["jwks"] = {"keys": jwks}
    return {
        "apiVersion": OIDC_API_VERSION,
        "kind": "OpenIDConnect",
        "metadata": {"name": f"kyma-oidc-{index}", "labels": dict(OIDC_LABELS)},
        "spec": spec,
    }


async def configure_oidc(
    client: KubeClient, spec: RuntimeSpec, shared: OidcProvider | None = None
) -> int:
    """Apply `kyma-oidc-<n>` for each provider (adopting KIM's objects of those names), then
    delete the labelled ones beyond them; return how many there are. `shared`: the default
    provider (see `oidc_configs`)."""
    configs = oidc_configs(spec, shared)
    wanted = [openidconnect(config, index) for index, config in enumerate(configs)]
    for body in wanted:
        await _apply(client, f"{OPENIDCONNECTS}/{body['metadata']['name']}", body)
    names = {body["metadata"]["name"] for body in wanted}
    listing = await client.request(
        "GET", OPENIDCONNECTS, params={"labelSelector": _selector(OIDC_LABELS)}
    )
    for item in listing.get("items", []):
        if item["metadata"]["name"] not in names:
            await _delete(client, f"{OPENIDCONNECTS}/{item['metadata']['name']}")
    return len(wanted)


# --- administrators ------------------------------------------------------------------------------


def _ours(binding: Body) -> bool:
    labels = binding.get("metadata", {}).get("labels") or {}
    return any(
        all(labels.get(k) == v for k, v in wanted.items())
        for wanted in (BINDING_LABELS, LEGACY_BINDING_LABELS)
    )


def _users(binding: Body) -> set[str]:
    return {
        str(s.get("name"))
        for s in binding.get("subjects") or []
        if s.get("kind") == "User" and s.get("name")
    }


def _cluster_admin(binding: Body) -> bool:
    ref = binding.get("roleRef") or {}
    return ref.get("kind") == "ClusterRole" and ref.get("name") == "cluster-admin"


def admin_binding(user: str) -> Body:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": binding_name(user), "labels": dict(BINDING_LABELS)},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": RBAC, "kind": "User", "name": user}],
    }


def admin_changes(bindings: list[Body], administrators: list[str]) -> tuple[list[str], list[Body]]:
    """(names of the bindings to delete, bindings to create): ours (KIM's label, or our former
    one) binding `cluster-admin` to users none of whom is an administrator go; an administrator
    no binding of ours names gets one. Bindings of anyone else are never touched."""
    ours = [b for b in bindings if _ours(b) and _cluster_admin(b)]
    admins = set(administrators)
    removed = [b["metadata"]["name"] for b in ours if _users(b) and not _users(b) & admins]
    bound = set().union(*(_users(b) for b in ours)) if ours else set()
    missing = [admin_binding(user) for user in dict.fromkeys(administrators) if user not in bound]
    return removed, missing


async def configure_administrators(client: KubeClient, administrators: list[str]) -> None:
    """One cluster-admin binding per administrator, found by KIM's label and subject; bindings
    of former administrators go."""
    listing = await client.request("GET", BINDINGS)
    removed, missing = admin_changes(list(listing.get("items", [])), administrators)
    for name in removed:
        await _delete(client, f"{BINDINGS}/{name}")
    for body in missing:
        await _apply(client, f"{BINDINGS}/{body['metadata']['name']}", body)
