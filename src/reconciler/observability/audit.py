"""The audit log: one JSON line per state-changing API request (who, what, on which cluster,
with what outcome), to a size-rotated file or to stdout.

It answers "who disabled this cluster, and when?" after the fact, so it records identities and
identifiers only. It deliberately has no field for request bodies: kubeconfigs and secret
configuration values cannot leak through it, and `AuditEntry.detail` is redacted by key before
it is written. Writing is synchronous and small (one line); a failing audit sink is logged, it
never fails the request that is being audited.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import logging.handlers
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import structlog

STDOUT = "-"
REDACTED = "<redacted>"
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
    time: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))

    def as_json(self) -> str:
        line: dict[str, Any] = {
            "time": self.time.isoformat(),
            "subject": self.subject,
            "action": self.action,
            "runtime_id": self.runtime_id,
            "outcome": self.outcome,
        }
        if self.scheduling_id:
            line["scheduling_id"] = self.scheduling_id
        if self.correlation_id:
            line["correlation_id"] = self.correlation_id
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


class AuditLog:
    """Writes entries as JSON lines through a dedicated (non-propagating) stdlib logger."""

    def __init__(self, handler: logging.Handler) -> None:
        self._handler = handler
        handler.setFormatter(logging.Formatter("%(message)s"))
        self._logger = logging.Logger(f"reconciler.audit.{id(self)}", logging.INFO)
        self._logger.propagate = False
        self._logger.addHandler(handler)

    @classmethod
    def to_file(cls, path: Path, *, max_bytes: int = 10 << 20, backups: int = 5) -> AuditLog:
        """A file rotated when it passes `max_bytes`, keeping `backups` old files."""
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8"
        )
        return cls(handler)

    @classmethod
    def to_stream(cls, stream: TextIO | None = None) -> AuditLog:
        """A stream (default: whatever `sys.stdout` is when a line is written)."""
        return cls(logging.StreamHandler(stream if stream is not None else _CurrentStdout()))

    @classmethod
    def open(cls, target: str, *, max_bytes: int = 10 << 20, backups: int = 5) -> AuditLog:
        """`-` for stdout, anything else is a file path."""
        if target == STDOUT:
            return cls.to_stream()
        return cls.to_file(Path(target), max_bytes=max_bytes, backups=backups)

    def record(self, entry: AuditEntry) -> None:
        try:
            self._logger.info(entry.as_json())
        except Exception:  # the audited request must not fail because its audit line did
            log.exception("audit line not written", action=entry.action)

    def close(self) -> None:
        self._logger.removeHandler(self._handler)
        self._handler.close()


class _CurrentStdout:
    """Whatever `sys.stdout` is at write time (test runners swap it)."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()
