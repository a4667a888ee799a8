"""Per-runtime admission for the listener: a token bucket per runtime (over it: 429 with
`Retry-After`), and refusals aggregated per runtime and window in the log (the mothership's
`DeniedAggregator`: the first refusal of a window is logged as it happens, the rest as one line
with a count when the window has ended)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from reconciler.observability.audit import AuditEntry, DeniedAggregator
from reconciler.observability.logging import get_logger

MAX_RUNTIMES = 10_000
"""Buckets kept at once; beyond that, full buckets (runtimes quiet for a while) are forgotten."""


@dataclass
class _Bucket:
    tokens: float
    last: float


class RuntimeBuckets:
    """`rate` events per second per runtime on average, at most `burst` at once."""

    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}

    def take(self, runtime: str) -> float:
        """0 when `runtime` may send this event (a token is taken), else seconds until it may."""
        now = self._clock()
        bucket = self._buckets.get(runtime)
        if bucket is None:
            if len(self._buckets) >= MAX_RUNTIMES:
                self._forget_full(now)
            bucket = self._buckets[runtime] = _Bucket(float(self.burst), now)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.last) * self.rate)
        bucket.last = now
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return 0.0
        return (1 - bucket.tokens) / self.rate

    def _forget_full(self, now: float) -> None:
        for runtime, bucket in list(self._buckets.items()):
            if bucket.tokens + (now - bucket.last) * self.rate >= self.burst:
                del self._buckets[runtime]


def retry_after(seconds: float) -> str:
    """A `Retry-After` value: whole seconds, at least 1."""
    return str(max(1, math.ceil(seconds)))


class RefusalLog:
    """Refused events in the log: one line per runtime and window, then a count."""

    def __init__(self, window: float) -> None:
        self._denials = DeniedAggregator(window)
        self._log = get_logger(part="watcher-listener")

    def refused(self, runtime: str, status: int, **detail: str) -> None:
        first, ended = self._denials.admit((runtime, None), status)
        self._summaries(ended)
        if first:
            self._log.warning("watcher event refused", runtime=runtime, status=status, **detail)

    def flush(self) -> None:
        """Log the counts of every window, ended or not (the listener stops)."""
        self._summaries(self._denials.due(everything=True))

    def tick(self) -> None:
        """Log the counts of the windows that have ended (called on every request)."""
        self._summaries(self._denials.due())

    def _summaries(self, ended: list[AuditEntry]) -> None:
        for entry in ended:
            self._log.warning(
                "watcher events refused",
                runtime=entry.source,
                count=entry.detail.get("count"),
                outcomes=entry.detail.get("outcomes"),
                since=entry.detail.get("since"),
            )
