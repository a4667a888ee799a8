"""`reconciler delete` after a partial install: unserved kinds are already gone, and one
component that cannot be deleted does not keep the others installed."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import yaml

from reconciler.kube.cluster import Cluster
from reconciler.model.kube_object import KubeObject
from tests.cli.test_deploy_cli import invoke_async, summary
from tests.conftest import KubeTarget
from tests.helpers.charts import make_chart

CRONJOB = """\
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: backup, image: example.com/backup:1}]
"""


def configmap(name: str, finalizer: str = "") -> str:
    extra = f"\n  finalizers: [{finalizer}]" if finalizer else ""
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}{extra}\ndata: {{a: b}}\n"


def partial_workspace(root: Path, namespace: str) -> Path:
    """base (prerequisite), backup (a batch/v1 CronJob: not served by 1.20), stuck (an object
    whose finalizer nobody removes)."""
    (root / "installation" / "resources").mkdir(parents=True)
    (root / "installation" / "resources" / "components.yaml").write_text(
        yaml.safe_dump(
            {
                "defaultNamespace": namespace,
                "prerequisites": [{"name": "base"}],
                "components": [{"name": "backup"}, {"name": "stuck"}],
            }
        )
    )
    resources = root / "resources"
    make_chart(resources, "base", {"cm.yaml": configmap("base-settings")})
    make_chart(resources, "backup", {"cron.yaml": CRONJOB, "cm.yaml": configmap("backup-plan")})
    make_chart(resources, "stuck", {"cm.yaml": configmap("stuck", "example.io/never")})
    return root


def configmap_key(name: str, namespace: str) -> KubeObject:
    return KubeObject(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
        }
    )


async def test_delete_after_partial_install_skips_unserved_kinds_and_keeps_going(
    kube_cluster: KubeTarget, tmp_path: Path
) -> None:
    namespace = f"partial-{uuid.uuid4().hex[:6]}"
    workspace = str(partial_workspace(tmp_path, namespace))
    kubeconfig = str(kube_cluster.kubeconfig)
    deployed = await invoke_async(
        "deploy", "--kubeconfig", kubeconfig, "-w", workspace, "-o", "json", "--timeout", "30"
    )
    assert deployed.exit_code == 1, deployed.output
    installed = summary(deployed)
    assert installed["backup"]["state"] == "failed"
    assert "kind CronJob in batch/v1 is not served" in installed["backup"]["error"]
    assert installed["stuck"]["state"] == "done"
    async with await Cluster.connect(kubeconfig) as cluster:
        try:
            deleted = await invoke_async(
                "delete", "--kubeconfig", kubeconfig, "-w", workspace, "-o", "json",
                "--timeout", "3",
            )  # fmt: skip
            assert deleted.exit_code == 1, deleted.output
            result = summary(deleted)
            assert result["backup"]["state"] == "done", result["backup"]
            assert any(
                "kind CronJob in batch/v1: the cluster does not serve it" in w
                for w in result["backup"]["warnings"]
            )
            assert result["stuck"]["state"] == "failed"
            assert "stuck" in result["stuck"]["error"]
            assert result["base"]["state"] == "done", result["base"]  # not held back by stuck
            assert await cluster.get(configmap_key("base-settings", namespace)) is None
            assert json.loads(deleted.stdout)["ok"] is False
        finally:
            await cluster.client.request(
                "PATCH",
                f"/api/v1/namespaces/{namespace}/configmaps/stuck",
                body={"metadata": {"finalizers": None}},
                content_type="application/merge-patch+json",
            )
