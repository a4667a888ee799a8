"""Adding or removing one finalizer of a resource we own, as operator mode and the
infrastructure manager both do: a merge patch that carries the resourceVersion it was computed
from, so a concurrent change makes the apiserver answer 409 instead of losing someone's
finalizer."""

from __future__ import annotations

from typing import Any


def finalizer_patch(meta: dict[str, Any], finalizer: str, present: bool) -> dict[str, Any] | None:
    """The merge patch that makes `finalizer` present (or absent) in `meta`; None: it already is."""
    current: list[str] = list(meta.get("finalizers") or [])
    if (finalizer in current) == present:
        return None
    wanted = [*current, finalizer] if present else [f for f in current if f != finalizer]
    return {"metadata": {"finalizers": wanted, "resourceVersion": meta["resourceVersion"]}}
