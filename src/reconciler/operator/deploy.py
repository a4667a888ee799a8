"""Self-hosting: the objects that run the operator inside a cluster (the seeds' single-cluster
setup, where it reconciles its own cluster and manages itself), and their installation.

CRDs, a ServiceAccount, a ClusterRole bound to it (modules are arbitrary charts: the operator
needs what they need, so the role is wide; narrow it for a known module set), and a one-replica
Deployment running `reconciler operator run` with metrics on port 8080. No image is built here:
docs/operator.md says how.
"""

from __future__ import annotations

from typing import Any

from reconciler.kube.cluster import Cluster
from reconciler.operator.crds import all_crds
from reconciler.operator.install import install_crds
from reconciler.operator.resources import FIELD_MANAGER
from reconciler.version import __version__

NAME = "reconciler-operator"
METRICS_PORT = 8080


def _labels() -> dict[str, str]:
    return {"app.kubernetes.io/name": NAME, "app.kubernetes.io/version": __version__}


def operator_objects(namespace: str, image: str) -> list[dict[str, Any]]:
    """ServiceAccount, ClusterRole, ClusterRoleBinding and Deployment, in that order."""
    meta = {"name": NAME, "namespace": namespace, "labels": _labels()}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": NAME, "labels": _labels()},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": NAME, "labels": _labels()},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": NAME,
            },
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}],
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {
                "replicas": 1,
                "strategy": {"type": "Recreate"},  # never two operators on one set of Kymas
                "selector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
                "template": {
                    "metadata": {"labels": _labels()},
                    "spec": {
                        "serviceAccountName": NAME,
                        "securityContext": {"runAsNonRoot": True, "runAsUser": 65532},
                        "containers": [
                            {
                                "name": "operator",
                                "image": image,
                                "args": [
                                    "operator",
                                    "run",
                                    "--metrics-port",
                                    str(METRICS_PORT),
                                ],
                                "ports": [
                                    {
                                        "name": "metrics",
                                        "containerPort": METRICS_PORT,
                                        "protocol": "TCP",
                                    }
                                ],
                                "resources": {
                                    "requests": {"cpu": "250m", "memory": "256Mi"},
                                    "limits": {"memory": "1Gi"},
                                },
                                "securityContext": {
                                    "allowPrivilegeEscalation": False,
                                    "readOnlyRootFilesystem": False,
                                },
                            }
                        ],
                    },
                },
            },
        },
    ]


def all_objects(namespace: str, image: str) -> list[dict[str, Any]]:
    namespace_object = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    return [*all_crds(), namespace_object, *operator_objects(namespace, image)]


async def deploy(
    cluster: Cluster, *, namespace: str, image: str, dry_run: bool = False
) -> list[str]:
    """Install (or, with `dry_run`, have the apiserver validate) everything; return what."""
    done: list[str] = []
    if dry_run:
        objects = all_objects(namespace, image)
    else:
        done += [f"customresourcedefinition {name}" for name in await install_crds(cluster)]
        objects = all_objects(namespace, image)[len(all_crds()) :]
    for body in objects:
        live = await cluster.apply(body, dry_run=dry_run, field_manager=FIELD_MANAGER)
        done.append(f"{live.kind.lower()} {live.name}")
    return done
