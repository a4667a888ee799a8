"""Reconciler: keeps Kyma-style component sets on Kubernetes clusters in their desired state.

This module is the public surface for Python users, chiefly the authors of component actions
(entry-point group `reconciler.actions`): `ActionContext` is what every hook receives, and its
parts (`Task` with its source, `ChartRef` | `RawManifest` | `GivenObjects`; `ClusterActions`,
what an action may do with the cluster, which the `Cluster` given does; `KubeObject`) are here
too, so a plug-in imports from `reconciler` and nothing deeper.
Everything else is internal and may move.

The names load on first use (PEP 562): the CLI imports this package at every start, and the
action API pulls in `importlib.metadata`, pydantic and the cluster client, which a `--help`
does not need.
"""

from __future__ import annotations

from reconciler.version import __version__

TYPE_CHECKING = False  # `typing` alone costs more to import than this whole module
if TYPE_CHECKING:
    from typing import Any

    from reconciler.core.actions import (
        ENTRY_POINT_GROUP,
        HOOKS,
        ActionContext,
        ActionError,
        ClusterActions,
    )
    from reconciler.errors import ReconcilerError
    from reconciler.kube.cluster import Cluster
    from reconciler.model.kube_object import KubeObject
    from reconciler.model.task import ChartRef, GivenObjects, RawManifest, Task, TaskType

_EXPORTS = {
    "ActionContext": "reconciler.core.actions",
    "ActionError": "reconciler.core.actions",
    "ENTRY_POINT_GROUP": "reconciler.core.actions",
    "HOOKS": "reconciler.core.actions",
    "ClusterActions": "reconciler.core.actions",
    "Cluster": "reconciler.kube.cluster",
    "KubeObject": "reconciler.model.kube_object",
    "ReconcilerError": "reconciler.errors",
    "Task": "reconciler.model.task",
    "ChartRef": "reconciler.model.task",
    "RawManifest": "reconciler.model.task",
    "GivenObjects": "reconciler.model.task",
    "TaskType": "reconciler.model.task",
}

__all__ = [
    "ENTRY_POINT_GROUP",
    "HOOKS",
    "ActionContext",
    "ActionError",
    "ChartRef",
    "Cluster",
    "ClusterActions",
    "GivenObjects",
    "KubeObject",
    "RawManifest",
    "ReconcilerError",
    "Task",
    "TaskType",
    "__version__",
]


if not TYPE_CHECKING:  # mypy sees the imports above, so a misspelt name fails type checking

    def __getattr__(name: str) -> Any:
        """Import an exported name's module the first time the name is asked for."""
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module 'reconciler' has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
