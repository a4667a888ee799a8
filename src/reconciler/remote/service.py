"""The component reconciler service: `POST /v1/run`, health and metrics over one worker pool.

Stateless by design: a task lives only in memory from acceptance to its final callback, so any
number of instances can stand behind one URL and a lost instance costs only its running tasks
(the mothership detects them as orphans, or hears `failed` on a graceful shutdown). Invalid
bodies answer 400 naming the field; nothing a response, log line or callback says ever contains
the task's kubeconfig.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import ValidationError

from reconciler.charts.sources import ChartCache
from reconciler.core.actions import ActionRegistry
from reconciler.core.charts import ChartProvider, HelmChartProvider
from reconciler.errors import KubeconfigError
from reconciler.kube import kubeconfig
from reconciler.model.remote import RemoteTask
from reconciler.observability.logging import get_logger
from reconciler.remote.callbacks import CallbackSender
from reconciler.remote.clusters import ClientCache
from reconciler.remote.metrics import ServiceMetrics
from reconciler.remote.pool import Admission, WorkerPool
from reconciler.remote.settings import ComponentSettings
from reconciler.remote.worker import Job, TaskRunner


class ComponentService:
    """The pool, the runner and the callback client of one service instance."""

    def __init__(
        self,
        settings: ComponentSettings,
        *,
        charts: ChartProvider | None = None,
        actions: ActionRegistry | None = None,
        metrics: ServiceMetrics | None = None,
    ) -> None:
        self.settings = settings
        self.metrics = metrics or ServiceMetrics()
        self.http = httpx.AsyncClient(verify=settings.callback_verify(), trust_env=False)
        self.callbacks = CallbackSender(
            self.http,
            self.metrics,
            token=settings.outgoing_token,
            timeout=settings.callback_timeout,
        )
        self.clients = ClientCache(
            max_idle=settings.client_cache_size, idle_seconds=settings.client_idle_seconds
        )
        self.runner = TaskRunner(
            settings,
            charts or HelmChartProvider(ChartCache(settings.charts_cache)),
            actions if actions is not None else ActionRegistry.from_entry_points(),
            self.callbacks,
            self.metrics,
            self.clients,
        )
        self.pool = WorkerPool(settings.workers, self.metrics)

    def check(self, task: RemoteTask) -> str | None:
        """Why this instance will not take `task` (a 400 message), or None."""
        served = self.settings.components
        if served and task.component not in served:
            return (
                f"component: {task.component} is not served by this reconciler"
                f" (it serves {', '.join(served)})"
            )
        if not task.callback_url.startswith(("http://", "https://")):
            return "callbackURL: must be an http(s) URL"
        try:  # a task's kubeconfig never runs a command or reads a file on this host
            kubeconfig.check_text(task.kubeconfig)
        except KubeconfigError as exc:
            return f"kubeconfig: {exc}"
        return None

    def submit(self, task: RemoteTask) -> Admission:
        return self.pool.submit(Job(task), self.runner.run)

    async def aclose(self) -> None:
        await self.pool.shutdown(self.callbacks, self.settings.shutdown_timeout)
        await self.clients.aclose()
        await self.http.aclose()


def _error(status: int, message: str, **headers: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers or None)


def describe(exc: ValidationError | RequestValidationError) -> str:
    """`field.path: problem; ...` from pydantic errors (never the input values)."""
    parts = []
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ()) if p != "body"]
        field = ".".join(loc) or "body"
        problem = "invalid JSON" if err.get("type") == "json_invalid" else err.get("msg", "")
        parts.append(f"{field}: {problem}")
    return "; ".join(parts) or "body: invalid"


class _Unauthorized(Exception):
    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message


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
    expected = settings.token.encode()

    def authorize(request: Request) -> None:
        if not expected:
            return
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not given:
            svc.metrics.runs_rejected.labels(reason="unauthorized").inc()
            raise _Unauthorized(401, "missing bearer token")
        if not secrets.compare_digest(given.strip().encode(), expected):
            svc.metrics.runs_rejected.labels(reason="unauthorized").inc()
            raise _Unauthorized(403, "invalid token")

    @app.exception_handler(_Unauthorized)
    async def unauthorized(_: Request, exc: _Unauthorized) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else {}
        return _error(exc.status, exc.message, **headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(400, describe(exc))

    def pool_headers() -> dict[str, str]:
        return {"X-Pool-Busy": str(svc.pool.busy), "X-Pool-Size": str(svc.pool.size)}

    @app.post("/v1/run", dependencies=[Depends(authorize)])
    async def run(request: Request) -> Response:
        """Take a task (the body is a `RemoteTask`; parsed here so auth is checked first)."""
        try:
            task = RemoteTask.model_validate_json(await request.body())
        except ValidationError as exc:
            svc.metrics.runs_rejected.labels(reason="invalid").inc()
            return _error(400, describe(exc))
        problem = svc.check(task)
        if problem is not None:
            svc.metrics.runs_rejected.labels(reason="invalid").inc()
            return _error(400, problem)
        admission = svc.submit(task)
        if admission is Admission.BUSY:
            svc.metrics.runs_rejected.labels(reason="busy").inc()
            return _error(
                429,
                f"worker pool full ({svc.pool.size} tasks)",
                **{"Retry-After": "1", **pool_headers()},
            )
        if admission is Admission.SHUTTING_DOWN:
            svc.metrics.runs_rejected.labels(reason="shutting_down").inc()
            return _error(503, "component reconciler shutting down", **{"Retry-After": "1"})
        return JSONResponse({"status": "accepted"}, headers=pool_headers())

    @app.get("/health/live")
    async def live() -> dict[str, str]:
        return {"status": "live"}

    @app.get("/health/ready")
    async def ready() -> JSONResponse:
        if not svc.pool.accepting:
            return JSONResponse({"status": "shutting down"}, status_code=503)
        return JSONResponse(
            {"status": "ready", "busy": svc.pool.busy, "workers": svc.pool.size},
            headers=pool_headers(),
        )

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(generate_latest(svc.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app
