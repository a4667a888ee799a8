"""`mothership serve`: the engine and the REST API in one process, stopped together.

Process wiring lives here, in the entry layer, so the engine (`mothership`) never imports the
API. With a TLS certificate and `client_ca_file` the server asks clients for a certificate
(mutual TLS) and verifies it; the verified certificate of each connection reaches the app in
the request state (`web/tls.py`, `PEER_CERT`), where `client_identities` map it to a role.

SIGINT/SIGTERM stop every listener (in-flight requests finish), then the engine, handing running
operations back as orphans so the next start (or another instance) resumes them. The signals are
handled here, not by uvicorn: uvicorn re-raises a signal once its server has stopped, which with
the default handler ended the process before the engine could hand anything back.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import ssl
from collections.abc import Iterator
from pathlib import Path

import structlog
import uvicorn
from fastapi import FastAPI

from reconciler.api.app import create_app, metrics_endpoint, planner_validator
from reconciler.api.settings import ApiConfigError, ApiSettings
from reconciler.mothership.engine import Engine
from reconciler.mothership.settings import Settings
from reconciler.web.tls import PeerCertificateProtocol

log = structlog.get_logger()


class Listener(uvicorn.Server):
    """A uvicorn server that leaves signals to `serve_together`."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def server_config(
    app: FastAPI,
    settings: ApiSettings,
    *,
    host: str,
    port: int,
    cert_file: Path | None = None,
    key_file: Path | None = None,
) -> uvicorn.Config:
    """uvicorn's configuration for the API: TLS, and mutual TLS when a client CA is set."""
    if settings.client_ca_file is not None and cert_file is None:
        raise ApiConfigError("client_ca_file (mutual TLS) needs a TLS certificate (--cert-file)")
    required = ssl.CERT_REQUIRED if settings.client_cert_required else ssl.CERT_OPTIONAL
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        http=PeerCertificateProtocol,
        ssl_certfile=str(cert_file) if cert_file else None,
        ssl_keyfile=str(key_file) if key_file else None,
        ssl_ca_certs=str(settings.client_ca_file) if settings.client_ca_file else None,
        ssl_cert_reqs=required if settings.client_ca_file else ssl.CERT_NONE,
    )


def metrics_app(engine: Engine) -> FastAPI:
    """`/metrics` alone, for the separate listener (`metrics_port`)."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.add_api_route("/metrics", metrics_endpoint(engine.metrics.registry), methods=["GET"])
    return app


async def serve_together(servers: list[uvicorn.Server]) -> None:
    """Serve until SIGINT/SIGTERM (a second one forces the exit) or until one server stops,
    then stop them all."""
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        for server in servers:
            server.force_exit = server.should_exit  # the second signal does not wait
            server.should_exit = True

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    try:
        tasks = [asyncio.create_task(server.serve()) for server in servers]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for server in servers:
            server.should_exit = True
        await asyncio.gather(*tasks)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def run_server(
    settings: Settings,
    *,
    host: str,
    port: int,
    cert_file: Path | None = None,
    key_file: Path | None = None,
    api_settings: ApiSettings | None = None,
) -> None:
    api_settings = api_settings or ApiSettings()
    engine = Engine(settings)
    await engine.start()
    try:
        app = create_app(
            engine.service,
            settings=api_settings,
            validate_spec=planner_validator(engine.planner, api_settings),
            metrics=engine.metrics.registry,
        )
        config = server_config(
            app, api_settings, host=host, port=port, cert_file=cert_file, key_file=key_file
        )
        servers: list[uvicorn.Server] = [Listener(config)]
        if api_settings.metrics_port is not None:
            metrics_config = uvicorn.Config(
                metrics_app(engine),
                host=host,
                port=api_settings.metrics_port,
                log_config=None,
                access_log=False,
            )
            servers.append(Listener(metrics_config))
        log.info("mothership serving", url=f"{'https' if cert_file else 'http'}://{host}:{port}")
        await serve_together(servers)
    finally:
        await engine.stop()
        log.info("mothership stopped")
