"""Configuration layering: how chart values, profiles and overrides combine.

Values = chart `values.yaml` ⊕ profile file ⊕ `global.*` overrides ⊕ component overrides, later
layers winning; maps merge key by key, anything else (lists included) is replaced. Overrides may
be flat dotted keys (`a.b.c: 1`, as the REST API and `--value a.b.c=1` send them) or nested maps.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from reconciler.errors import ReconcilerError

MAX_VALUE_DEPTH = 64
"""How deeply a configuration value may nest (Helm values rarely pass 10): deeper values are
refused with 400 where they enter (the API, `/v1/run`), instead of failing later in
serialization."""


def nesting_depth(value: Any, limit: int = MAX_VALUE_DEPTH) -> int:
    """Levels of maps and lists in `value` (0 for a scalar), counted up to `limit + 1`;
    iterative, so any depth is safe."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        node, depth = stack.pop()
        children = (
            node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        )
        if children is None:
            continue
        deepest = max(deepest, depth + 1)
        if deepest > limit:
            break
        stack.extend((child, depth + 1) for child in children)
    return deepest


class ValuesError(ReconcilerError):
    """A configuration override is malformed."""


def nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Turn `{"a.b": 1, "c": {"d": 2}}` into `{"a": {"b": 1}, "c": {"d": 2}}`."""
    result: dict[str, Any] = {}
    for dotted, value in flat.items():
        parts = dotted.split(".")
        if not all(parts):
            raise ValuesError(f"invalid configuration key {dotted!r}: empty path segment")
        node = result
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ValuesError(
                    f"configuration key {dotted!r} conflicts with a value at {part!r}"
                )
            node = child
        leaf = nest(value) if isinstance(value, Mapping) else value
        if isinstance(node.get(parts[-1]), dict) and isinstance(leaf, dict):
            node[parts[-1]] = merge(node[parts[-1]], leaf)
        else:
            node[parts[-1]] = leaf
    return result


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge `override` onto `base` (neither is modified)."""
    result = copy.deepcopy(dict(base))
    for key, value in override.items():
        current = result.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            result[key] = merge(current, value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def layer(layers: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Merge layers in order, each given flat or nested."""
    result: dict[str, Any] = {}
    for values in layers:
        result = merge(result, nest(values))
    return result


class _ValueLoader(yaml.SafeLoader):
    """YAML without timestamps: `2024-01-01` stays a string, as Helm and kubectl read it
    (PyYAML's date is no JSON value, and the render of such an override crashed)."""

    yaml_implicit_resolvers = {  # noqa: RUF012 (PyYAML's own class-level table)
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


def parse_assignment(text: str) -> tuple[str, Any]:
    """Parse `a.b=value` as given on the command line; the value is read as YAML scalar/list."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ValuesError(f"invalid value {text!r}: expected KEY=VALUE, e.g. global.domain=local")
    try:
        value = yaml.load(raw, Loader=_ValueLoader) if raw else ""
    except yaml.YAMLError:
        value = raw
    return key.strip(), value


def values_at(values: Mapping[str, Any], keys: Iterable[str]) -> list[Any]:
    """The values found at dotted `keys` in (flat or nested) `values`; missing keys are
    skipped."""
    try:
        nested = nest(values)
    except ValuesError:  # malformed keys: only exact flat matches can be found
        return [values[key] for key in keys if values.get(key) is not None]
    found = []
    for dotted in keys:
        node: Any = nested
        for part in dotted.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            found.append(node)
    return found
