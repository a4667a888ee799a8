"""Every failure leaves a service as `{"error": "<message>"}` with a fitting status code.

FastAPI's own answers (422 validation details, 404/405 `detail`) are turned into that body here:
validation problems become 400 `"<field>: <problem>"` and never echo the input (a rejected body
may hold a kubeconfig). Unexpected exceptions are logged and answered 500 by `ErrorMiddleware`.
The mothership API adds its domain errors on top (`reconciler.api.errors`).
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

log = structlog.get_logger()
MAX_PROBLEMS = 5
_LOCATIONS = {"body", "query", "path", "header", "cookie"}


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


async def request_validation(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return error_response(400, describe_validation(exc.errors()))


async def http_exception(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    return error_response(exc.status_code, str(exc.detail), headers=exc.headers)


async def pydantic_validation(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ValidationError)
    return error_response(400, validation_message(exc))


def install_http_error_handlers(app: FastAPI) -> None:
    """`{"error": ...}` bodies for FastAPI's own errors and for pydantic validation errors."""
    app.add_exception_handler(RequestValidationError, request_validation)
    app.add_exception_handler(HTTPException, http_exception)
    app.add_exception_handler(ValidationError, pydantic_validation)


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
