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
from typing import TYPE_CHECKING, Any

from reconciler.errors import ReconcilerError
from reconciler.model.kube_object import KubeObject
from reconciler.model.task import Task

if TYPE_CHECKING:
    import structlog

    from reconciler.core.charts import ChartProvider
    from reconciler.kube.cluster import Cluster

ENTRY_POINT_GROUP = "reconciler.actions"
HOOKS = ("pre_reconcile", "reconcile", "post_reconcile", "pre_delete", "delete", "post_delete")


class ActionError(ReconcilerError):
    """A component action failed or could not be loaded."""


@dataclass
class ActionContext:
    """What an action may use. `objects` holds the rendered manifests (empty before render)."""

    task: Task
    kube: Cluster
    charts: ChartProvider
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
