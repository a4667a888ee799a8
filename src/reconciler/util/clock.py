"""Time for the whole project: one clock type, aware UTC timestamps.

Repositories and loops take a `Clock` so tests can control time; databases hand back naive
timestamps (SQLite keeps no zone), which `aware` reads as UTC.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

Clock = Callable[[], dt.datetime]


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def aware(value: dt.datetime) -> dt.datetime:
    """`value` with its zone; a naive one is UTC (how the store writes every timestamp)."""
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
