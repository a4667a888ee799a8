"""Every failure leaves the API as `{"error": "<message>"}` with the original's status codes.

The error body, validation messages and the last-line `ErrorMiddleware` are the ones the
component reconciler service uses too (`reconciler.web.errors`, re-exported here); on top of
them this maps a 405 with every allowed method, and domain errors, in one place: not found ->
404, forbidden -> 403, a conflict with the current state -> 409 unless a route maps it itself,
any other expected error -> 500 (the broker retries on 5xx).
"""

from __future__ import annotations

import sqlalchemy.exc
import structlog
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from reconciler.api.routing import allowed_methods
from reconciler.errors import ConflictError, ForbiddenError, NotFoundError, ReconcilerError
from reconciler.model.status import StatusTransitionError
from reconciler.web.errors import (
    ErrorMiddleware,
    describe_validation,
    error_response,
    install_http_error_handlers,
    validation_message,
)

__all__ = [
    "ApiError",
    "ErrorMiddleware",
    "describe_validation",
    "error_response",
    "install_error_handlers",
    "validation_message",
]
log = structlog.get_logger()


class ApiError(ReconcilerError):
    """Raised by route handlers for an answer with a specific status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def _http_exception(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:  # the router names only the first route's methods
        allowed = allowed_methods(request.app.router.routes, request.scope)
        headers["Allow"] = ", ".join(allowed) or headers.get("Allow", "")
    return error_response(exc.status_code, str(exc.detail), headers=headers)


async def _api_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, str(exc))


async def _not_found(_: Request, exc: Exception) -> JSONResponse:
    return error_response(404, str(exc))


async def _forbidden(_: Request, exc: Exception) -> JSONResponse:
    return error_response(403, str(exc))


async def _conflict(_: Request, exc: Exception) -> JSONResponse:
    return error_response(409, str(exc))


async def _database_busy(request: Request, _: Exception) -> JSONResponse:
    log.warning("database connections exhausted", method=request.method, path=request.url.path)
    return error_response(
        503, "the database is busy: try again shortly", headers={"Retry-After": "1"}
    )


async def _reconciler_error(request: Request, exc: Exception) -> JSONResponse:
    log.error("request failed", method=request.method, path=request.url.path, error=str(exc))
    return error_response(500, str(exc))


def install_error_handlers(app: FastAPI) -> None:
    install_http_error_handlers(app)
    app.add_exception_handler(HTTPException, _http_exception)  # replaces the plain one: 405
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(NotFoundError, _not_found)
    app.add_exception_handler(ForbiddenError, _forbidden)
    app.add_exception_handler(ConflictError, _conflict)
    app.add_exception_handler(StatusTransitionError, _conflict)
    app.add_exception_handler(ReconcilerError, _reconciler_error)
    # the API's pool had no connection within `api_pool_timeout`: busy, not broken
    app.add_exception_handler(sqlalchemy.exc.TimeoutError, _database_busy)
