"""Exponential backoff, the project's one: a first delay doubled after every failure, capped.

`delays` is the sequence one retry loop sleeps through; `Backoff` keeps one such count per key
(the controllers' failing objects, the work queue's requeues).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator


def delay_after(failures: int, first: float, cap: float) -> float:
    """The delay after `failures` consecutive failures: `first` doubled that often, capped."""
    return float(min(first * 2**failures, cap))


def delays(first: float, cap: float = float("inf")) -> Iterator[float]:
    """`first`, `2*first`, `4*first`, ... never more than `cap`: one retry loop's sleeps."""
    failures = 0
    while True:
        yield delay_after(failures, first, cap)
        failures += 1


class Backoff:
    """`base`, doubled per consecutive failure of one key, capped at `cap`."""

    def __init__(self, base: float, cap: float) -> None:
        self.base = base
        self.cap = cap
        self._failures: dict[Hashable, int] = {}

    def next(self, key: Hashable) -> float:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        return delay_after(failures, self.base, self.cap)

    def forget(self, key: Hashable) -> None:
        self._failures.pop(key, None)
