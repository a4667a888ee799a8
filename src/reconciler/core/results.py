"""What one component run did, as the core reports it to its drivers."""

from __future__ import annotations

from dataclasses import dataclass, field

from reconciler.model.kube_object import ObjectKey


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

    @property
    def ok(self) -> bool:
        return not self.error
