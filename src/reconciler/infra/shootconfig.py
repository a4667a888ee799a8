"""What the manager configures inside a shoot once it exists: OIDC providers and the
administrators' ClusterRoleBindings. Both are owned by field manager `kim` and labelled, so what
is no longer wanted (a removed administrator, a dropped OIDC provider) is found and deleted.

OIDC: every `oidcConfig`/`additionalOidcConfig` of the Runtime becomes an `OpenIDConnect`
(`authentication.gardener.cloud/v1alpha1`, served in shoots by Gardener's OIDC webhook
authenticator extension) named `kyma-oidc-<n>`.
"""

from __future__ import annotations

from typing import Any

from reconciler.errors import KubeApiError
from reconciler.infra.states import binding_name
from reconciler.kube.client import KubeClient
from reconciler.model.infrastructure import FIELD_MANAGER, MANAGED_BY, MANAGER, RuntimeSpec

OIDC_API_VERSION = "authentication.gardener.cloud/v1alpha1"
RBAC = "rbac.authorization.k8s.io"
LABELS = {"app": "kyma", MANAGED_BY: MANAGER}
APPLY_PATCH = "application/apply-patch+yaml"
SELECTOR = ",".join(f"{k}={v}" for k, v in LABELS.items())


def oidc_objects(spec: RuntimeSpec) -> list[dict[str, Any]]:
    api = spec.shoot.kubernetes.kube_api_server if spec.shoot.kubernetes else None
    configs = [] if api is None else [api.oidc_config, *(api.additional_oidc_config or [])]
    return [
        {
            "apiVersion": OIDC_API_VERSION,
            "kind": "OpenIDConnect",
            "metadata": {"name": f"kyma-oidc-{index}", "labels": dict(LABELS)},
            "spec": config.dump(),
        }
        for index, config in enumerate(c for c in configs if c is not None)
    ]


def admin_binding(user: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": binding_name(user), "labels": dict(LABELS)},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": RBAC, "kind": "User", "name": user}],
    }


async def _converge(client: KubeClient, wanted: list[dict[str, Any]], collection: str) -> None:
    """Apply each of `wanted` at `collection` (a cluster-scoped REST path), delete ours that are
    not wanted. Plain REST on known paths: a shoot connection lives for one Runtime, and
    discovering its API groups would cost more than the work itself."""
    params = {"fieldManager": FIELD_MANAGER, "force": "true"}
    for body in wanted:
        path = f"{collection}/{body['metadata']['name']}"
        await client.request("PATCH", path, params=params, body=body, content_type=APPLY_PATCH)
    listing = await client.request("GET", collection, params={"labelSelector": SELECTOR})
    names = {body["metadata"]["name"] for body in wanted}
    for item in listing.get("items", []):
        name = item["metadata"]["name"]
        if name not in names:
            try:
                await client.request("DELETE", f"{collection}/{name}")
            except KubeApiError as exc:
                if exc.status != 404:
                    raise


async def configure_oidc(client: KubeClient, spec: RuntimeSpec) -> int:
    """Apply the Runtime's OIDC providers, delete dropped ones; return how many there are."""
    wanted = oidc_objects(spec)
    await _converge(client, wanted, f"/apis/{OIDC_API_VERSION}/openidconnects")
    return len(wanted)


async def configure_administrators(client: KubeClient, administrators: list[str]) -> None:
    """One cluster-admin binding per administrator; bindings of former administrators go."""
    wanted = [admin_binding(user) for user in administrators]
    await _converge(client, wanted, f"/apis/{RBAC}/v1/clusterrolebindings")
