"""The `reconciler` command: one typer app, one module per command group."""

from __future__ import annotations

from typing import Annotated

import typer

from reconciler import __version__
from reconciler.cli import admin, component, components, devcluster, infra, mothership, operator

app = typer.Typer(
    name="reconciler",
    help="Keep Kyma-style component sets on Kubernetes clusters in their desired state.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(devcluster.app, name="dev-cluster")
app.add_typer(mothership.app, name="mothership")
app.add_typer(admin.cluster_app, name="cluster")
app.add_typer(admin.reconciliation_app, name="reconciliation")
app.add_typer(component.app, name="component")
app.add_typer(operator.app, name="operator")
app.add_typer(infra.app, name="infra")
app.command()(components.deploy)
app.command()(components.delete)
app.command()(components.template)
app.command()(components.diff)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(__version__)
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Keep Kyma-style component sets on Kubernetes clusters in their desired state."""


@app.command()
def version() -> None:
    """Print the version."""
    typer.echo(__version__)
