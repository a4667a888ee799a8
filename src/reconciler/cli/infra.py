"""`reconciler infra`: install the Runtime/GardenerCluster CRDs, run the infrastructure manager."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Annotated

import typer
from prometheus_client import start_http_server

from reconciler.cli.crds import PrintOnly, print_or_install, require_crds
from reconciler.cli.errors import BAD_INPUT, fail, failures
from reconciler.cli.options import ConfigFile, LogLevel, load_settings, settings_of
from reconciler.cli.signals import stop_within
from reconciler.infra.acl import check_acl_configured
from reconciler.infra.converter.config import ConverterConfigError, load_converter_config
from reconciler.infra.crds import all_crds
from reconciler.infra.install import install_crds
from reconciler.infra.manager import InfraManager
from reconciler.kube.client import KubeClient
from reconciler.kube.cluster import Cluster
from reconciler.observability.logging import configure_logging

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
    print_only: PrintOnly = False,
) -> None:
    """Install the Runtime and GardenerCluster CRDs (or print them with --print)."""
    print_or_install(kubeconfig, print_only, all_crds(), install_crds)


@app.command()
def run(
    kubeconfig: Kubeconfig = None,
    garden_kubeconfig: Annotated[
        Path,
        typer.Option(
            "--garden-kubeconfig",
            envvar="RECONCILER_INFRA_GARDEN_KUBECONFIG",
            help="Kubeconfig of the Gardener project (the garden cluster).",
        ),
    ] = Path("garden-kubeconfig"),
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
    """Turn Runtimes into Shoots and kubeconfig Secrets until SIGTERM/SIGINT.
    Settings: the infra section of --config or RECONCILER_INFRA_* (project, rate limit,
    workers, kubeconfig validity)."""
    configure_logging(level=log_level)
    root = load_settings(config)
    settings = settings_of(lambda: root.infra)
    try:
        # refused here, before anything runs
        converter = load_converter_config(settings.converter_config)
        check_acl_configured(converter, settings.api_server_acl_enabled)
    except ConverterConfigError as exc:
        raise fail(str(exc), BAD_INPUT) from None
    with failures(BAD_INPUT):
        garden = KubeClient.from_kubeconfig(garden_kubeconfig)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop_within, stop, settings.stop_timeout)
        async with await Cluster.connect(kubeconfig) as cluster, garden:
            await require_crds(cluster, all_crds(), "infra install-crds")
            manager = InfraManager(cluster, garden, settings)
            if metrics_port is not None:
                start_http_server(metrics_port, metrics_host, registry=manager.metrics.registry)
            await manager.run(namespace=namespace, stop=stop)

    with failures():
        asyncio.run(main())
