"""Leave out of an apply the zero values the apiserver does not store, so re-applying an
unchanged manifest changes nothing.

Go's `omitempty` drops `false`, `0`, `""`, `{}` and `[]` of many fields when an object is stored
(`preserveUnknownFields: false` in CRDs written by controller-gen, `annotations: {}`,
`binaryData: {}`, `tolerations: []`; a Role's `rules: []` comes back as null). Server-side
apply still counts such a field as a change against the stored object, so every apply rewrites
the object (a new `managedFields` time, a new resourceVersion) whenever the clock's second has
moved: a static manifest shows up as changed on every run. Which fields are dropped is a
property of the type (a `*bool` keeps its `false`, an `emptyDir: {}` is kept), and only the
apiserver knows it: the first object of a kind with a zero value at a path not seen before is
applied as a server-side dry run, and the zero values missing from the answer are left out of
every apply of that kind on that cluster connection from then on.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from reconciler.errors import ReconcilerError
from reconciler.model.kube_object import KubeObject

DryRun = Callable[[KubeObject], Awaitable[KubeObject]]

Path = tuple[str | int, ...]
Pattern = tuple[str, ...]
"""A path with list positions as `*`: the same field of every element."""


def _is_zero(value: Any) -> bool:
    return (
        value is False
        or value == ""
        or value == {}
        or value == []
        or (type(value) in (int, float) and value == 0)
    )


def _zero_leaves(node: Any, path: Path = ()) -> Iterator[Path]:
    if isinstance(node, dict):
        for key, value in node.items():
            if _is_zero(value):
                yield (*path, key)
            else:
                yield from _zero_leaves(value, (*path, key))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            if not _is_zero(item):
                yield from _zero_leaves(item, (*path, index))


def _pattern(path: Path) -> Pattern:
    return tuple("*" if isinstance(step, int) else step for step in path)


def _dropped(stored: Any, path: Path) -> bool:
    """Whether the stored object has the parent of `path` but not its last field (or holds
    null there: a slice without `omitempty` stored empty comes back as null)."""
    node = stored
    for step in path[:-1]:
        if isinstance(step, int):
            if not isinstance(node, list) or step >= len(node):
                return False
        elif not isinstance(node, dict) or step not in node:
            return False
        node = node[step]
    return isinstance(node, dict) and node.get(path[-1]) is None


def _without(raw: dict[str, Any], paths: list[Path]) -> dict[str, Any]:
    trimmed = copy.deepcopy(raw)
    for path in paths:
        node: Any = trimmed
        for step in path[:-1]:
            node = node[step]
        del node[path[-1]]
    return trimmed


class UnstoredZeros:
    """What one cluster drops, learnt per kind and field; shared by every apply on it."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, str], dict[Pattern, bool]] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    async def trim(self, obj: KubeObject, dry_run: DryRun) -> KubeObject:
        """`obj` without the zero values the apiserver would not store (a copy when any);
        `dry_run` applies an object as a server-side dry run and returns the answer."""
        zeros = [path for path in _zero_leaves(obj.raw) if path[0] not in ("apiVersion", "kind")]
        if not zeros:
            return obj
        kind = (obj.api_version, obj.kind)
        async with self._locks.setdefault(kind, asyncio.Lock()):
            known = self._known.setdefault(kind, {})
            if any(_pattern(path) not in known for path in zeros):
                try:
                    stored = await dry_run(obj)
                except ReconcilerError:
                    return obj  # the real apply reports the problem
                for path in zeros:
                    known.setdefault(_pattern(path), _dropped(stored.raw, path))
        unstored = [path for path in zeros if known[_pattern(path)]]
        return KubeObject(_without(obj.raw, unstored)) if unstored else obj
