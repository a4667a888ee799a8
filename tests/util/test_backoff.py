"""The one exponential backoff: a first delay doubled per failure, capped."""

from __future__ import annotations

import itertools

from reconciler.util.backoff import Backoff, delays


def test_a_retry_loop_sleeps_through_doubling_delays_up_to_the_cap() -> None:
    assert list(itertools.islice(delays(0.2, 3.0), 6)) == [0.2, 0.4, 0.8, 1.6, 3.0, 3.0]
    assert list(itertools.islice(delays(0.2), 4)) == [0.2, 0.4, 0.8, 1.6]


def test_each_key_backs_off_on_its_own_until_forgotten() -> None:
    backoff = Backoff(2.0, 30.0)
    assert [backoff.next("a") for _ in range(6)] == [2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert backoff.next("b") == 2.0
    backoff.forget("a")
    assert backoff.next("a") == 2.0
