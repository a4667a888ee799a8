"""Status helpers both controllers share: `lastOperation` and the state order a Kyma aggregates
its modules by (the backoff per object is `kube/workqueue.py`'s)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from reconciler.model.lifecycle import State
from reconciler.util.clock import utcnow

PRECEDENCE = (State.ERROR, State.WARNING, State.PROCESSING)


def last_operation(previous: dict[str, Any], message: str) -> dict[str, str]:
    """`lastOperation` with the time of the last *change* of the message: re-reporting the same
    outcome writes nothing (and so wakes no watcher)."""
    before = previous.get("lastOperation") or {}
    if before.get("operation") == message and before.get("lastUpdateTime"):
        return {"operation": message, "lastUpdateTime": str(before["lastUpdateTime"])}
    stamp = utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"operation": message, "lastUpdateTime": stamp}


def condition(
    old: dict[str, Any] | None,
    kind: str,
    true: bool | None,
    reason: str,
    message: str,
    generation: int | None,
) -> dict[str, Any]:
    """A `metav1.Condition` (`true` None: Unknown); the one before (`old`) as it was when
    nothing about it changed, so an unchanged outcome writes nothing, and its transition time
    kept while its status is."""
    status = "Unknown" if true is None else "True" if true else "False"
    new: dict[str, Any] = {"type": kind, "status": status, "reason": reason, "message": message}
    if generation is not None:
        new["observedGeneration"] = generation
    if old is not None and all(old.get(k) == v for k, v in new.items()):
        return old
    stamp = last_operation({}, "")["lastUpdateTime"]
    if old is not None and old.get("status") == status and old.get("lastTransitionTime"):
        stamp = str(old["lastTransitionTime"])
    new["lastTransitionTime"] = stamp
    return new


def aggregate(states: Iterable[str]) -> State:
    """Error > Warning > Processing > Ready, as the lifecycle manager's Kyma: a module being
    deleted makes it Processing, Unmanaged modules do not count."""
    present = {State(s) if s in State._value2member_map_ else State.PROCESSING for s in states}
    present.discard(State.UNMANAGED)
    if State.DELETING in present:
        present.add(State.PROCESSING)
    for state in PRECEDENCE:
        if state in present:
            return state
    if State.EMPTY in present:
        return State.PROCESSING
    return State.READY


def invalid(exc: ValidationError, prefix: str) -> str:
    """`<prefix>.<path>: <message>` of the first problem pydantic found (for a status)."""
    problem = exc.errors(include_input=False)[0]
    where = ".".join(str(p) for p in problem["loc"])
    return f"{prefix}.{where}: {problem['msg']}"
