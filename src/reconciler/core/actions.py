"""Component-specific Python actions, plugged in through the `reconciler.actions` entry points.

An entry point named after a component resolves to an object (or a class, instantiated once)
with any of the async hooks `pre_reconcile`, `reconcile`, `post_reconcile`, `pre_delete`,
`delete`, `post_delete`, each taking an `ActionContext`. `reconcile` and `delete` replace the
generic behaviour; the others run around it. Components without an entry point get the generic
behaviour only.
"""

from __future__ import annotations

import importlib.metadata
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from reconciler.errors import ReconcilerError
from reconciler.model.kube_object import KubeObject
from reconciler.model.task import Task

if TYPE_CHECKING:
    import structlog

ENTRY_POINT_GROUP = "reconciler.actions"
HOOKS = ("pre_reconcile", "reconcile", "post_reconcile", "pre_delete", "delete", "post_delete")


class ActionError(ReconcilerError):
    """A component action failed or could not be loaded."""


class ClusterActions(Protocol):
    """What an action may do with the cluster: read, create, apply (server-side, forced, as the
    reconciler's field manager) and delete single objects, given as `KubeObject`s or dicts.
    The reconciler hands over its `Cluster`, which does all of this and more; an action keeps
    to this much, so that it keeps working whatever else the cluster access changes."""

    async def get(self, obj: KubeObject | dict[str, Any]) -> KubeObject | None:
        """The live object, None when it does not exist."""
        ...

    async def create(self, obj: KubeObject | dict[str, Any]) -> KubeObject | None:
        """Create `obj` only if it does not exist yet; None when it does."""
        ...

    async def apply(self, obj: KubeObject | dict[str, Any]) -> KubeObject:
        """Server-side apply; the object as the apiserver stored it."""
        ...

    async def delete(self, obj: KubeObject | dict[str, Any]) -> bool:
        """Delete `obj`; False when it did not exist (or its kind is not served)."""
        ...


@dataclass
class ActionContext:
    """The one argument of every hook, the same object for all hooks of one run (an action may
    keep its own notes on it between them).

    `task`: the component's task, as the reconciler runs it. `kube`: the target cluster, as far
    as an action may use it (`ClusterActions`). `logger`: a structlog logger bound to the
    component and the run's correlation id. `objects`: the rendered manifests, filled in once
    they are rendered (empty in `pre_reconcile` and `pre_delete`; after a generic delete, the
    recorded objects too); the generic steps keep their own list, so changing this one changes
    nothing but what later hooks see."""

    task: Task
    kube: ClusterActions
    logger: structlog.typing.FilteringBoundLogger
    objects: list[KubeObject] = field(default_factory=list)


Hook = Callable[[ActionContext], Awaitable[Any]]


class ActionRegistry:
    """Component name -> action object."""

    def __init__(self, actions: Mapping[str, object] | None = None) -> None:
        self._actions = dict(actions or {})

    @classmethod
    def from_entry_points(cls, group: str = ENTRY_POINT_GROUP) -> ActionRegistry:
        actions: dict[str, object] = {}
        for entry in importlib.metadata.entry_points(group=group):
            try:
                loaded = entry.load()
            except Exception as exc:  # a broken plugin must name itself, not crash the CLI
                raise ActionError(
                    f"cannot load action {entry.name!r} ({entry.value}): {exc}"
                ) from exc
            actions[entry.name] = loaded() if inspect.isclass(loaded) else loaded
        return cls(actions)

    def hook(self, component: str, name: str) -> Hook | None:
        action = self._actions.get(component)
        found = getattr(action, name, None) if action is not None else None
        return found if callable(found) else None

    def names(self) -> list[str]:
        return sorted(self._actions)
