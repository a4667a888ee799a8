"""Settled resources: a periodic re-check that could not find anything is skipped.

At 25,000 Manifests a success interval of 5 minutes is 83 re-checks per second, each a handful
of requests to two apiservers, although almost always nothing changed: the watches already
report every change of a Kyma, a Manifest, the catalog and (the drift watch) the objects a
Manifest installed, and each such report starts a run at once. A resource whose last run ended
Ready is *settled*; a run due to its timer alone (`WorkQueue.by_timer`) is skipped while
- nothing was reported for it since (any report is a run that is not by timer),
- the watches that would report a change have been open without a gap since its last
  verifying run started (`covered`, for a Manifest: the drift watches of the kinds it installed),
- and that run is younger than `verify_interval`: the safety net for what a watch cannot see
  (an event lost inside the apiserver), after which the core's fast path runs as before.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

Covered = Callable[[float], bool]
"""Whether every change since the given moment (monotonic seconds) would have been reported."""


@dataclass(frozen=True)
class _Verified:
    at: float
    covered: Covered | None


class SettledRuns:
    def __init__(self, verify_interval: float) -> None:
        self.verify_interval = verify_interval
        self._runs: dict[Hashable, _Verified] = {}

    def __len__(self) -> int:
        return len(self._runs)

    def settle(self, key: Hashable, verified_at: float, covered: Covered | None = None) -> None:
        """`key`'s run that started at `verified_at` ended Ready."""
        self._runs[key] = _Verified(verified_at, covered)

    def forget(self, key: Hashable) -> None:
        self._runs.pop(key, None)

    def skip(self, key: Hashable, now: float) -> bool:
        """Whether a timer-only run of `key` at `now` can be skipped."""
        run = self._runs.get(key)
        if run is None or now - run.at >= self.verify_interval:
            return False
        return run.covered is None or run.covered(run.at)
