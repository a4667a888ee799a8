"""Request guards that work on the raw ASGI messages: the body size limit and the audit trail.

`BodyLimitMiddleware` reads the whole body (declared length first, then the actual bytes, so a
chunked body cannot slip past) and answers 413 before any parsing; the app then receives the
buffered body. `AuditMiddleware` sits outermost so it also records requests refused by
authentication or the size limit; it writes one entry per state-changing request, built from
the route template, path parameters and the authenticated subject, never from the body.
Refusals (401/403) carry the client address, by which the audit log aggregates them; requests a
handler marks with `AUDIT_SKIP` (component reconciler heartbeats) are not audited.
"""

from __future__ import annotations

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
