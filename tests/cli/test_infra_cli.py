"""`reconciler infra install-crds`: printed and installed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from reconciler.cli.main import app
from tests.conftest import KubeTarget

NAMES = [
    "runtimes.infrastructuremanager.kyma-project.io",
    "gardenerclusters.infrastructuremanager.kyma-project.io",
]


def test_install_crds_print_writes_runtime_and_gardener_cluster_as_yaml() -> None:
    result = CliRunner().invoke(app, ["infra", "install-crds", "--print"])
    assert result.exit_code == 0, result.output
    assert [crd["metadata"]["name"] for crd in yaml.safe_load_all(result.output)] == NAMES


async def test_install_crds_installs_them_on_the_cluster(kube_cluster: KubeTarget) -> None:
    result = await asyncio.to_thread(
        CliRunner().invoke,
        app,
        ["infra", "install-crds", "--kubeconfig", str(kube_cluster.kubeconfig)],
    )
    assert result.exit_code == 0, result.output
    assert result.output.split() == [word for name in NAMES for word in ("installed", name)]


def test_run_refuses_a_missing_garden_kubeconfig_as_bad_input(tmp_path: Path) -> None:
    missing = tmp_path / "garden"
    result = CliRunner().invoke(app, ["infra", "run", "--garden-kubeconfig", str(missing)])
    assert result.exit_code == 2
    assert f"kubeconfig file {missing} does not exist" in result.output


def test_run_refuses_bad_settings_naming_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONCILER_INFRA_ROTATION_RATIO", "1.5")
    result = CliRunner().invoke(app, ["infra", "run"])
    assert result.exit_code == 2
    assert "rotation_ratio" in result.output
