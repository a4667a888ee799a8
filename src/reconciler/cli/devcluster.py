"""`reconciler dev-cluster build|up|down|status`: the local test-bed control plane by hand."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Annotated

import typer

from reconciler.cli.errors import FAILED, failures
from reconciler.cli.options import output_option
from reconciler.devcluster import DevCluster
from reconciler.devcluster.build import build_all
from reconciler.paths import cache_dir

app = typer.Typer(
    help="A local kube-apiserver + etcd + controller-manager for trying things out.",
    no_args_is_help=True,
)

DirOption = Annotated[
    Path,
    typer.Option("--dir", help="Directory for certificates, logs, etcd data and the kubeconfig."),
]


def default_dir() -> Path:
    return cache_dir() / "dev-cluster"


@app.command()
def build() -> None:
    """Install etcd/helm and build kube-apiserver + controller-manager once (cached)."""
    with failures():
        build_all()


@app.command()
def up(
    directory: DirOption = default_dir(),
    controller_manager: Annotated[
        bool, typer.Option(help="Also run kube-controller-manager (GC, namespace deletion).")
    ] = True,
    kubelet: Annotated[
        bool, typer.Option(help="Run the kubelet stand-in so workloads can become ready.")
    ] = True,
) -> None:
    """Start a fresh cluster (or reuse the one running in DIR) and print how to reach it."""
    cluster = DevCluster(directory, controller_manager=controller_manager, kubelet=kubelet)
    running = cluster.info()
    if running is not None and cluster.status()["kube-apiserver"]:
        info = running
        typer.echo(f"already running: {info.api_url}")
    else:
        with failures():
            build_all()
            info = asyncio.run(cluster.start())
        typer.echo(f"ready in {info.ready_seconds:.1f}s: {info.api_url}")
    typer.echo(f"kubeconfig: {info.kubeconfig}")
    typer.echo(f"try:        kubectl --kubeconfig {info.kubeconfig} get ns")
    typer.echo(f"stop with:  reconciler dev-cluster down --dir {directory}")


@app.command()
def down(directory: DirOption = default_dir()) -> None:
    """Stop the cluster started in DIR."""
    with failures():
        asyncio.run(DevCluster(directory).stop())
    typer.echo("stopped")


@app.command()
def status(
    directory: DirOption = default_dir(),
    output: Annotated[
        str, output_option(("table", "json"), "table (for people; `text`: its old name) or json.")
    ] = "table",
) -> None:
    """Show which processes of the cluster in DIR are running (exit 1 when none)."""
    cluster = DevCluster(directory)
    state = cluster.status()
    info = cluster.info()
    if output == "json":
        typer.echo(
            json.dumps(
                {
                    "running": state,
                    "kubeconfig": str(cluster.kubeconfig),
                    "api": info.api_url if info else None,
                }
            )
        )
    else:
        for name, pid in state.items():
            typer.echo(f"{name}: {f'running (pid {pid})' if pid else 'not running'}")
        if info and any(state.values()):
            typer.echo(f"kubeconfig: {info.kubeconfig}")
    if not any(state.values()):
        raise typer.Exit(FAILED)


@app.command()
def gardener(
    garden: Annotated[Path, typer.Option(help="Kubeconfig of the cluster acting as the garden.")],
    shoot: Annotated[Path, typer.Option(help="Kubeconfig of the cluster acting as every shoot.")],
    workdir: Annotated[Path, typer.Option(help="Where the proxy's kubeconfig is written.")],
    project: Annotated[str, typer.Option(help="Gardener project: namespace garden-<project>.")] = (
        "demo"
    ),
    default_domain: Annotated[
        str,
        typer.Option(help="The garden's default domain, for Shoots without spec.dns.domain."),
    ] = "demo.kyma.local",
) -> None:
    """Play Gardener until SIGTERM/SIGINT (tests and demos): the Shoot CRD, a controller
    advancing Shoots, admin kubeconfigs of SHOOT. Prints the kubeconfig clients should use."""
    from reconciler.devcluster.gardener import GardenerSimulator

    async def serve() -> None:
        simulator = GardenerSimulator(garden, shoot, workdir, default_domain=default_domain)
        kubeconfig = await simulator.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            await simulator.ensure_project(project)
            typer.echo(f"garden kubeconfig: {kubeconfig}", err=True)
            await stop.wait()
        finally:
            await simulator.stop()

    with failures():
        asyncio.run(serve())
