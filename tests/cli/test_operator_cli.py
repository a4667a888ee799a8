"""`reconciler operator install-crds`: printed and installed."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time

import yaml
from typer.testing import CliRunner

from reconciler.cli.main import app
from reconciler.kube.cluster import Cluster
from tests.conftest import KubeTarget

NAMES = [
    "kymas.operator.kyma-project.io",
    "moduletemplates.operator.kyma-project.io",
    "modulereleasemetas.operator.kyma-project.io",
    "manifests.operator.kyma-project.io",
    "moduleconfigs.operator.kyma-project.io",
    "syncresources.operator.kyma-project.io",
    "modulerollouts.operator.kyma-project.io",
]


def test_install_crds_print_writes_every_crd_as_yaml() -> None:
    result = CliRunner().invoke(app, ["operator", "install-crds", "--print"])
    assert result.exit_code == 0, result.output
    crds = list(yaml.safe_load_all(result.output))
    assert [crd["metadata"]["name"] for crd in crds] == NAMES


async def test_install_crds_installs_them_on_the_cluster(kube_cluster: KubeTarget) -> None:
    result = await asyncio.to_thread(
        CliRunner().invoke,
        app,
        ["operator", "install-crds", "--kubeconfig", str(kube_cluster.kubeconfig)],
    )
    assert result.exit_code == 0, result.output
    assert result.output.split() == [word for name in NAMES for word in ("installed", name)]


def test_install_crds_names_an_unreachable_cluster(tmp_path: object) -> None:
    kubeconfig = f"{tmp_path}/kubeconfig"
    with open(kubeconfig, "w") as file:
        file.write(
            "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
            "users: [{name: u, user: {token: t}}]\n"
            "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
        )
    result = CliRunner().invoke(app, ["operator", "install-crds", "--kubeconfig", kubeconfig])
    assert result.exit_code == 1
    assert "cannot reach the apiserver at https://127.0.0.1:1" in result.output


def test_deploy_print_lists_crds_rbac_and_the_deployment() -> None:
    result = CliRunner().invoke(app, ["operator", "deploy", "--print", "--image", "r:1"])
    assert result.exit_code == 0, result.output
    kinds = [obj["kind"] for obj in yaml.safe_load_all(result.output)]
    assert kinds == [
        *["CustomResourceDefinition"] * len(NAMES),
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Deployment",
    ]


async def test_deploy_dry_run_is_accepted_by_the_apiserver_and_changes_nothing(
    kube_cluster: KubeTarget, namespace: str
) -> None:
    args = ["operator", "deploy", "--kubeconfig", str(kube_cluster.kubeconfig)]
    result = await asyncio.to_thread(
        CliRunner().invoke, app, [*args, "--namespace", namespace, "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    assert "validated deployment reconciler-operator" in result.output
    async with await Cluster.connect(kube_cluster.kubeconfig) as cluster:
        deployment = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "reconciler-operator", "namespace": namespace},
        }
        assert await cluster.get(deployment) is None


def test_a_stop_that_hangs_still_exits_within_the_stop_timeout() -> None:
    """SIGTERM sets the stop flag and arms a watchdog: a process whose kopf thread or handler
    never returns exits (code 1, logged) once the stop timeout has passed."""
    stuck = textwrap.dedent(
        """
        import asyncio, time
        from reconciler.cli.signals import stop_within
        stop_within(asyncio.Event(), 0.5)
        time.sleep(60)  # a stop that never finishes
        """
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", stuck], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 1
    assert time.monotonic() - started < 20
    assert "did not stop in time" in done.stdout + done.stderr
