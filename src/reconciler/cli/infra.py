"""`reconciler infra`: install the Runtime/GardenerCluster CRDs, run the infrastructure manager."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from reconciler.cli.crds import print_or_install
from reconciler.infra.crds import all_crds
from reconciler.infra.install import install_crds

app = typer.Typer(help="Infrastructure manager: Runtime -> Gardener Shoot -> kubeconfig Secret.")

Kubeconfig = Annotated[
    Path | None,
    typer.Option("--kubeconfig", envvar="KUBECONFIG", help="Kubeconfig of the control plane."),
]


@app.callback()
def _group() -> None:
    """Infrastructure manager: Runtime -> Gardener Shoot -> kubeconfig Secret."""


@app.command("install-crds")
def install_crds_command(
    kubeconfig: Kubeconfig = None,
    print_only: Annotated[
        bool, typer.Option("--print", help="Print the CRDs as YAML instead of installing them.")
    ] = False,
) -> None:
    """Install the Runtime and GardenerCluster CRDs (or print them with --print)."""
    print_or_install(kubeconfig, print_only, all_crds(), install_crds)
