"""Runtime -> Shoot: the Gardener Shoot a Runtime describes (KIM's converter, the fields we keep).

The Shoot carries the Runtime's id and generation as annotations: the generation says which
version of the Runtime Gardener was last given, so a Shoot is patched only for a newer one.
"""

from __future__ import annotations

from typing import Any

from reconciler.infra.gardener import SHOOT_API_VERSION
from reconciler.model.infrastructure import SHOOT_GENERATION, SHOOT_RUNTIME_ID, RuntimeSpec

CLOUD_PROFILES = {"aws": "aws", "azure": "az", "gcp": "gcp", "openstack": "converged-cloud-kyma"}


def shoot_for(runtime: dict[str, Any], namespace: str) -> dict[str, Any]:
    """The Shoot (for server-side apply) of a Runtime, in the project namespace `namespace`."""
    meta = runtime["metadata"]
    spec = RuntimeSpec.model_validate(runtime.get("spec") or {})
    shoot = spec.shoot
    provider: dict[str, Any] = {
        "type": shoot.provider.type,
        "workers": [
            w.dump() for w in [*shoot.provider.workers, *(shoot.provider.additional_workers or [])]
        ],
    }
    if shoot.provider.control_plane_config is not None:
        provider["controlPlaneConfig"] = shoot.provider.control_plane_config
    if shoot.provider.infrastructure_config is not None:
        provider["infrastructureConfig"] = shoot.provider.infrastructure_config
    kubernetes: dict[str, Any] = {}
    if shoot.kubernetes is not None:
        if shoot.kubernetes.version:
            kubernetes["version"] = shoot.kubernetes.version
        api = shoot.kubernetes.kube_api_server
        if api is not None and api.oidc_config is not None:
            kubernetes["kubeAPIServer"] = {"oidcConfig": api.oidc_config.dump()}
    body: dict[str, Any] = {
        "purpose": shoot.purpose,
        "region": shoot.region,
        "secretBindingName": shoot.secret_binding_name,
        "cloudProfileName": CLOUD_PROFILES[shoot.provider.type],
        "networking": shoot.networking.dump(),
        "provider": provider,
    }
    if kubernetes:
        body["kubernetes"] = kubernetes
    if shoot.control_plane is not None:
        body["controlPlane"] = shoot.control_plane.dump()
    return {
        "apiVersion": SHOOT_API_VERSION,
        "kind": "Shoot",
        "metadata": {
            "name": shoot.name,
            "namespace": namespace,
            "annotations": {
                SHOOT_RUNTIME_ID: meta["name"],
                SHOOT_GENERATION: str(meta.get("generation", 0)),
            },
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
