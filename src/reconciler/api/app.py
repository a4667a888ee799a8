"""`create_app`: the external REST API v1 over a running engine's `MothershipService`.

The app owns no engine and no database: the caller passes the service, the settings and the
pluggable checks (spec validator, kubeconfig check, readiness probe), so `mothership serve`
and tests wire real parts the same way. Requests pass, outermost first: audit -> error guard ->
authentication/authorization -> body size limit -> FastAPI routing and validation. Given a
metrics registry, the app serves `/metrics` to the viewer role (the series name every runtime
ID) unless `metrics_port` moves it to a listener of its own (`api/server.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import structlog
from fastapi import APIRouter, FastAPI, Response
from fastapi.openapi.utils import get_openapi
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from reconciler.api.auth import (
    Authenticator,
    AuthMiddleware,
    Role,
    build_authenticator,
    requires,
)
from reconciler.api.console import mount_console
from reconciler.api.context import ApiContext, ReadinessProbe, SpecValidator
from reconciler.api.docs import mount_docs
from reconciler.api.errors import ErrorMiddleware, install_error_handlers
from reconciler.api.http_metrics import HttpMetrics, HttpMetricsMiddleware
from reconciler.api.middleware import (
    AuditMiddleware,
    BodyLimitMiddleware,
    CsrfMiddleware,
    LoadShedMiddleware,
)
from reconciler.api.routes import callbacks, clusters, health, operations, reconciliations
from reconciler.api.settings import ApiSettings
from reconciler.kube.probe import KubeconfigCheck, connect_check
from reconciler.model.cluster import ClusterSpec
from reconciler.mothership.planner import Planner
from reconciler.mothership.service import MothershipService
from reconciler.observability.audit import AuditLog

log = structlog.get_logger()
TITLE = "Reconciler mothership API"
DESCRIPTION = (
    "External API v1, compatible with the original reconciler's clients (environment broker,"
    ' KCP CLI). Errors are `{"error": "..."}`. Bearer tokens: viewer < operator < admin.'
)


async def accept_any_spec(_: ClusterSpec) -> None:
    """The default spec validator: accepts everything (the caller wires the real one)."""


def planner_validator(planner: Planner, settings: ApiSettings) -> SpecValidator:
    """The mothership's spec check: duplicates and invalid sets always; components without a
    chart only with `reject_unknown_components` (by default their operations fail in the run,
    with the reason in the cluster's status, as the original did)."""

    async def validate(spec: ClusterSpec) -> None:
        planner.validate(spec, reject_unknown=settings.reject_unknown_components)

    return validate


def database_probe(service: MothershipService) -> ReadinessProbe:
    """Ready when the database answers a (cheap) query through the service."""

    async def probe() -> bool:
        await service.reconciliations(last=1)
        return True

    return probe


def create_app(
    service: MothershipService,
    *,
    settings: ApiSettings,
    validate_spec: SpecValidator | None = None,
    check_kubeconfig: KubeconfigCheck | None = None,
    ready: ReadinessProbe | None = None,
    authenticator: Authenticator | None = None,
    audit: AuditLog | None = None,
    metrics: CollectorRegistry | None = None,
) -> FastAPI:
    """The API app. Refuses (ApiConfigError) when no authentication is configured and `auth` is
    not explicitly `none`. `audit` defaults to what the settings describe; `authenticator`
    replaces the bearer-token authenticators they describe (client identities stay)."""
    auth = build_authenticator(settings, authenticator)
    if auth.open:
        log.warning("API authentication is off (auth=none): every caller is an admin")
    own_audit = audit is None
    audit_log = audit or AuditLog.open(
        settings.audit_log,
        max_bytes=settings.audit_max_bytes,
        backups=settings.audit_backups,
        max_age=settings.audit_max_age,
        denied_window=settings.audit_denied_window,
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        flusher = asyncio.create_task(audit_log.flush_periodically())
        try:
            yield
        finally:
            flusher.cancel()
            await asyncio.gather(flusher, return_exceptions=True)
            await api.console_clients.aclose()
            if own_audit:
                audit_log.close()

    app = FastAPI(
        title=TITLE,
        description=DESCRIPTION,
        version="1.0.0",
        lifespan=lifespan,
        # Go clients may omit Content-Type; browsers must send JSON (CsrfMiddleware)
        strict_content_type=False,
        docs_url=None,  # ours, without a CDN (api/docs.py)
    )
    mount_docs(app)
    app.state.api = api = ApiContext(
        service=service,
        settings=settings,
        validate_spec=validate_spec or accept_any_spec,
        check_kubeconfig=check_kubeconfig
        or connect_check(
            settings.kubeconfig_timeout,
            allow_host_access=settings.kubeconfig_allow_host_access,
        ),
        ready=ready or database_probe(service),
    )
    install_error_handlers(app)
    v1 = APIRouter(prefix="/v1")
    for module in (clusters, reconciliations, operations):
        v1.include_router(module.router)
    v1.include_router(callbacks.router(settings, orphan_timeout=settings.callback_orphan_timeout))
    app.include_router(v1)
    app.include_router(health.router)
    if settings.console:
        mount_console(app)
    if metrics is not None and settings.metrics_port is None:
        app.add_api_route(
            "/metrics",
            metrics_endpoint(metrics),
            methods=["GET"],
            include_in_schema=False,
            dependencies=[requires(Role.VIEWER)],
        )

    routes = app.router.routes  # the live list: routes mounted later (e.g. /metrics) are seen
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.add_middleware(AuthMiddleware, routes=routes, auth=auth)
    app.add_middleware(CsrfMiddleware)  # before authentication: a forged request goes nowhere
    app.add_middleware(ErrorMiddleware)
    app.add_middleware(LoadShedMiddleware, max_reads=settings.max_concurrent_reads)
    app.add_middleware(AuditMiddleware, routes=routes, audit=audit_log)
    if metrics is not None:
        app.add_middleware(HttpMetricsMiddleware, routes=routes, metrics=HttpMetrics.of(metrics))
    _document_without_422(app)
    return app


def metrics_endpoint(registry: CollectorRegistry) -> Any:
    """A route handler serving the registry in the Prometheus text format."""

    async def metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return metrics


def _document_without_422(app: FastAPI) -> None:
    """FastAPI documents 422 for every route; this API answers 400 instead."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            for path in schema.get("paths", {}).values():
                for operation in path.values():
                    operation.get("responses", {}).pop("422", None)
            for name in ("HTTPValidationError", "ValidationError"):
                schema.get("components", {}).get("schemas", {}).pop(name, None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
