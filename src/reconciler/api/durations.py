"""Go duration strings (`168h`, `1h30m`, `1.5s`, `300ms`), as the broker sends `offset`.

The original parsed them with Go's `time.ParseDuration`; this accepts the same grammar (a
sequence of decimal numbers with units ns, us/µs, ms, s, m, h, or a bare `0`) and the same
range (up to about 292 years). Negative offsets are refused: they select nothing useful.
"""

from __future__ import annotations

import datetime as dt
import re
from fractions import Fraction

NANOS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
MAX_NANOS = 2**63 - 1
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration(text: str) -> dt.timedelta:
    """The duration `text` denotes; ValueError naming the text when it is not one."""
    shown = text if len(text) <= 40 else text[:40] + "..."
    invalid = ValueError(f"invalid duration {shown!r}: expected e.g. 168h, 30m, 1h30m")
    body = text[1:] if text[:1] == "+" else text
    if text[:1] == "-":
        raise ValueError(f"invalid duration {shown!r}: must not be negative")
    if body == "0":
        return dt.timedelta(0)
    if not body:
        raise invalid
    total = Fraction(0)
    position = 0
    while position < len(body):
        match = _PART.match(body, position)
        if match is None:
            raise invalid
        if len(match.group(1)) > 30:  # far beyond the range; spare Fraction huge numbers
            raise ValueError(f"invalid duration {shown!r}: out of range")
        total += Fraction(match.group(1)) * NANOS[match.group(2)]
        if total > MAX_NANOS:
            raise ValueError(f"invalid duration {shown!r}: out of range")
        position = match.end()
    return dt.timedelta(microseconds=int(total) / 1000)


def nanoseconds(delta: dt.timedelta) -> int:
    """A timedelta as Go's `time.Duration` (int64 nanoseconds)."""
    return (delta // dt.timedelta(microseconds=1)) * 1000
