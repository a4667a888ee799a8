"""Learning which zero values a cluster drops: how dry runs are shared and overlapped."""

from __future__ import annotations

import asyncio
from typing import Any

from reconciler.errors import ApplyError
from reconciler.kube.zeros import UnstoredZeros
from reconciler.model.kube_object import KubeObject


def crd(name: str, **zeros: Any) -> KubeObject:
    return KubeObject(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"preserveUnknownFields": False, **zeros},
        }
    )


def stored(obj: KubeObject) -> KubeObject:
    """What this fake apiserver stores: no `preserveUnknownFields: false`, other zeros kept."""
    raw = {**obj.raw, "spec": dict(obj.raw["spec"])}
    del raw["spec"]["preserveUnknownFields"]
    return KubeObject(raw)


async def test_objects_with_different_new_zero_fields_learn_concurrently() -> None:
    # one lock per kind made a first deploy's big CRDs dry-run one after another, and every
    # other CRD wait for them: here each dry run waits until the other one has started
    zeros = UnstoredZeros()
    started = {"a": asyncio.Event(), "b": asyncio.Event()}

    async def dry_run(obj: KubeObject) -> KubeObject:
        mine, other = ("a", "b") if obj.name == "a" else ("b", "a")
        started[mine].set()
        async with asyncio.timeout(5):
            await started[other].wait()
        return stored(obj)

    a, b = await asyncio.gather(
        zeros.trim(crd("a", versionA=""), dry_run), zeros.trim(crd("b", versionB=""), dry_run)
    )
    assert a.raw["spec"] == {"versionA": ""}
    assert b.raw["spec"] == {"versionB": ""}


async def test_objects_with_the_same_new_zero_fields_share_one_dry_run() -> None:
    zeros = UnstoredZeros()
    calls: list[str] = []

    async def dry_run(obj: KubeObject) -> KubeObject:
        calls.append(obj.name)
        await asyncio.sleep(0)
        return stored(obj)

    trimmed = await asyncio.gather(*(zeros.trim(crd(f"c{i}"), dry_run) for i in range(5)))
    assert [t.raw["spec"] for t in trimmed] == [{}] * 5
    assert len(calls) == 1
    assert (await zeros.trim(crd("later"), dry_run)).raw["spec"] == {}
    assert len(calls) == 1  # learnt: no dry run for the same fields again


async def test_a_rejected_dry_run_leaves_the_object_as_it_is_and_teaches_nothing() -> None:
    zeros = UnstoredZeros()

    async def rejecting(obj: KubeObject) -> KubeObject:
        raise ApplyError("rejected")

    obj = crd("bad")
    assert await zeros.trim(obj, rejecting) is obj
    assert (await zeros.trim(crd("good"), _stored)).raw["spec"] == {}


async def _stored(obj: KubeObject) -> KubeObject:
    return stored(obj)
