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
    """What one cluster drops, learnt per kind and field; shared by every apply on it.

    Objects of a kind whose unknown zero fields are the same share one dry run; objects with
    different ones learn concurrently. Not one lock per kind: a first deploy's CRDs (each with
    fields of its own, several of hundreds of KB) then dry-ran one after another while every
    other CRD, and every object of a kind being learnt, waited on the critical path.
    """

    def __init__(self) -> None:
        self._known: dict[tuple[str, str], dict[Pattern, bool]] = {}
        self._learning: dict[tuple[tuple[str, str], frozenset[Pattern]], asyncio.Future[bool]] = {}

    async def trim(self, obj: KubeObject, dry_run: DryRun) -> KubeObject:
        """`obj` without the zero values the apiserver would not store (a copy when any);
        `dry_run` applies an object as a server-side dry run and returns the answer."""
        zeros = [path for path in _zero_leaves(obj.raw) if path[0] not in ("apiVersion", "kind")]
        if not zeros:
            return obj
        kind = (obj.api_version, obj.kind)
        known = self._known.setdefault(kind, {})
        unknown = frozenset(_pattern(path) for path in zeros if _pattern(path) not in known)
        if unknown:
            key = (kind, unknown)
            shared = self._learning.get(key)
            if shared is None:
                shared = asyncio.ensure_future(self._learn(obj, zeros, known, dry_run))
                self._learning[key] = shared
                shared.add_done_callback(lambda _: self._learning.pop(key, None))
            elif not await asyncio.shield(shared):  # its object was rejected: try with ours
                shared = asyncio.ensure_future(self._learn(obj, zeros, known, dry_run))
            if not await asyncio.shield(shared):
                return obj  # the real apply reports the problem
        unstored = [path for path in zeros if known.get(_pattern(path), False)]
        return KubeObject(_without(obj.raw, unstored)) if unstored else obj

    @staticmethod
    async def _learn(
        obj: KubeObject, zeros: list[Path], known: dict[Pattern, bool], dry_run: DryRun
    ) -> bool:
        try:
            stored = await dry_run(obj)
        except ReconcilerError:
            return False
        for path in zeros:
            known.setdefault(_pattern(path), _dropped(stored.raw, path))
        return True
