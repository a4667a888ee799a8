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


def _workload(kind: str, pod: dict[str, Any]) -> dict[str, Any]:
    api = {"Pod": "v1", "Job": "batch/v1", "CronJob": "batch/v1"}.get(kind, "apps/v1")
    template = {"spec": pod}
    spec: dict[str, Any] = {"template": template}
    if kind == "Pod":
        spec = pod
    elif kind == "CronJob":
        spec = {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}}
    return {"apiVersion": api, "kind": kind, "metadata": {"name": "w"}, "spec": spec}


_CONTAINER = {"name": "c", "image": "i"}


@pytest.mark.parametrize(
    "kind", ["Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"]
)
@pytest.mark.parametrize(
    ("pod", "rule"),
    [
        (
            {"containers": [{**_CONTAINER, "securityContext": {"privileged": True}}]},
            "container c: privileged containers are not allowed",
        ),
        (
            {
                "initContainers": [
                    {**_CONTAINER, "securityContext": {"allowPrivilegeEscalation": True}}
                ]
            },
            "container c: allowPrivilegeEscalation is not allowed",
        ),
        (
            {
                "containers": [
                    {**_CONTAINER, "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}
                ]
            },
            "container c: added capabilities are not allowed",
        ),
        (
            {"containers": [{**_CONTAINER, "ports": [{"containerPort": 80, "hostPort": 80}]}]},
            "container c: host ports are not allowed",
        ),
        ({"hostNetwork": True, "containers": [_CONTAINER]}, "hostNetwork is not allowed"),
        ({"hostIPC": True, "containers": [_CONTAINER]}, "hostIPC is not allowed"),
        (
            {"volumes": [{"name": "r", "hostPath": {"path": "/"}}], "containers": [_CONTAINER]},
            "hostPath volume r is not allowed",
        ),
        (
            {"serviceAccountName": "admin", "containers": [_CONTAINER]},
            "serviceAccountName admin is neither default nor created by this SyncResource",
        ),
    ],
)
def test_workloads_that_would_gain_privileges_are_refused_naming_object_and_rule(
    kind: str, pod: dict[str, Any], rule: str
) -> None:
    with pytest.raises(SyncContentError) as caught:
        check_objects([_workload(kind, pod)], "kyma-system")
    assert f"spec.objects[0] ({kind} w)" in str(caught.value)
    assert rule in str(caught.value)


def test_a_service_account_the_same_sync_resource_creates_may_be_used_in_its_namespace() -> None:
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "mine"}}
    pod = {"serviceAccountName": "mine", "containers": [_CONTAINER]}
    assert len(check_objects([account, _workload("Deployment", pod)], "kyma-system")) == 2
    elsewhere = _workload("Deployment", pod)
    elsewhere["metadata"]["namespace"] = "other"
    with pytest.raises(SyncContentError, match="serviceAccountName mine is neither"):
        check_objects([account, elsewhere], "kyma-system")


@pytest.mark.parametrize(
    "raw",
    [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/service-account-token",
            "metadata": {"name": "t"},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "t"},
        },
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "t"}},
    ],
)
def test_tokens_and_rbac_are_refused(raw: dict[str, Any]) -> None:
    with pytest.raises(SyncContentError, match=r"spec.objects\[0\]"):
        check_objects([raw], "kyma-system")
