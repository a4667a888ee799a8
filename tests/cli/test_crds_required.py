"""`operator run` and `infra run` on a control plane without their CRDs: one line that names
the missing CRDs and the command that installs them, at once (not retries, not kopf's words)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.conftest import ClusterFactory


@pytest.mark.parametrize(
    ("command", "crd"),
    [
        (["operator", "run"], "kymas.operator.kyma-project.io"),
        (["infra", "run"], "runtimes.infrastructuremanager.kyma-project.io"),
    ],
    ids=["operator", "infra"],
)
async def test_run_without_the_crds_names_them_and_install_crds(
    cluster_factory: ClusterFactory, command: list[str], crd: str
) -> None:
    bare = await cluster_factory()
    kubeconfig = str(bare.kubeconfig)
    extra = ["--garden-kubeconfig", kubeconfig] if command[0] == "infra" else []

    process = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "reconciler"),
        *command,
        "--kubeconfig",
        kubeconfig,
        *extra,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), timeout=60)
    output = out.decode()

    assert process.returncode == 1, output
    assert "the control plane lacks the CRDs" in output
    assert crd in output
    assert f"reconciler {command[0]} install-crds --kubeconfig" in output
    assert "Unresolved resources" not in output
    assert "404" not in output
