"""What one component run did, as the core reports it to its drivers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from reconciler.kube.records import Record
from reconciler.model.kube_object import ObjectKey
from reconciler.model.task import ProgressEvent, ProgressState
from reconciler.util.text import count

Report = Callable[[ProgressEvent], None]


@dataclass
class Outcome:
    """What one run did; `error` is empty on success."""

    component: str
    checked: int = 0
    """Objects whose live state was compared with the record (the no-op fast path)."""
    applied: int = 0
    changed: list[ObjectKey] = field(default_factory=list)
    pruned: list[ObjectKey] = field(default_factory=list)
    deleted: list[ObjectKey] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str = ""
    transient: bool = False
    """The error may go away by itself (cluster unreachable, not ready in time)."""
    seconds: float = 0.0
    record: Record | None = None
    """The component's inventory record as the run left it (None: not known, e.g. a component
    action did the work, or a delete): callers need not read it again."""

    @property
    def ok(self) -> bool:
        return not self.error

    def summary(self, *, deleting: bool = False) -> str:
        """The one line a successful run reports (a delete's in a delete's words)."""
        if deleting:
            return (
                f"{count(len(self.deleted), 'object')} deleted"
                if self.deleted
                else ("nothing to delete")
            )
        if self.checked and not self.applied:
            return f"{count(self.checked, 'object')} unchanged"
        parts = [f"{count(self.applied, 'object')} applied", f"{len(self.changed)} changed"]
        if self.pruned:
            parts.append(f"{len(self.pruned)} pruned")
        return ", ".join(parts)


class Phase:
    """How a run reports itself: `phase("render chart")` names what it does now, and
    `phase.blocked(reason)` what keeps it from being ready (`deployment ns/x: 0/1 replicas
    available`), which drivers store and show as the component's "why not ready"."""

    def __init__(self, component: str, emit: Report) -> None:
        self.component = component
        self.emit = emit

    def __call__(self, text: str) -> None:
        self.emit(ProgressEvent(self.component, ProgressState.RUNNING, text, text.split()[0]))

    def blocked(self, reason: str) -> None:
        self.emit(
            ProgressEvent(self.component, ProgressState.RUNNING, reason, "waiting", blocker=reason)
        )
