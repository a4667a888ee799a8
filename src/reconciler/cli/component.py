"""`reconciler component serve`: run one component reconciler service until SIGTERM.

Settings come from the `component` section of `--config` and `RECONCILER_COMPONENT_*` variables;
the options here override both.
The token is read from a file (never from the command line, where `ps` would show it). uvicorn
handles SIGINT/SIGTERM: it stops accepting, then the app's shutdown cancels running tasks and
sends their `failed` callbacks before the process exits.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Annotated, Any

import typer

from reconciler.cli.errors import BAD_INPUT, fail, failures
from reconciler.cli.options import ConfigFile, LogLevel, load_settings, settings_of
from reconciler.observability.logging import configure_logging
from reconciler.remote.settings import ComponentSettings

app = typer.Typer(help="Component reconciler service (worker side of the internal API).")


@app.callback()
def _group() -> None:
    """Component reconciler service (worker side of the internal API)."""


def _settings(config: Path | None, overrides: dict[str, Any]) -> ComponentSettings:
    """The `component` group of the settings root (options over file over environment)."""
    root = load_settings(config, component=overrides)
    return settings_of(lambda: root.component)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8090,
    components: Annotated[
        str | None, typer.Option(help="Serve only these components (comma-separated).")
    ] = None,
    workers: Annotated[int | None, typer.Option(help="Tasks held at once (pool size).")] = None,
    heartbeat_interval: Annotated[
        float | None, typer.Option(help="Seconds between `running` callbacks.")
    ] = None,
    token_file: Annotated[
        Path | None, typer.Option(help="File holding the shared bearer token.")
    ] = None,
    cert_file: Annotated[Path | None, typer.Option(help="TLS certificate to serve.")] = None,
    key_file: Annotated[Path | None, typer.Option(help="TLS key of --cert-file.")] = None,
    log_level: LogLevel = "info",
    config: ConfigFile = None,
) -> None:
    """Serve POST /v1/run, /health/live, /health/ready and /metrics until stopped."""
    configure_logging(json_lines=True, level=log_level)
    token: str | None = None
    if token_file is not None:
        try:
            token = token_file.read_text().strip()
        except OSError as exc:
            raise fail(f"token file {token_file}: {exc.strerror}", BAD_INPUT) from None
    settings = _settings(
        config,
        {
            "components": components,
            "workers": workers,
            "heartbeat_interval": heartbeat_interval,
            "token": token,
            "cert_file": cert_file,
            "key_file": key_file,
        },
    )
    import uvicorn  # the service stack loads only for this command (fast CLI start-up)

    from reconciler.remote.app import create_app

    with failures():
        application = create_app(settings)
    server_config = uvicorn.Config(
        application,
        host=host,
        port=port,
        lifespan="on",
        log_level=log_level,
        log_config=None,  # uvicorn's lines go through ours (one JSON schema, scrubbed)
        access_log=False,  # requests are counted by route and code in /metrics instead
        ssl_certfile=settings.cert_file,
        ssl_keyfile=settings.key_file,
        ssl_ca_certs=str(settings.client_ca_file) if settings.client_ca_file else None,
        ssl_cert_reqs=ssl.CERT_REQUIRED if settings.client_ca_file else ssl.CERT_NONE,
        timeout_graceful_shutdown=int(settings.shutdown_timeout) + 5,
    )
    uvicorn.Server(server_config).run()
