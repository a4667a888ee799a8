"""`reconciler operator install-crds`: printed and installed."""

from __future__ import annotations

import asyncio

import yaml
from typer.testing import CliRunner

from reconciler.cli.main import app
from tests.conftest import KubeTarget

NAMES = [
    "kymas.operator.kyma-project.io",
    "moduletemplates.operator.kyma-project.io",
    "modulereleasemetas.operator.kyma-project.io",
    "manifests.operator.kyma-project.io",
]


def test_install_crds_print_writes_the_four_crds_as_yaml() -> None:
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
