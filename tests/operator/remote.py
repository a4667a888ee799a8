"""Helpers for tests of the remote side: the remote Kyma and edits remote users make."""

from __future__ import annotations

from typing import Any

from reconciler.errors import ApplyError
from reconciler.kube.cluster import Cluster
from reconciler.model.lifecycle import API_VERSION
from tests.operator import modules
from tests.operator.conftest import World

MERGE = "application/merge-patch+json"
KYMAS = f"/apis/{API_VERSION}/namespaces/kyma-system/kymas"


async def remote_kyma(world: World) -> dict[str, Any] | None:
    try:
        return await world.get("Kyma", "default", remote=True, namespace="kyma-system")
    except ApplyError:  # the operator has not installed the Kyma CRD there yet
        return None


async def set_remote_modules(cluster: Cluster, entries: list[dict[str, Any]]) -> None:
    """What a remote user does: edit `spec.modules` of the remote Kyma (a merge patch)."""
    await cluster.client.request(
        "PATCH", f"{KYMAS}/default", body={"spec": {"modules": entries}}, content_type=MERGE
    )


async def remote_kyma_ready(world: World, name: str, spec_modules: list[dict[str, Any]]) -> None:
    """The catalog, the Secret and a Kyma; wait until its remote Kyma exists."""
    await world.catalog()
    await world.control.apply(
        modules.kubeconfig_secret(world.namespace, name, world.remote_kubeconfig)
    )
    await world.control.apply(modules.kyma(world.namespace, name, "regular", spec_modules))
    await world.until(lambda: remote_kyma(world), "the remote Kyma kyma-system/default")
