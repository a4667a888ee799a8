"""Every failure leaves the API as `{"error": "<message>"}` with the original's status codes.

FastAPI's own answers (422 validation details, 404/405 `detail`) are turned into that body here:
validation problems become 400 `"<field>: <problem>"` and never echo the input (a rejected
body may hold a kubeconfig). Domain errors map in one place: not found -> 404, forbidden ->
403, a conflict with the current state -> 409 unless a route maps it itself, any other expected
error -> 500 (the broker retries on 5xx). Unexpected exceptions are logged and answered 500
by `ErrorMiddleware`.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable, Mapping
from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reconciler.api.routing import allowed_methods
from reconciler.errors import ConflictError, ForbiddenError, NotFoundError, ReconcilerError
from reconciler.model.status import StatusTransitionError

log = structlog.get_logger()
MAX_PROBLEMS = 5
_LOCATIONS = {"body", "query", "path", "header", "cookie"}


class ApiError(ReconcilerError):
    """Raised by route handlers for an answer with a specific status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def error_response(
    status: int, message: str, *, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=dict(headers or {}))


def _field(location: Iterable[Any]) -> str:
    parts = [str(p) for p in location]
    if parts and parts[0] in _LOCATIONS:
        parts = parts[1:]
    text = ""
    for part in parts:
        text += f"[{part}]" if part.isdigit() else (f".{part}" if text else part)
    return text or "body"


def describe_validation(errors: Iterable[Mapping[str, Any]]) -> str:
    """`field: problem; field: problem` for the first few problems, never the input values."""
    problems = []
    for error in errors:
        if error.get("type") == "json_invalid":
            detail = (error.get("ctx") or {}).get("error", "")
            problems.append(f"body: malformed JSON{': ' + str(detail) if detail else ''}")
            continue
        loc = tuple(error.get("loc", ()))
        if error.get("type") == "missing" and loc == ("body",):
            problems.append("body: a JSON body is required")
            continue
        problems.append(f"{_field(loc)}: {error.get('msg', 'invalid')}")
    if not problems:
        return "invalid request"
    shown = "; ".join(problems[:MAX_PROBLEMS])
    more = len(problems) - MAX_PROBLEMS
    return shown + (f"; and {more} more" if more > 0 else "")


def validation_message(exc: ValidationError) -> str:
    return describe_validation(exc.errors(include_input=False, include_url=False))


async def _request_validation(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return error_response(400, describe_validation(exc.errors()))


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


async def _pydantic(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ValidationError)
    return error_response(400, validation_message(exc))


async def _not_found(_: Request, exc: Exception) -> JSONResponse:
    return error_response(404, str(exc))


async def _forbidden(_: Request, exc: Exception) -> JSONResponse:
    return error_response(403, str(exc))


async def _conflict(_: Request, exc: Exception) -> JSONResponse:
    return error_response(409, str(exc))


async def _reconciler_error(request: Request, exc: Exception) -> JSONResponse:
    log.error("request failed", method=request.method, path=request.url.path, error=str(exc))
    return error_response(500, str(exc))


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _request_validation)
    app.add_exception_handler(HTTPException, _http_exception)
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(ValidationError, _pydantic)
    app.add_exception_handler(NotFoundError, _not_found)
    app.add_exception_handler(ForbiddenError, _forbidden)
    app.add_exception_handler(ConflictError, _conflict)
    app.add_exception_handler(StatusTransitionError, _conflict)
    app.add_exception_handler(ReconcilerError, _reconciler_error)


class ErrorMiddleware:
    """Last line: an unexpected exception is logged (type and traceback, no local variables, no
    request data) and answered `500 {"error": "internal error"}`, not a dropped connection."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            # A plain traceback, never exc_info: renderers that show local variables would print
            # request bodies (kubeconfigs); a ValidationError's text would include its input.
            if isinstance(exc, ValidationError):
                error = validation_message(exc)
            else:
                error = "".join(traceback.format_exception(exc)).rstrip()
            log.error(
                "request failed", method=scope.get("method"), path=scope.get("path"), error=error
            )
            if not started:
                await error_response(500, "internal error")(scope, receive, send)
