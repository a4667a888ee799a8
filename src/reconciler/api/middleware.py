"""Request guards that work on the raw ASGI messages: the body size limit, cross-site request
forgery, and the audit trail.

`BodyLimitMiddleware` reads the whole body (declared length first, then the actual bytes, so a
chunked body cannot slip past) and answers 413 before any parsing; the app then receives the
buffered body. `AuditMiddleware` sits outermost so it also records requests refused by
authentication or the size limit; it writes one entry per state-changing request, built from
the route template, path parameters and the authenticated subject, never from the body.
Refusals (401/403) carry the client address, by which the audit log aggregates them; requests a
handler marks with `AUDIT_SKIP` (component reconciler heartbeats) are not audited.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from typing import Any

from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reconciler.api.auth import PRINCIPAL, Principal
from reconciler.api.errors import error_response
from reconciler.api.routing import STATE_CHANGING, RouteMatch, match_route, scope_state
from reconciler.observability.audit import DENIED, AuditEntry, AuditLog

AUDIT_RUNTIME_ID = "audit_runtime_id"
"""Key in the request state under which a handler names the runtime a body referred to."""
AUDIT_SKIP = "audit_skip"
"""Key in the request state a handler sets to True for a request not worth a line (heartbeats;
refusals are audited regardless)."""


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_large = error_response(413, f"request body exceeds {self.max_bytes} bytes")
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await error_response(400, "invalid Content-Length")(scope, receive, send)
                    return
                if declared > self.max_bytes:
                    await too_large(scope, receive, send)
                    return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await too_large(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


SAME_ORIGIN = frozenset({"same-origin", "none"})
"""`Sec-Fetch-Site` values of a request the console itself (or the user, typing a URL) made."""


def _json_type(value: str) -> bool:
    media = value.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


class CsrfMiddleware:
    """Cross-site request forgery: a browser holding a client certificate (or, with OIDC in a
    proxy, a session) sends it with any request any site makes it send. Every state-changing
    request, whatever the identity, is refused when

    - it names a Content-Type other than JSON (`application/json`, `application/*+json`): 415.
      HTML forms can send only `application/x-www-form-urlencoded`, `multipart/form-data` and
      `text/plain` across sites; JSON needs a CORS preflight, which this API never grants;
    - a browser sent it from another site: `Sec-Fetch-Site` other than `same-origin`/`none`
      (the browser's own verdict, which no page can set; it also holds behind a proxy that
      rewrites `Host`), or, from a browser without it, an `Origin` (every browser sends one
      with a POST, PUT, PATCH, DELETE) whose host is not the request's own: 403;
    - a browser sent it without a Content-Type (a `fetch` of a bare body does): 415.

    A request without a Content-Type and without `Origin`/`Sec-Fetch-*` is a program's, not a
    browser's (the broker's Go client sends its JSON so) and is read as JSON as before."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in STATE_CHANGING:
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(
            {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        )
        if refusal is not None:
            await error_response(*refusal)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    @staticmethod
    def _refusal(headers: dict[str, str]) -> tuple[int, str] | None:
        content_type = headers.get("content-type", "").strip()
        if content_type and not _json_type(content_type):
            return 415, (
                f"Content-Type {content_type.split(';', 1)[0][:60]!r} refused: requests that "
                "change state must send application/json"
            )
        site = headers.get("sec-fetch-site")
        origin = headers.get("origin")
        if site is not None and site.strip().lower() not in SAME_ORIGIN:
            return 403, f"cross-site request refused (Sec-Fetch-Site: {site[:20]})"
        if origin is not None and site is None:  # a browser without Fetch Metadata
            host = headers.get("host", "").strip().lower()
            origin_host = urllib.parse.urlsplit(origin.strip()).netloc.lower()
            if not origin_host or origin_host != host:
                return 403, "cross-site request refused (Origin is not this API's own)"
        browser = origin is not None or site is not None
        if browser and not content_type:
            return 415, "requests that change state must send Content-Type: application/json"
        return None


READS = frozenset({"GET", "HEAD"})
RETRY_AFTER = {"Retry-After": "1"}


class LoadShedMiddleware:
    """At most `max_reads` reads in flight; the next is answered 503 at once (with Retry-After)
    instead of queueing for database connections until everything times out. Health probes are
    never refused (an orchestrator must not restart a busy instance); writes are not counted
    (the broker's and component reconcilers' requests are few and must not lose to viewers)."""

    def __init__(self, app: ASGIApp, *, max_reads: int) -> None:
        self.app = app
        self.max_reads = max_reads
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in READS
            or str(scope.get("path", "")).startswith("/health/")
        ):
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.max_reads:
            busy = error_response(
                503, "too many requests at once: try again shortly", headers=RETRY_AFTER
            )
            await busy(scope, receive, send)
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1


class AuditMiddleware:
    def __init__(self, app: ASGIApp, *, routes: Sequence[BaseRoute], audit: AuditLog) -> None:
        self.app = app
        self.routes = routes
        self.audit = audit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in STATE_CHANGING:
            await self.app(scope, receive, send)
            return
        status = 500
        matched = match_route(self.routes, scope)
        state = scope_state(scope)

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            if status in DENIED or not state.get(AUDIT_SKIP):
                self._record(scope, matched, state, status)

    def _record(
        self, scope: Scope, matched: RouteMatch | None, state: dict[str, Any], status: int
    ) -> None:
        params = matched.path_params if matched else {}
        principal = state.get(PRINCIPAL)
        template = matched.template if matched else str(scope.get("path", ""))[:200]
        client = scope.get("client")
        self.audit.record(
            AuditEntry(
                subject=principal.subject if isinstance(principal, Principal) else None,
                action=f"{scope['method']} {template}",
                outcome=status,
                runtime_id=_text(params.get("runtimeID") or state.get(AUDIT_RUNTIME_ID)),
                scheduling_id=_text(params.get("schedulingID")),
                correlation_id=_text(params.get("correlationID")),
                source=str(client[0]) if client and status in DENIED else None,
            )
        )


def _text(value: object) -> str | None:
    return str(value) if value else None
