"""What a SyncResource may hold, checked without a cluster."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.operator.controllers.sync_validation import (
    MAX_OBJECT_BYTES,
    MAX_OBJECTS,
    SyncContentError,
    check_objects,
)


def _cm(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **extra}


def test_namespaced_objects_without_a_namespace_get_the_module_namespace() -> None:
    [obj] = check_objects([_cm("a", status={"x": 1})], "kyma-system")
    assert obj.namespace == "kyma-system"
    assert "status" not in obj.raw


def test_custom_resources_of_other_groups_are_allowed() -> None:
    custom = {"apiVersion": "alpha.example.com/v1", "kind": "Alpha", "metadata": {"name": "x"}}
    assert [o.kind for o in check_objects([custom], "ns")] == ["Alpha"]


@pytest.mark.parametrize(
    ("objects", "problem"),
    [
        ([_cm("a"), _cm("a")], "spec.objects[1]: configmap kyma-system/a is listed twice"),
        ([{"kind": "ConfigMap", "metadata": {"name": "a"}}], "apiVersion is missing"),
        ([{"apiVersion": "v1", "kind": "ConfigMap"}], "metadata.name is missing"),
        ([_cm("Not_Valid")], "metadata.name is not a valid Kubernetes name"),
        (
            [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}],
            "kind Namespace is not allowed",
        ),
        (
            [
                {
                    "apiVersion": "operator.kyma-project.io/v1beta2",
                    "kind": "Kyma",
                    "metadata": {"name": "k"},
                }
            ],
            "the operator's own kinds cannot be synced",
        ),
        ([_cm("big", data={"x": "y" * MAX_OBJECT_BYTES})], f"more than {MAX_OBJECT_BYTES}"),
        ([_cm(f"c{i}") for i in range(MAX_OBJECTS + 1)], f"more than {MAX_OBJECTS}"),
    ],
)
def test_bad_content_is_refused_with_a_message_naming_the_problem(
    objects: list[Any], problem: str
) -> None:
    with pytest.raises(SyncContentError) as caught:
        check_objects(objects, "kyma-system")
    assert problem in str(caught.value)
