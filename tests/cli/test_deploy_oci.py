"""`reconciler deploy` of a component whose chart lives in an OCI registry (a real one)."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import yaml
from typer.testing import CliRunner

from reconciler.cli.main import app
from reconciler.kube.cluster import Cluster
from tests.conftest import KubeTarget
from tests.helpers.charts import CONFIGMAPS, make_chart
from tests.helpers.oci import push_chart


async def test_a_component_with_an_oci_chart_source_is_deployed_and_deleted(
    kube_cluster: KubeTarget, namespace: str, oci_registry: str, tmp_path: Path
) -> None:
    repository = f"components-{uuid.uuid4().hex[:8]}"
    chart = make_chart(
        tmp_path / "src", "greeter", {"cm.yaml": CONFIGMAPS}, {"configmaps": ["hello-oci"]}
    )
    digest = push_chart(oci_registry, chart, repository, tmp_path / "pkg")
    components = tmp_path / "components.yaml"
    source = f"oci://{oci_registry}/{repository}/greeter:0.1.0@{digest}"
    components.write_text(
        yaml.safe_dump(
            {"defaultNamespace": namespace, "components": [{"name": "greeter", "url": source}]}
        )
    )
    common = ["--kubeconfig", str(kube_cluster.kubeconfig), "-w", str(tmp_path)]
    common += ["--components", str(components), "-o", "json"]

    deployed = await asyncio.to_thread(CliRunner().invoke, app, ["deploy", *common])

    assert deployed.exit_code == 0, deployed.output
    states = {c["name"]: c["state"] for c in json.loads(deployed.stdout)["components"]}
    assert states["greeter"] == "done"
    async with await Cluster.connect(kube_cluster.kubeconfig) as cluster:
        ref = {"apiVersion": "v1", "kind": "ConfigMap"}
        configmap = await cluster.get(
            {**ref, "metadata": {"name": "hello-oci", "namespace": namespace}}
        )
        assert configmap is not None
        deleted = await asyncio.to_thread(CliRunner().invoke, app, ["delete", *common])
        assert deleted.exit_code == 0, deleted.output
        assert (
            await cluster.get({**ref, "metadata": {"name": "hello-oci", "namespace": namespace}})
            is None
        )
