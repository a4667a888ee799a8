"""`mothership serve`: the engine and the REST API in one process, stopped together.

uvicorn handles SIGINT/SIGTERM by finishing in-flight requests; then the engine stops, handing
running operations back as orphans so the next start (or another instance) resumes them.
"""

from __future__ import annotations

from pathlib import Path

import structlog
import uvicorn
from fastapi import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from reconciler.api.app import create_app, planner_validator
from reconciler.api.settings import ApiSettings
from reconciler.mothership.engine import Engine
from reconciler.mothership.settings import Settings

log = structlog.get_logger()


async def run_server(
    settings: Settings,
    *,
    host: str,
    port: int,
    cert_file: Path | None = None,
    key_file: Path | None = None,
    api_settings: ApiSettings | None = None,
) -> None:
    engine = Engine(settings)
    await engine.start()
    try:
        api_settings = api_settings or ApiSettings()
        app = create_app(
            engine.service,
            settings=api_settings,
            validate_spec=planner_validator(engine.planner, api_settings),
        )
        registry = engine.metrics.registry

        async def metrics() -> Response:
            return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

        app.add_api_route("/metrics", metrics, methods=["GET"], include_in_schema=False)
        server = uvicorn.Server(
            uvicorn.Config(
                app,
                host=host,
                port=port,
                log_config=None,
                access_log=False,
                ssl_certfile=str(cert_file) if cert_file else None,
                ssl_keyfile=str(key_file) if key_file else None,
            )
        )
        await engine.telemetry.refresh()  # the first scrape already sees the inventory
        log.info("mothership serving", url=f"{'https' if cert_file else 'http'}://{host}:{port}")
        await server.serve()
    finally:
        await engine.stop()
