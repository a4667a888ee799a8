"""Cluster specs for mothership tests."""

from __future__ import annotations

import datetime as dt
from typing import Any

from reconciler.model.cluster import ClusterSpec, ClusterState
from reconciler.model.status import ClusterStatus

SAMPLE_COMPONENTS = (
    "cluster-essentials",
    "istio",
    "certificates",
    "app-gateway",
    "eventing",
    "monitoring",
    "serverless",
)


def cluster_spec(
    runtime_id: str,
    kubeconfig: str = "apiVersion: v1\nkind: Config\n",
    components: tuple[str, ...] = SAMPLE_COMPONENTS,
    version: str = "2.4.0",
    configuration: dict[str, list[dict[str, Any]]] | None = None,
    **extra: Any,
) -> ClusterSpec:
    return ClusterSpec.model_validate(
        {
            "runtimeID": runtime_id,
            "runtimeInput": {"name": runtime_id, "description": "test cluster"},
            "kubeconfig": kubeconfig,
            "metadata": {"globalAccountID": "ga", "region": "local"},
            "kymaConfig": {
                "version": version,
                "profile": "evaluation",
                "administrators": ["admin@example.com"],
                "components": [
                    {"component": name, "configuration": (configuration or {}).get(name, [])}
                    for name in components
                ],
            },
            **extra,
        }
    )


def reconciling(spec: ClusterSpec) -> ClusterState:
    """The state an operation of `spec`'s first versions works on."""
    return ClusterState(
        runtime_id=spec.runtime_id,
        cluster_version=1,
        config_version=1,
        status=ClusterStatus.RECONCILING,
        status_changed=dt.datetime.now(dt.UTC),
        spec=spec,
    )
