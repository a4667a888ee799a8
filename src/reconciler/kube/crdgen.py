"""CustomResourceDefinitions generated from pydantic models (operator mode and the
infrastructure manager both define their resources this way).

Kubernetes wants a *structural* OpenAPI v3 schema: every node has a `type`, no `$ref`, no
`anyOf` of types, no `null` type, no defaults we did not mean. pydantic's JSON schema has all of
those, so it is rewritten here: references inlined, `X | None` reduced to `X`, enums kept as
string enums, `dict[str, Any]` fields marked to preserve unknown fields. Kubernetes 1.20 has no
CEL, so cross-field rules are checked by the controllers and reported in status. `install_crds`
applies them and waits until the apiserver serves them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reconciler.kube.cluster import Cluster
from reconciler.kube.wait import wait_ready

_DROP = frozenset({"title", "default", "$defs"})
AGE_COLUMN = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def _structural(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_structural(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _structural(merged, defs)
    if "anyOf" in node:
        options = [o for o in node["anyOf"] if o.get("type") != "null"]
        if node.get("x-kubernetes-int-or-string"):
            options = []
        elif len(options) != 1:
            raise ValueError(f"a union of several types is not structural: {node['anyOf']}")
        rest = {k: v for k, v in node.items() if k != "anyOf"}
        if not options:
            return _structural(rest, defs)
        single = _structural({**options[0], **rest}, defs)
        if len(options) < len(node["anyOf"]) and single.get("x-kubernetes-preserve-unknown-fields"):
            single["nullable"] = True  # as the original: `resource: null` is a valid Manifest
        return single
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP:
            continue
        if key == "properties":
            out[key] = {name: _structural(sub, defs) for name, sub in value.items()}
        elif key == "additionalProperties" and value is True:
            continue
        else:
            out[key] = _structural(value, defs)
    if "const" in out:
        out["enum"] = [out.pop("const")]
    if "enum" in out and "type" not in out:
        out["type"] = "string"
    if out.get("x-kubernetes-preserve-unknown-fields"):
        out["type"] = "object"
        out.pop("additionalProperties", None)
    return out


def schema_of(model: type[Any]) -> dict[str, Any]:
    """The structural OpenAPI v3 schema of one pydantic model."""
    raw = model.model_json_schema(by_alias=True)
    return dict(_structural(raw, raw.get("$defs", {})))


def crd(
    *,
    group: str,
    version: str,
    kind: str,
    plural: str,
    spec: type[Any],
    status: type[Any] | None = None,
    columns: Sequence[dict[str, Any]] = (AGE_COLUMN,),
    short_names: Sequence[str] = (),
) -> dict[str, Any]:
    """The namespaced CustomResourceDefinition (apiextensions.k8s.io/v1) of one kind."""
    properties: dict[str, Any] = {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": schema_of(spec),
    }
    served: dict[str, Any] = {"name": version, "served": True, "storage": True}
    if status is not None:
        properties["status"] = schema_of(status)
        served["subresources"] = {"status": {}}
    served["additionalPrinterColumns"] = [dict(column) for column in columns]
    served["schema"] = {"openAPIV3Schema": {"type": "object", "properties": properties}}
    names: dict[str, Any] = {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "singular": kind.lower(),
    }
    if short_names:
        names["shortNames"] = list(short_names)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "names": names, "scope": "Namespaced", "versions": [served]},
    }


async def install_crds(
    cluster: Cluster, crds: Sequence[dict[str, Any]], *, field_manager: str, timeout: float = 60.0
) -> list[str]:
    """Apply every CRD and wait until each is Established; return their names."""
    live = [await cluster.apply(body, field_manager=field_manager) for body in crds]
    await wait_ready(cluster, live, timeout=timeout)
    cluster.mapper.invalidate()
    return [obj.name for obj in live]
