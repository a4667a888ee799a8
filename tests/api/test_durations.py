"""Go duration strings as the broker sends `offset`, and Go's int64-nanosecond durations."""

from __future__ import annotations

import contextlib
import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconciler.api.durations import nanoseconds, parse_go_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("168h", dt.timedelta(days=7)),
        ("30m", dt.timedelta(minutes=30)),
        ("1h30m15s", dt.timedelta(hours=1, minutes=30, seconds=15)),
        ("1.5s", dt.timedelta(seconds=1.5)),
        (".5h", dt.timedelta(minutes=30)),
        ("300ms", dt.timedelta(milliseconds=300)),
        ("2us", dt.timedelta(microseconds=2)),
        ("2µs", dt.timedelta(microseconds=2)),
        ("0", dt.timedelta(0)),
        ("+5m", dt.timedelta(minutes=5)),
    ],
)
def test_go_durations_parse(text: str, expected: dt.timedelta) -> None:
    assert parse_go_duration(text) == expected


@pytest.mark.parametrize(
    "text", ["", "h", "5", "1d", "1e3h", "a week", "-1h", "3000000h", "9" * 100 + "h"]
)
def test_invalid_or_negative_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_go_duration(text)


@given(st.integers(min_value=0, max_value=10**12))
def test_nanoseconds_round_trip_at_microsecond_precision(micros: int) -> None:
    delta = dt.timedelta(microseconds=micros)
    assert parse_go_duration(f"{nanoseconds(delta)}ns") == delta


@given(st.text(max_size=30))
def test_any_text_parses_or_raises_value_error(text: str) -> None:
    with contextlib.suppress(ValueError):
        assert parse_go_duration(text) >= dt.timedelta(0)
