"""Self-hosting: the objects that run the operator inside a cluster (the seeds' single-cluster
setup, where it reconciles its own cluster and manages itself), and their installation.

They are the Helm chart's (`deploy/chart`, docs/deploy.md) with only the operator enabled, so
`reconciler operator deploy`, `helm install` and `reconciler deploy --workspace deploy` give the
operator one and the same ServiceAccount, ClusterRole (every verb named, no wildcard: what the
operator uses plus the chart's default `operator.moduleRules`), binding and one-replica
Deployment running `reconciler operator run` in-cluster with metrics on port 8080. The image is
`make image`'s.
"""

from __future__ import annotations

from typing import Any

from reconciler.charts.render import SdkRenderer
from reconciler.kube.cluster import Cluster
from reconciler.model.lifecycle import FIELD_MANAGER
from reconciler.operator.clusters.crds import all_crds
from reconciler.operator.clusters.install import install_crds
from reconciler.paths import deploy_chart

RELEASE = "reconciler"
NAME = f"{RELEASE}-operator"
METRICS_PORT = 8080


def chart_values(image: str) -> dict[str, Any]:
    """The chart's values for an operator alone, running `image` (`repo[:tag]`, `repo@digest`)."""
    repository, tag, digest = image, "", ""
    if "@" in image:
        repository, digest = image.split("@", 1)
    elif ":" in image.rsplit("/", 1)[-1]:
        repository, tag = image.rsplit(":", 1)
    return {
        "image": {"repository": repository, "tag": tag, "digest": digest},
        "mothership": {"enabled": False},
        "operator": {"enabled": True, "metrics": {"port": METRICS_PORT}},
    }


async def all_objects(namespace: str, image: str) -> list[dict[str, Any]]:
    """CRDs, the namespace, then ServiceAccount, ClusterRole, ClusterRoleBinding, Deployment."""
    rendered = await SdkRenderer().render(
        deploy_chart(), release=RELEASE, namespace=namespace, values=chart_values(image)
    )
    # the operator's own CRDs, as the models generate them (the chart's are the same, kept)
    rest = [o.raw for o in rendered if o.kind != "CustomResourceDefinition"]
    namespace_object = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    return [*all_crds(), namespace_object, *rest]


async def deploy(
    cluster: Cluster, *, namespace: str, image: str, dry_run: bool = False
) -> list[str]:
    """Install (or, with `dry_run`, have the apiserver validate) everything; return what."""
    done: list[str] = []
    objects = await all_objects(namespace, image)
    if not dry_run:  # installed and waited for: the Deployment's operator watches them at once
        done += [f"customresourcedefinition {name}" for name in await install_crds(cluster)]
        objects = [o for o in objects if o["kind"] != "CustomResourceDefinition"]
    for body in objects:
        live = await cluster.apply(body, dry_run=dry_run, field_manager=FIELD_MANAGER)
        done.append(f"{live.kind.lower()} {live.name}")
    return done
