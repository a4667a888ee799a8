"""Requests by route and status code, and their latency: what an SRE's API dashboard and its
error-rate and latency alerts read.

The route label is the route's template (`/v1/clusters/{runtimeID}/status`), never the path, so
the series stay bounded whatever clients send; a request no route serves counts as
`unmatched`. Outermost, so refusals (401, 403, 413, 429) are counted too.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import ClassVar
from weakref import WeakKeyDictionary

from prometheus_client import CollectorRegistry, Counter, Histogram
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reconciler.api.routing import match_route

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class HttpMetrics:
    """The request series of the API apps serving from one registry (`of`: one set of series
    per registry, however many apps are built on it)."""

    _known: ClassVar[WeakKeyDictionary[CollectorRegistry, HttpMetrics]] = WeakKeyDictionary()

    @classmethod
    def of(cls, registry: CollectorRegistry) -> HttpMetrics:
        found = cls._known.get(registry)
        if found is None:
            found = cls._known[registry] = cls(registry)
        return found

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "reconciler_http_requests_total",
            "HTTP requests answered, by method, route template and status code.",
            ["method", "route", "code"],
            registry=registry,
        )
        self.latency = Histogram(
            "reconciler_http_request_duration_seconds",
            "Time from a request's arrival to the end of its answer, by method and route.",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )


class HttpMetricsMiddleware:
    def __init__(self, app: ASGIApp, *, routes: Sequence[BaseRoute], metrics: HttpMetrics) -> None:
        self.app = app
        self.routes = routes
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        code = 500  # an exception that escapes every handler ends as one

        async def send_and_note(message: Message) -> None:
            nonlocal code
            if message["type"] == "http.response.start":
                code = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            matched = match_route(self.routes, scope)
            route = matched.template if matched else "unmatched"
            method = str(scope.get("method", ""))
            self.metrics.requests.labels(method=method, route=route, code=str(code)).inc()
            self.metrics.latency.labels(method=method, route=route).observe(
                time.perf_counter() - started
            )
