"""The chart in deploy/chart rendered the way `reconciler deploy` renders it (helm_python)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reconciler.charts.render import Capabilities, SdkRenderer
from reconciler.model.kube_object import KubeObject

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "chart"
KUBE_VERSION = "v1.20.2"  # the test bed's
MINIMAL = {"mothership": {"auth": {"tokensSecret": "reconciler-tokens"}}}
"""The least a mothership needs: some authentication."""
SECRETS = {
    "mothership": {
        "auth": {"tokensSecret": "reconciler-tokens"},
        "database": {"existingSecret": "reconciler-db"},
        "encryption": {"existingSecret": "reconciler-key"},
    }
}
EVERYTHING: dict[str, Any] = {
    "mothership": {
        "replicas": 2,
        "database": {"existingSecret": "reconciler-db"},
        "encryption": {"existingSecret": "reconciler-key"},
        "auth": {
            "tokensSecret": "reconciler-tokens",
            "oidc": {"issuer": "https://issuer.example", "audience": "reconciler",
                     "groupRoles": {"ops": "operator"}},
        },
        "tls": {"enabled": True, "secretName": "reconciler-tls"},
        "autoscaling": {"enabled": True},
        "env": {"RECONCILER_RECONCILE_INTERVAL": 120},
    },
    "componentReconcilers": {"enabled": True, "tokenSecret": "reconciler-token",
                             "components": ["istio", "serverless"]},
    "operator": {"enabled": True, "watchNamespace": "kyma-system"},
    "infrastructureManager": {"enabled": True, "gardenKubeconfigSecret": "garden",
                              "converterConfig": {"converter": {"kubernetes": {
                                  "defaultVersion": "1.33.4"}}}},
}  # fmt: skip


def merged(*layers: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if isinstance(value, dict) and isinstance(result.get(key), dict):
                result[key] = merged(result[key], value)
            else:
                result[key] = value
    return result


async def render(
    values: dict[str, Any], *, namespace: str = "reconciler-system", release: str = "reconciler"
) -> list[KubeObject]:
    """CRDs first, then the templates' objects, as the core applies them."""
    return await SdkRenderer().render(
        CHART,
        release=release,
        namespace=namespace,
        values=values,
        capabilities=Capabilities(kube_version=KUBE_VERSION),
    )


def by_kind(objects: list[KubeObject], kind: str) -> list[dict[str, Any]]:
    return [o.raw for o in objects if o.kind == kind]
