"""`reconciler operator watcher serve`: the webhook that reports a remote cluster's changes to the
operator's listener (the operator deploys it; docs/operator.md)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path
from typing import Annotated

import typer

from reconciler.cli.options import LogLevel
from reconciler.errors import ReconcilerError
from reconciler.kube.client import KubeClient
from reconciler.observability.logging import configure_logging, get_logger
from reconciler.operator.watcher.service import Watcher, WatcherConfig

app = typer.Typer(help="The watcher webhook of a remote cluster.")


def _pair(value: str, option: str) -> tuple[str, str]:
    namespace, _, name = value.partition("/")
    if not namespace or not name:
        raise typer.BadParameter(f"{option} must be NAMESPACE/NAME, not {value!r}")
    return namespace, name


@app.callback()
def _group() -> None:
    """The watcher webhook of a remote cluster."""


@app.command()
def serve(
    listener: Annotated[str, typer.Option(help="Base URL of the operator's listener.")],
    secret: Annotated[
        str, typer.Option(help="NAMESPACE/NAME of the certificate Secret.")
    ] = "kyma-system/skr-webhook-tls",
    manager: Annotated[str, typer.Option(help="The <manager> of the event path.")] = (
        "lifecycle-manager"
    ),
    owner: Annotated[
        str | None, typer.Option(help="NAMESPACE/NAME of the control-plane Kyma.")
    ] = None,
    kubeconfig: Annotated[
        Path | None,
        typer.Option("--kubeconfig", envvar="KUBECONFIG", help="Kubeconfig (default: in-cluster)."),
    ] = None,
    host: Annotated[str, typer.Option(help="Address to serve on.")] = "0.0.0.0",
    port: Annotated[int, typer.Option(help="HTTPS port of the webhook.")] = 8443,
    refresh: Annotated[float, typer.Option(help="Seconds between reads of the Secret.")] = 30.0,
    log_level: LogLevel = "info",
) -> None:
    """Serve the validating webhook; report every admitted change to the listener."""
    configure_logging(level=log_level)
    config = WatcherConfig(
        listener=listener,
        manager=manager,
        secret_namespace=_pair(secret, "--secret")[0],
        secret_name=_pair(secret, "--secret")[1],
        owner=_pair(owner, "--owner") if owner else None,
        refresh=refresh,
    )

    async def main() -> None:
        async with KubeClient.from_kubeconfig(kubeconfig) as kube:
            task = asyncio.create_task(Watcher(config, kube).serve(host, port))
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, task.cancel)
            get_logger(part="watcher").info("watcher serving", port=port, listener=listener)
            with contextlib.suppress(asyncio.CancelledError):
                await task

    try:
        asyncio.run(main())
    except ReconcilerError as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from None
