"""CustomResourceDefinitions generated from the models in `model/lifecycle.py` and
`model/module_sync.py` (the generic part, pydantic's JSON schema made structural, is
`kube/crdgen.py`)."""

from __future__ import annotations

from typing import Any

from reconciler.kube.crdgen import AGE_COLUMN
from reconciler.kube.crdgen import crd as generated
from reconciler.model.lifecycle import GROUP, KINDS, VERSION, Kind
from reconciler.model.module_sync import SYNC_KINDS
from reconciler.model.rollout import ModuleRolloutKind

__all__ = ["all_crds", "crd"]


def crd(kind: type[Kind]) -> dict[str, Any]:
    """The CustomResourceDefinition (apiextensions.k8s.io/v1) of one kind."""
    columns = [AGE_COLUMN]
    if kind.state_column:
        columns.insert(0, {"name": "State", "type": "string", "jsonPath": ".status.state"})
    body = generated(
        group=GROUP,
        version=VERSION,
        kind=kind.kind,
        plural=kind.plural,
        spec=kind.spec,
        status=kind.status,
        columns=columns,
        short_names=kind.short_names,
    )
    schema = body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for path, value in kind.defaults:
        _set_default(schema, path, value)
    return body


def _set_default(schema: dict[str, Any], path: str, value: Any) -> None:
    """`default: value` on the property a dotted path names (`name[]`: the list's items)."""
    node = schema
    for step in path.split("."):
        node = node["properties"][step.removesuffix("[]")]
        if step.endswith("[]"):
            node = node["items"]
    node["default"] = value


def all_crds() -> list[dict[str, Any]]:
    """The lifecycle manager's kinds, then ours (ModuleConfig, SyncResource, ModuleRollout)."""
    return [crd(kind) for kind in (*KINDS, *SYNC_KINDS, ModuleRolloutKind)]
