"""The audit log: one JSON line per state-changing API request (who, what, on which cluster,
with what outcome), to a rotated file or to stdout.

It answers "who disabled this cluster, and when?" after the fact, so it records identities and
identifiers only. It deliberately has no field for request bodies: kubeconfigs and secret
configuration values cannot leak through it, and `AuditEntry.detail` is redacted by key before
it is written. Writing is synchronous and small (one line); a failing audit sink is logged, it
never fails the request that is being audited.

Nobody may flush the trail without credentials: refused requests (401/403) are aggregated per
source address (and subject, when the caller was authenticated but lacked the role) and window
(`DeniedAggregator`: the first refusal of a window is written as it happens, the rest as one
line with a count when the window ends), and a file target is kept by age (`max_age`) as well
as by size (`max_bytes` x `backups`).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import logging.handlers
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import structlog

from reconciler.util.clock import utcnow
from reconciler.util.secrecy import REDACTED

STDOUT = "-"
DENIED = frozenset({401, 403})
MAX_SOURCES = 10_000
"""Sources tracked at once; refusals from further ones share the source `*`."""
Source = tuple[str, str | None]
"""Client address and authenticated subject (None: not authenticated)."""
SECRET_KEYS = ("kubeconfig", "token", "secret", "password", "authorization", "key", "value")

log = structlog.get_logger()


@dataclass(frozen=True)
class AuditEntry:
    """What happened: `action` is the method and route template, `outcome` the status code."""

    subject: str | None
    action: str
    outcome: int
    runtime_id: str | None = None
    scheduling_id: str | None = None
    correlation_id: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
    time: dt.datetime = field(default_factory=utcnow)
    source: str | None = None
    """The client address, written for refused requests (they have no subject)."""

    def as_json(self) -> str:
        line: dict[str, Any] = {  # the schema of every log line, marked by `audit`
            "timestamp": self.time.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "level": "info",
            "event": "audit",
            "audit": True,
            "subject": self.subject,
            "action": self.action,
            "runtime_id": self.runtime_id,
            "outcome": self.outcome,
        }
        if self.scheduling_id:
            line["scheduling_id"] = self.scheduling_id
        if self.correlation_id:
            line["correlation_id"] = self.correlation_id
        if self.source:
            line["source"] = self.source
        if self.detail:
            line["detail"] = redact(self.detail)
        return json.dumps(line, sort_keys=False, default=str)


def redact(detail: Mapping[str, Any]) -> dict[str, Any]:
    """Copy of `detail` with the value of every key that looks secret replaced (recursively)."""
    clean: dict[str, Any] = {}
    for key, value in detail.items():
        if any(word in str(key).lower() for word in SECRET_KEYS):
            clean[str(key)] = REDACTED
        elif isinstance(value, Mapping):
            clean[str(key)] = redact(value)
        else:
            clean[str(key)] = value
    return clean


@dataclass
class _Window:
    started: float
    since: dt.datetime
    outcomes: Counter[int] = field(default_factory=Counter)
    """Refusals after the first one (which was written as it happened)."""


class DeniedAggregator:
    """Refused requests per source and subject: the first of each window passes, the rest
    become a count."""

    def __init__(
        self,
        window: float,
        *,
        max_sources: int = MAX_SOURCES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.window = window
        self.max_sources = max_sources
        self.clock = clock
        self._windows: dict[Source, _Window] = {}

    def admit(self, source: Source, outcome: int) -> tuple[bool, list[AuditEntry]]:
        """Whether this refusal is written itself (else it is counted), and the summaries of
        the windows that have ended meanwhile."""
        ended = self.due()
        if source not in self._windows and len(self._windows) >= self.max_sources:
            source = ("*", None)
        current = self._windows.get(source)
        if current is None:
            self._windows[source] = _Window(self.clock(), utcnow())
            return True, ended
        current.outcomes[outcome] += 1
        return False, ended

    def due(self, *, everything: bool = False) -> list[AuditEntry]:
        """Summaries of the windows that ended (all of them with `everything`), forgotten.

        Windows are kept in the order they started, so this looks only at the ended ones."""
        now = self.clock()
        ended = []
        for source, current in self._windows.items():
            if not everything and now - current.started < self.window:
                break
            ended.append(source)
        return [
            s for s in (self._summary(source, self._windows.pop(source)) for source in ended) if s
        ]

    @staticmethod
    def _summary(source: Source, ended: _Window) -> AuditEntry | None:
        if not ended.outcomes:
            return None
        return AuditEntry(
            subject=source[1],
            action="refused requests",
            outcome=ended.outcomes.most_common(1)[0][0],
            source=source[0],
            detail={
                "count": sum(ended.outcomes.values()),
                "outcomes": {str(code): n for code, n in sorted(ended.outcomes.items())},
                "since": ended.since.isoformat(),
            },
        )


class _AgedRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """Size rotation, and rotated files older than `max_age` seconds are deleted."""

    def __init__(self, path: Path, *, max_bytes: int, backups: int, max_age: float) -> None:
        super().__init__(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")
        self.path = path
        self.max_age = max_age
        self.expire()

    def doRollover(self) -> None:
        super().doRollover()
        self.expire()

    def expire(self) -> None:
        if self.max_age <= 0:
            return
        cutoff = time.time() - self.max_age
        for old in self.path.parent.glob(f"{self.path.name}.*"):
            try:
                if old.stat().st_mtime < cutoff:
                    old.unlink()
            except OSError as exc:
                log.warning("old audit file not removed", file=str(old), error=exc.strerror)


class AuditLog:
    """Writes entries as JSON lines through a dedicated (non-propagating) stdlib logger."""

    def __init__(self, handler: logging.Handler, *, denied_window: float = 60.0) -> None:
        self._handler = handler
        handler.setFormatter(logging.Formatter("%(message)s"))
        self._logger = logging.Logger(f"reconciler.audit.{id(self)}", logging.INFO)
        self._logger.propagate = False
        self._logger.addHandler(handler)
        self.denials = DeniedAggregator(denied_window)

    @classmethod
    def to_file(
        cls,
        path: Path,
        *,
        max_bytes: int = 10 << 20,
        backups: int = 5,
        max_age: float = 0,
        denied_window: float = 60.0,
    ) -> AuditLog:
        """A file rotated when it passes `max_bytes`, keeping `backups` old files, none older
        than `max_age` seconds (0: no age limit)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = _AgedRotatingFileHandler(
            path, max_bytes=max_bytes, backups=backups, max_age=max_age
        )
        return cls(handler, denied_window=denied_window)

    @classmethod
    def to_stream(cls, stream: TextIO | None = None, *, denied_window: float = 60.0) -> AuditLog:
        """A stream (default: whatever `sys.stdout` is when a line is written)."""
        handler = logging.StreamHandler(stream if stream is not None else _CurrentStdout())
        return cls(handler, denied_window=denied_window)

    @classmethod
    def open(
        cls,
        target: str,
        *,
        max_bytes: int = 10 << 20,
        backups: int = 5,
        max_age: float = 0,
        denied_window: float = 60.0,
    ) -> AuditLog:
        """`-` for stdout, anything else is a file path."""
        if target == STDOUT:
            return cls.to_stream(denied_window=denied_window)
        return cls.to_file(
            Path(target),
            max_bytes=max_bytes,
            backups=backups,
            max_age=max_age,
            denied_window=denied_window,
        )

    def record(self, entry: AuditEntry) -> None:
        """Write `entry`; a refusal (401/403) only when it is the first of its source and
        subject in the window (the others are counted)."""
        if entry.outcome in DENIED:
            source = (entry.source or "unknown", entry.subject)
            first, ended = self.denials.admit(source, entry.outcome)
        else:
            first, ended = True, self.denials.due()
        for summary in ended:
            self._write(summary)
        if first:
            self._write(entry)

    def flush(self) -> None:
        """Write the counts of refusal windows that have ended; expire old files."""
        for summary in self.denials.due():
            self._write(summary)
        if isinstance(self._handler, _AgedRotatingFileHandler):
            self._handler.expire()

    async def flush_periodically(self) -> None:
        """`flush` once per refusal window, until cancelled (run it beside the app)."""
        while True:
            await asyncio.sleep(self.denials.window)
            self.flush()

    def _write(self, entry: AuditEntry) -> None:
        try:
            self._logger.info(entry.as_json())
        except Exception:  # the audited request must not fail because its audit line did
            log.exception("audit line not written", action=entry.action)

    def close(self) -> None:
        for summary in self.denials.due(everything=True):
            self._write(summary)
        self._logger.removeHandler(self._handler)
        self._handler.close()


class _CurrentStdout:
    """Whatever `sys.stdout` is at write time (test runners swap it)."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()
