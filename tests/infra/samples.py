"""Runtime bodies for the infrastructure manager's tests (as KEB would write them), the
converter configuration they run with, and complete Shoots for the Gardener client's tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reconciler.infra.converter.config import load_converter_config
from reconciler.infra.shoot import shoot_for
from reconciler.model.infrastructure import API_VERSION, KYMA_NAME, RUNTIME_ID

CONVERTER_CONFIG = Path(__file__).parent / "fixtures" / "converter-config.yaml"
CONVERTER = load_converter_config(CONVERTER_CONFIG)


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
                "kyma-project.io/instance-id": f"instance-{name}",
                "kyma-project.io/broker-plan-id": "361c511f-f939-4621-b228-d0fb79a1fe15",
                "kyma-project.io/broker-plan-name": "aws",
                "kyma-project.io/global-account-id": "ga-1",
                "kyma-project.io/subaccount-id": "sa-1",
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


def shoot(name: str, namespace: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """A Shoot Gardener accepts, as the converter makes it of a sample Runtime; without the
    structured authentication (whose ConfigMap the client's tests do not write)."""
    body = shoot_for(runtime(name, "unused", shoot=name), namespace, CONVERTER)
    del body["spec"]["kubernetes"]["kubeAPIServer"]["structuredAuthentication"]
    body["metadata"]["annotations"].update(annotations or {})
    return body
