"""ModuleConfig and SyncResource: how a module team's own operator (a "module manager" in the
control plane) sees what remote users configured, and says what goes into the remote cluster.

Ours, not the lifecycle manager's (it has no such kinds), in its group and version so the
controllers read them like the others. `ModuleConfig` is written by the operator only (a copy of
one remote module custom resource's spec); `SyncResource` is written by module managers and
applied by the operator to its Kyma's remote cluster.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from reconciler.model.lifecycle import PRESERVE, Kind, LastOperation, State, TrackingObject
from reconciler.model.resource import ResourceModel


class ModuleConfigSpec(ResourceModel):
    kyma: str
    """The Kyma (same namespace) whose remote cluster holds the module custom resource."""
    module: str
    resource: TrackingObject
    """Which remote object this is a copy of (apiVersion, kind, metadata.name/namespace)."""
    source_generation: int | None = None
    """`metadata.generation` of the remote object when it was copied."""
    config: dict[str, Any] = Field(default_factory=dict, json_schema_extra=PRESERVE)
    """The remote object's `spec`, as it is."""


Object = Annotated[dict[str, Any], Field(json_schema_extra=PRESERVE)]


class SyncResourceSpec(ResourceModel):
    kyma: str
    """The Kyma (same namespace) whose target cluster gets the objects."""
    module: str | None = None
    objects: list[Object] = Field(default_factory=list)
    """Complete Kubernetes objects (apiVersion, kind, metadata.name; namespace optional)."""


class SyncObjectStatus(ResourceModel):
    version: str
    kind: str
    name: str
    state: str
    """`Applied`, `Pending` (not applied because another object failed) or `Error`."""
    group: str | None = None
    namespace: str | None = None
    message: str | None = None


class SyncResourceStatus(ResourceModel):
    state: State
    last_operation: LastOperation | None = None
    observed_generation: int | None = None
    objects: list[SyncObjectStatus] | None = None


class ModuleConfigKind(Kind):
    kind, plural, spec = "ModuleConfig", "moduleconfigs", ModuleConfigSpec
    short_names = ("mc",)


class SyncResourceKind(Kind):
    kind, plural, spec, status = (
        "SyncResource",
        "syncresources",
        SyncResourceSpec,
        SyncResourceStatus,
    )
    state_column = True
    short_names = ("sr",)


SYNC_KINDS: tuple[type[Kind], ...] = (ModuleConfigKind, SyncResourceKind)
