"""Comparing Kubernetes and machine image versions as Gardener orders them (`1.30` < `1.30.5` <
`1.31.0`; `1592.1.0` < `1592.10`)."""

from __future__ import annotations

import re

_VERSION = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[-+].*)?$")


def parse(version: str) -> tuple[int, int, int] | None:
    match = _VERSION.match(version.strip())
    if match is None:
        return None
    major, minor, patch = (int(part or 0) for part in match.groups())
    return major, minor, patch


def newer(candidate: str, current: str | None) -> str:
    """`current` when it is a higher version than `candidate` (Gardener updated it), else
    `candidate`; a version that does not parse never wins."""
    if not current or current == candidate:
        return candidate
    mine, theirs = parse(candidate), parse(current)
    if mine is not None and theirs is not None and theirs > mine:
        return current
    return candidate


def lower(candidate: str, current: str) -> bool:
    """Whether `candidate` is a lower version than `current` (a downgrade)."""
    mine, theirs = parse(candidate), parse(current)
    return mine is not None and theirs is not None and mine < theirs
