"""Readiness rules explain what is missing, in the words an operator expects."""

from __future__ import annotations

from typing import Any

from reconciler.kube.readiness import readiness
from reconciler.model.kube_object import KubeObject


def obj(kind: str, spec: dict[str, Any], status: dict[str, Any], **meta: Any) -> KubeObject:
    return KubeObject(
        {
            "apiVersion": "apps/v1",
            "kind": kind,
            "metadata": {"name": "foo", "namespace": "kyma-system", **meta},
            "spec": spec,
            "status": status,
        }
    )


def test_deployment_explains_available_replicas() -> None:
    state = readiness(
        obj(
            "Deployment",
            {"replicas": 2},
            {"observedGeneration": 1, "updatedReplicas": 2, "availableReplicas": 0},
            generation=1,
        )
    )
    assert not state.ready
    assert state.reason == "deployment kyma-system/foo: 0/2 replicas available"


def test_deployment_with_unobserved_generation_is_not_ready() -> None:
    state = readiness(
        obj(
            "Deployment",
            {"replicas": 1},
            {"observedGeneration": 1, "updatedReplicas": 1, "availableReplicas": 1},
            generation=2,
        )
    )
    assert "latest generation" in state.reason


def test_ready_deployment() -> None:
    assert readiness(
        obj(
            "Deployment",
            {"replicas": 1},
            {"observedGeneration": 2, "updatedReplicas": 1, "availableReplicas": 1},
            generation=2,
        )
    ).ready


def test_failed_job_stops_waiting() -> None:
    state = readiness(
        obj(
            "Job",
            {},
            {
                "conditions": [
                    {"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}
                ]
            },
        )
    )
    assert state.failed
    assert "BackoffLimitExceeded" in state.reason


def test_statefulset_waits_for_ready_replicas_and_revision() -> None:
    assert not readiness(obj("StatefulSet", {"replicas": 1}, {"readyReplicas": 0})).ready
    assert not readiness(
        obj(
            "StatefulSet",
            {"replicas": 1},
            {"readyReplicas": 1, "currentRevision": "a", "updateRevision": "b"},
        )
    ).ready
    assert readiness(
        obj(
            "StatefulSet",
            {"replicas": 1},
            {"readyReplicas": 1, "currentRevision": "b", "updateRevision": "b"},
        )
    ).ready


def test_annotation_opts_out_of_readiness() -> None:
    assert readiness(
        obj(
            "Deployment",
            {"replicas": 3},
            {},
            annotations={"reconciler.kyma-project.io/ignore-readiness": "true"},
        )
    ).ready


def test_crd_and_apiservice_conditions() -> None:
    crd = obj(
        "CustomResourceDefinition", {}, {"conditions": [{"type": "Established", "status": "True"}]}
    )
    assert readiness(crd).ready
    api = obj(
        "APIService",
        {},
        {"conditions": [{"type": "Available", "status": "False", "message": "endpoints missing"}]},
    )
    assert readiness(api).reason.endswith("not available endpoints missing")


def test_waited_for_kinds_are_exactly_the_kinds_with_a_rule() -> None:
    from reconciler.kube import wait
    from reconciler.kube.readiness import RULES, WATCHED_KINDS

    assert wait.WATCHED_KINDS is WATCHED_KINDS == set(RULES)
    assert readiness(obj("ConfigMap", {}, {})).ready  # no rule: ready once applied
    stale = obj("StatefulSet", {"replicas": 1}, {"readyReplicas": 1}, generation=2)
    assert "not observed the latest generation" in readiness(stale).reason
