"""How the console answers: Jinja2 pages and fragments with the headers every answer carries.

Templates autoescape everything. Fragments carry a content ETag and answer 304 to a matching
`If-None-Match`, so the page's polling (`console.js`) swaps nothing while nothing changed: no
flicker, no lost keyboard focus, a few bytes per poll. Nothing is stored by the browser
(`no-store`: fragments show fleet data), and a strict Content-Security-Policy allows scripts and
styles from the console's own static files only.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

HERE = Path(__file__).parent
STATIC = HERE / "static"
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
        " connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _when(moment: dt.datetime | None) -> str:
    return "" if moment is None else moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _duration(delta: dt.timedelta | float | None) -> str:
    if delta is None:
        return ""
    seconds = int(delta.total_seconds() if isinstance(delta, dt.timedelta) else delta)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes}m" if hours < 48 else f"{hours // 24}d {hours % 24}h"


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    env.filters["duration"] = _duration
    return env


TEMPLATES = _environment()


def render(name: str, **context: Any) -> str:
    return TEMPLATES.get_template(name).render(**context)


def page(name: str, **context: Any) -> HTMLResponse:
    """A full page (a shell without fleet data: that comes in fragments)."""
    return HTMLResponse(render(name, **context), headers=SECURITY_HEADERS)


def fragment(request: Request, name: str, **context: Any) -> Response:
    """A fragment with a content ETag; 304 without a body when the client has it already."""
    body = render(name, **context).encode()
    tag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    headers = {**SECURITY_HEADERS, "ETag": tag}
    if tag in (request.headers.get("if-none-match") or ""):
        return Response(status_code=304, headers=headers)
    return HTMLResponse(body, headers=headers)
