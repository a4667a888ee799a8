"""`create_app`: the component reconciler service as an ASGI app.

The same plumbing as the mothership API (`reconciler.web`): `{"error": ...}` bodies, validation
messages that never echo the input, a last-line `ErrorMiddleware`. The pool starts with the app
and is shut down with it (running tasks cancelled, the mothership told).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from reconciler.observability.logging import get_logger
from reconciler.remote.routes import router
from reconciler.remote.service import ComponentService
from reconciler.remote.settings import ComponentSettings
from reconciler.web.errors import ErrorMiddleware, install_http_error_handlers


def create_app(settings: ComponentSettings, *, service: ComponentService | None = None) -> FastAPI:
    """The ASGI app; the pool starts with it and is shut down (tasks cancelled) with it."""
    svc = service or ComponentService(settings)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        get_logger().info(
            "component reconciler started",
            workers=settings.workers,
            components=settings.components or "all",
        )
        try:
            yield
        finally:
            await svc.aclose()
            get_logger().info("component reconciler stopped")

    app = FastAPI(title="Component reconciler", version="1.0.0", lifespan=lifespan)
    app.state.service = svc
    install_http_error_handlers(app)
    app.include_router(router)
    app.add_middleware(ErrorMiddleware)
    return app
