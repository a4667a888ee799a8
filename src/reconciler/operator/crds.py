"""CustomResourceDefinitions generated from the models in `resources.py`.

Kubernetes wants a *structural* OpenAPI v3 schema: every node has a `type`, no `$ref`, no
`anyOf` of types, no `null` type, no defaults we did not mean. pydantic's JSON schema has all of
those, so it is rewritten here: references inlined, `X | None` reduced to `X`, enums kept as
string enums, `dict[str, Any]` fields marked to preserve unknown fields. Kubernetes 1.20 has no
CEL, so cross-field rules are checked by the controllers and reported in status.
"""

from __future__ import annotations

from typing import Any

from reconciler.operator.resources import GROUP, KINDS, VERSION, Kind

_DROP = frozenset({"title", "default", "$defs"})


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
        if len(options) != 1:
            raise ValueError(f"a union of several types is not structural: {node['anyOf']}")
        rest = {k: v for k, v in node.items() if k != "anyOf"}
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


def crd(kind: type[Kind]) -> dict[str, Any]:
    """The CustomResourceDefinition (apiextensions.k8s.io/v1) of one kind."""
    properties: dict[str, Any] = {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": schema_of(kind.spec),
    }
    version: dict[str, Any] = {"name": VERSION, "served": True, "storage": True}
    if kind.status is not None:
        properties["status"] = schema_of(kind.status)
        version["subresources"] = {"status": {}}
    columns = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    if kind.state_column:
        columns.insert(0, {"name": "State", "type": "string", "jsonPath": ".status.state"})
    version["additionalPrinterColumns"] = columns
    version["schema"] = {"openAPIV3Schema": {"type": "object", "properties": properties}}
    names: dict[str, Any] = {
        "kind": kind.kind,
        "listKind": f"{kind.kind}List",
        "plural": kind.plural,
        "singular": kind.kind.lower(),
    }
    if kind.short_names:
        names["shortNames"] = list(kind.short_names)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{kind.plural}.{GROUP}"},
        "spec": {"group": GROUP, "names": names, "scope": "Namespaced", "versions": [version]},
    }


def all_crds() -> list[dict[str, Any]]:
    return [crd(kind) for kind in KINDS]
