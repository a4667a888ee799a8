"""Stable generated values: what a chart makes up at render time stays as it is on the cluster.

Charts that call `genCA`/`genSignedCert`/`randAlphaNum` (webhook certificates, passwords), and
`checksum/...` annotations over those, render differently every time. Applied as rendered, every
run would rotate the Secrets, roll the pods (their template annotation changed) and leave a
webhook's `caBundle` out of step with its serving certificate for a while. Helm's only answer is
`lookup`, which charts must adopt; here it is generic:

- the *generated paths* of a render are the places where two renders of the same inputs differ
  (`generated_paths`); they are computed once per input digest and kept in the component's
  inventory record, so later runs need one render; a chart that calls no varying function
  (`ChartProvider.may_vary`, `charts/determinism.py`) has none and is never rendered twice;
- for an object that already exists, the live value at each generated path replaces the rendered
  one (`keep_live`), so certificate, key, CA bundle and checksums stay together and unchanged;
- a *regenerate token* (CLI `--regenerate`, `regenerate` of a component in the API) that differs
  from the one last recorded applies the new values once.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from reconciler.kube.cluster import Cluster
from reconciler.model.kube_object import KubeObject, ObjectKey

Path = tuple[str | int, ...]


@dataclass
class Generated:
    """Generated paths per object, valid for the inputs with digest `digest` ("" = unknown)."""

    digest: str = ""
    paths: dict[ObjectKey, list[Path]] = field(default_factory=dict)

    def dump(self) -> str:
        rows = [[*key, [list(p) for p in paths]] for key, paths in sorted(self.paths.items())]
        return json.dumps({"digest": self.digest, "paths": rows}, separators=(",", ":"))

    @classmethod
    def load(cls, text: str) -> Generated:
        if not text:
            return cls()
        data = json.loads(text)
        paths = {
            ObjectKey(group, kind, namespace, name): [tuple(p) for p in found]
            for group, kind, namespace, name, found in data.get("paths", [])
        }
        return cls(str(data.get("digest", "")), paths)


def differing_paths(first: Any, second: Any, prefix: Path = ()) -> list[Path]:
    """Where `first` and `second` differ, as deep as their shapes agree."""
    if isinstance(first, dict) and isinstance(second, dict) and first.keys() == second.keys():
        found: list[Path] = []
        for key in first:
            found += differing_paths(first[key], second[key], (*prefix, key))
        return found
    if isinstance(first, list) and isinstance(second, list) and len(first) == len(second):
        found = []
        for index, (a, b) in enumerate(zip(first, second, strict=True)):
            found += differing_paths(a, b, (*prefix, index))
        return found
    return [] if first == second else [prefix]


def generated_paths(
    first: list[KubeObject], second: list[KubeObject]
) -> dict[ObjectKey, list[Path]]:
    """Per object of both renders, the paths whose values differ (objects with none left out)."""
    again = {obj.key: obj for obj in second}
    result = {}
    for obj in first:
        other = again.get(obj.key)
        if other is not None:
            paths = [p for p in differing_paths(obj.raw, other.raw) if p]
            if paths:
                result[obj.key] = paths
    return result


_MISSING = object()


def _has(node: Any, step: str | int) -> bool:
    if isinstance(node, dict):
        return isinstance(step, str) and step in node
    return isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node)


def _get(node: Any, path: Path) -> Any:
    for step in path:
        if not _has(node, step):
            return _MISSING
        node = node[step]
    return node


def keep_live(desired: KubeObject, live: KubeObject, paths: list[Path]) -> KubeObject:
    """`desired` with the live object's value at each of `paths` (where both have the path)."""
    raw = copy.deepcopy(desired.raw)
    for path in paths:
        value = _get(live.raw, path)
        parent = _get(raw, path[:-1])
        if value is _MISSING or parent is _MISSING:
            continue
        if _has(parent, path[-1]):
            parent[path[-1]] = copy.deepcopy(value)
    return KubeObject(raw)


async def keep_generated(
    cluster: Cluster,
    objects: list[KubeObject],
    existing: set[ObjectKey],
    known: Generated,
    digest: str,
    render_again: Callable[[], Awaitable[list[KubeObject]]],
    may_vary: Callable[[], Awaitable[bool]],
) -> tuple[list[KubeObject], Generated]:
    """`objects` with live values kept at generated paths of those in `existing`, and the
    generated paths: `known` when it is for `digest`, none when the chart cannot vary between
    renders (`may_vary()` false: a second render would find nothing), else found by rendering a
    second time. Nothing exists on a first install: no paths are needed, none are looked for."""
    if not existing:
        return objects, known
    generated = known
    if not digest or known.digest != digest:
        paths = generated_paths(objects, await render_again()) if await may_vary() else {}
        generated = Generated(digest, paths)
    targets = [obj for obj in objects if obj.key in existing and obj.key in generated.paths]
    lives = await asyncio.gather(*(cluster.get(obj) for obj in targets))
    kept = {
        obj.key: keep_live(obj, live, generated.paths[obj.key])
        for obj, live in zip(targets, lives, strict=True)
        if live is not None
    }
    return [kept.get(obj.key, obj) for obj in objects], generated
