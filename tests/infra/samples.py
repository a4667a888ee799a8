"""Runtime bodies for the infrastructure manager's tests (as KEB would write them)."""

from __future__ import annotations

from typing import Any

from reconciler.model.infrastructure import API_VERSION, KYMA_NAME, RUNTIME_ID


def worker(name: str = "cpu-worker-0", maximum: int = 3, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "machine": {"type": "m6i.large", "image": {"name": "gardenlinux", "version": "1592.1"}},
        "minimum": 1,
        "maximum": maximum,
        "maxSurge": 1,
        "maxUnavailable": 0,
        "zones": ["eu-central-1a"],
        "volume": {"type": "gp3", "size": "50Gi"},
        **extra,
    }


def runtime(
    name: str,
    namespace: str,
    *,
    shoot: str | None = None,
    administrators: tuple[str, ...] = ("admin@example.com",),
    workers: list[dict[str, Any]] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "Runtime",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                RUNTIME_ID: name,
                KYMA_NAME: name,
                "kyma-project.io/global-account-id": "ga-1",
                "kyma-project.io/region": "eu-central-1",
            },
            "annotations": annotations or {},
        },
        "spec": {
            "shoot": {
                "name": shoot or f"s-{name[:8]}",
                "purpose": "production",
                "region": "eu-central-1",
                "platformRegion": "cf-eu10",
                "secretBindingName": "aws-binding",
                "kubernetes": {
                    "version": "1.30",
                    "kubeAPIServer": {
                        "oidcConfig": {
                            "clientID": "kyma",
                            "issuerURL": "https://issuer.example.com",
                            "groupsClaim": "groups",
                            "usernameClaim": "sub",
                            "usernamePrefix": "-",
                            "signingAlgs": ["RS256"],
                        }
                    },
                },
                "provider": {"type": "aws", "workers": workers or [worker()]},
                "networking": {
                    "type": "calico",
                    "pods": "100.64.0.0/12",
                    "nodes": "10.250.0.0/16",
                    "services": "100.104.0.0/13",
                },
            },
            "security": {
                "administrators": list(administrators),
                "networking": {"filter": {"egress": {"enabled": False}}},
            },
        },
    }
