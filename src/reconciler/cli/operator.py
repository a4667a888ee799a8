"""`reconciler operator`: install the lifecycle-manager CRDs, run the operator."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Annotated

import typer
import yaml
from prometheus_client import start_http_server

from reconciler.charts.sources import ChartCache
from reconciler.cli import rollout, watcher
from reconciler.cli.crds import PrintOnly, print_or_install, require_crds
from reconciler.cli.options import ConfigFile, LogLevel, load_settings, settings_of
from reconciler.cli.signals import stop_within
from reconciler.errors import ReconcilerError
from reconciler.kube.cluster import Cluster
from reconciler.observability.logging import configure_logging
from reconciler.operator.clusters.crds import all_crds
from reconciler.operator.clusters.install import install_crds
from reconciler.operator.runtime.deploy import all_objects, deploy
from reconciler.operator.runtime.wiring import Operator
from reconciler.paths import cache_dir
from reconciler.version import __version__

app = typer.Typer(help="Operator mode: Kyma, ModuleTemplate, ModuleReleaseMeta, Manifest.")
app.add_typer(watcher.app, name="watcher")
app.add_typer(rollout.app, name="rollout")

Kubeconfig = Annotated[
    Path | None,
    typer.Option("--kubeconfig", envvar="KUBECONFIG", help="Kubeconfig of the control plane."),
]


@app.callback()
def _group() -> None:
    """Operator mode: Kyma, ModuleTemplate, ModuleReleaseMeta, Manifest."""


def _fail(message: str) -> typer.Exit:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(1)


@app.command("install-crds")
def install_crds_command(
    kubeconfig: Kubeconfig = None,
    print_only: PrintOnly = False,
) -> None:
    """Install the CRDs (or print them with --print)."""
    print_or_install(kubeconfig, print_only, all_crds(), install_crds)


@app.command()
def run(
    kubeconfig: Kubeconfig = None,
    namespace: Annotated[
        str | None, typer.Option(help="Watch only this namespace (default: all).")
    ] = None,
    log_level: LogLevel = "info",
    metrics_port: Annotated[
        int | None, typer.Option(help="Serve Prometheus metrics on this port.")
    ] = None,
    metrics_host: Annotated[
        str, typer.Option(help="Address of the metrics port (0.0.0.0 in a pod).")
    ] = "127.0.0.1",
    config: ConfigFile = None,
) -> None:
    """Reconcile Kymas and Manifests until SIGTERM/SIGINT. Settings: the operator,
    operator_shard and operator_watcher sections of --config, or RECONCILER_OPERATOR_*."""
    configure_logging(level=log_level)
    root = load_settings(config)
    settings = settings_of(lambda: root.operator)
    watcher_settings = settings_of(lambda: root.operator_watcher)
    shard_settings = settings_of(lambda: root.operator_shard)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop_within, stop, settings.stop_timeout)
        async with await Cluster.connect(kubeconfig) as cluster:
            await require_crds(cluster, all_crds(), "operator install-crds")
            operator = Operator(
                cluster,
                ChartCache(cache_dir() / "charts"),
                settings,
                watcher=watcher_settings,
                shards=shard_settings,
            )
            if metrics_port is not None:
                start_http_server(metrics_port, metrics_host, registry=operator.metrics.registry)
            await operator.run(kubeconfig, namespace=namespace, stop=stop)

    try:
        asyncio.run(main())
    except ReconcilerError as exc:
        raise _fail(str(exc)) from None


@app.command("deploy")
def deploy_command(
    kubeconfig: Kubeconfig = None,
    namespace: Annotated[str, typer.Option(help="Namespace of the operator.")] = "kyma-system",
    image: Annotated[
        str, typer.Option(help="Operator image (`make image`, docs/deploy.md).")
    ] = f"reconciler:{__version__}",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Server-side dry run: validate, change nothing.")
    ] = False,
    print_only: Annotated[bool, typer.Option("--print", help="Print the objects as YAML.")] = False,
) -> None:
    """Install CRDs, RBAC and the operator as a Deployment (self-hosting)."""
    if print_only:
        try:
            objects = asyncio.run(all_objects(namespace, image))
        except ReconcilerError as exc:
            raise _fail(str(exc)) from None
        typer.echo(yaml.safe_dump_all(objects, sort_keys=False), nl=False)
        return

    async def run_deploy() -> list[str]:
        async with await Cluster.connect(kubeconfig) as cluster:
            return await deploy(cluster, namespace=namespace, image=image, dry_run=dry_run)

    try:
        done = asyncio.run(run_deploy())
    except ReconcilerError as exc:
        raise _fail(str(exc)) from None
    verb = "validated" if dry_run else "applied"
    for what in done:
        typer.echo(f"{verb} {what}")
