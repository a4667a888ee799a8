"""Delivering callbacks to the mothership: heartbeats once, final results until they arrive.

A heartbeat that fails is only logged; the next one follows a few seconds later. A final result
(`success`/`error`) is retried with backoff until the mothership answers 2xx, until it answers
400/404 (the operation is already final or unknown there, so retrying cannot help), or until a
deadline. Every callback carries the fleet-wide bearer token (when configured) and the task's
own callback secret (`X-Callback-Secret`), which the mothership checks per operation. Callback
URLs are logged without user information or query (either may carry secrets).
"""

from __future__ import annotations

import enum
import time

import httpx

from reconciler.charts.sources import redact
from reconciler.errors import WaitTimeout
from reconciler.model.remote import CALLBACK_SECRET_HEADER, CallbackMessage, RemoteTask
from reconciler.observability.logging import get_logger
from reconciler.remote.metrics import ServiceMetrics
from reconciler.util.polling import poll_until

NOT_EXPECTED = frozenset({400, 404})
"""Answers meaning "the mothership no longer expects callbacks for this operation"."""


class Delivery(enum.Enum):
    DELIVERED = "delivered"
    NOT_EXPECTED = "not_expected"
    FAILED = "failed"


class CallbackSender:
    """POSTs `CallbackMessage`s to a task's callback URL with the configured bearer token and the
    task's callback secret, over one shared HTTP client."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        metrics: ServiceMetrics,
        *,
        token: str = "",
        timeout: float = 5.0,
        first_delay: float = 0.25,
        max_delay: float = 5.0,
    ) -> None:
        self.http = http
        self.metrics = metrics
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.timeout = timeout
        self.first_delay = first_delay
        self.max_delay = max_delay

    async def send(
        self, task: RemoteTask, message: CallbackMessage, *, timeout: float | None = None
    ) -> Delivery:
        """One attempt."""
        status = message.status.value
        log = get_logger(callback=redact(task.callback_url), status=status)
        headers = dict(self.headers)
        if task.callback_secret:
            headers[CALLBACK_SECRET_HEADER] = task.callback_secret
        try:
            response = await self.http.post(
                task.callback_url,
                json=message.model_dump(mode="json", by_alias=True, exclude_none=True),
                headers=headers,
                timeout=timeout or self.timeout,
            )
        except httpx.HTTPError as exc:
            self.metrics.callback_failures.labels(status=status, reason=type(exc).__name__).inc()
            log.warning("callback not delivered", error=f"{type(exc).__name__}: {exc}")
            return Delivery.FAILED
        if response.is_success:
            self.metrics.callbacks.labels(status=status).inc()
            return Delivery.DELIVERED
        self.metrics.callback_failures.labels(status=status, reason=str(response.status_code)).inc()
        log.warning(
            "callback refused", http_status=response.status_code, answer=response.text[:200]
        )
        if response.status_code in NOT_EXPECTED:
            return Delivery.NOT_EXPECTED
        return Delivery.FAILED

    async def deliver(
        self, task: RemoteTask, message: CallbackMessage, *, deadline: float
    ) -> Delivery:
        """Retry with backoff until delivered, not expected, or the (monotonic) deadline."""

        async def attempt() -> Delivery | None:
            remaining = deadline - time.monotonic()
            result = await self.send(task, message, timeout=max(0.1, min(self.timeout, remaining)))
            return None if result is Delivery.FAILED else result

        try:
            return await poll_until(
                attempt,
                timeout=max(0.0, deadline - time.monotonic()),
                what=f"the mothership to take the {message.status.value} callback",
                interval=self.first_delay,
                max_interval=self.max_delay,
            )
        except WaitTimeout as exc:
            get_logger(callback=redact(task.callback_url)).error(
                "final callback given up", error=str(exc)
            )
            return Delivery.FAILED
