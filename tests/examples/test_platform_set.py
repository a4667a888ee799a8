"""The platform set (examples/platform) on a Kubernetes 1.20 test-bed cluster, through the CLI.

What a new user does with a real platform: deploy it, run the same deploy again (plain and forced),
delete it. Every chart that Kubernetes 1.20 can run installs and becomes ready; a re-run changes
nothing, a forced one keeps the generated certificates and passwords; the one chart that cannot
run there (`backup`, a batch/v1 CronJob) fails with a message naming the kind, its version and what
the cluster serves instead, and blocks nothing else; delete removes it all but the namespace that
still holds the database's data.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from reconciler.cli.main import app
from reconciler.kube.cluster import Cluster
from reconciler.model.kube_object import KubeObject
from tests.conftest import ClusterFactory
from tests.examples.platform import IMPOSSIBLE_ON_1_20, component_set, copy_set

pytestmark = pytest.mark.slow

MANAGED = "reconciler.kyma-project.io/managed-by=reconciler"
# Kubernetes 1.20 rewrites these on every forced apply once the clock second moved (fields it
# defaults inside atomic list items the charts leave out; see examples/platform/README.md):
# reported changed by `deploy --force` though nothing in them changed.
REWRITTEN_BY_1_20 = {
    "deployment.apps mesh-system/mesh-ingressgateway",  # downwardAPI fieldRef.apiVersion
    "statefulset.apps platform-system/database",  # volumeClaimTemplates[].spec.volumeMode, ...
}


async def run_cli(*args: str) -> dict[str, dict[str, Any]]:
    """`reconciler <args> -o json` in a thread (the CLI runs its own event loop): per component."""
    result = await asyncio.to_thread(CliRunner().invoke, app, [*args, "-o", "json"])
    assert result.stdout.strip(), result.output
    report = json.loads(result.stdout)
    return {c["name"]: c for c in report["components"]}


def failures(components: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {
        name: c["error"] or c["state"] for name, c in components.items() if c["state"] != "done"
    }


async def managed_left(kubeconfig: Path) -> list[str]:
    """Objects of the kinds the set uses most that still carry the reconciler's label."""
    left: list[str] = []
    async with await Cluster.connect(kubeconfig) as cluster:
        for path in (
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            "/api/v1/namespaces",
            "/api/v1/configmaps",
            "/apis/apps/v1/deployments",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        ):
            listing = await cluster.client.request("GET", path, params={"labelSelector": MANAGED})
            for item in listing.get("items", []):
                meta = item["metadata"]
                where = f"{meta['namespace']}/" if meta.get("namespace") else ""
                left.append(f"{path.rsplit('/', 1)[-1]} {where}{meta['name']}")
    return left


async def live_objects_keep_the_sets_traits(kubeconfig: Path, workspace: Path) -> None:
    """Emoji arrive intact, the last of duplicate env entries wins, a null went nowhere."""
    dashboard = (workspace / "resources" / "grafana" / "dashboards" / "mesh.json").read_text()
    async with await Cluster.connect(kubeconfig) as cluster:
        configmap = await cluster.get(
            obj("v1", "ConfigMap", "grafana-dashboard-mesh", "platform-system")
        )
        loki = await cluster.get(obj("apps/v1", "StatefulSet", "logging-loki", "platform-system"))
        prometheus = await cluster.get(
            obj("monitoring.platform.example.io/v1", "Prometheus", "prometheus", "platform-system")
        )
    assert configmap is not None
    assert configmap.raw["data"]["mesh.json"] == dashboard.rstrip("\n")
    assert loki is not None
    env = loki.raw["spec"]["template"]["spec"]["containers"][0]["env"]
    assert [e["value"] for e in env if e["name"] == "LOG_LEVEL"] == ["debug"]
    assert prometheus is not None
    # the null annotation is dropped (server-side apply reads null as "remove"); the "" one is
    # a value, stored as Kubernetes stores it
    assert prometheus.raw["spec"]["podMetadata"]["annotations"] == {
        "traffic.sidecar.istio.io/includeInboundPorts": ""
    }


def obj(api_version: str, kind: str, name: str, namespace: str) -> KubeObject:
    meta = {"name": name, "namespace": namespace}
    return KubeObject({"apiVersion": api_version, "kind": kind, "metadata": meta})


async def test_platform_set_deploys_reruns_unchanged_and_deletes_on_kubernetes_1_20(
    cluster_factory: ClusterFactory, tmp_path: Path
) -> None:
    target = await cluster_factory(controller_manager=True, kubelet=True)
    workspace = copy_set(tmp_path / "platform")
    common = ("--kubeconfig", str(target.kubeconfig), "-w", str(workspace), "--timeout", "240")
    possible = set(component_set(workspace).names()) - {IMPOSSIBLE_ON_1_20}

    first = await run_cli("deploy", *common)

    assert set(first) == possible | {IMPOSSIBLE_ON_1_20, "CRDs"}
    assert list(failures(first)) == [IMPOSSIBLE_ON_1_20], failures(first)
    error = first[IMPOSSIBLE_ON_1_20]["error"]
    for named in ("CronJob", "batch/v1", "batch/v1beta1"):
        assert named in error, error

    await live_objects_keep_the_sets_traits(target.kubeconfig, workspace)

    again = await run_cli("deploy", *common)

    assert list(failures(again)) == [IMPOSSIBLE_ON_1_20], failures(again)
    assert {name: c["changed"] for name, c in again.items() if c["changed"]} == {}

    forced = await run_cli("deploy", *common, "--force")  # render and apply everything again

    assert list(failures(forced)) == [IMPOSSIBLE_ON_1_20], failures(forced)
    # generated certificates and passwords (and the checksums over them) are kept, not rotated
    assert {key for c in forced.values() for key in c["changed"]} <= REWRITTEN_BY_1_20

    gone = await run_cli("delete", *common)

    assert failures(gone) == {}
    # only the shared namespace stays: the database's volume claim (made by its StatefulSet, not
    # by the chart) still lives there, and data is never deleted behind the user's back
    assert await managed_left(target.kubeconfig) == ["namespaces platform-system"]
    warnings = [w for c in gone.values() for w in c["warnings"]]
    assert any("persistentvolumeclaim platform-system/data-database-0" in w for w in warnings)
