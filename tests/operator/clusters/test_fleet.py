"""The fleet index: each Kyma's Manifests and Secrets as kopf last reported them."""

from __future__ import annotations

from typing import Any

from reconciler.model.lifecycle import KYMA_NAME, MANIFEST_FINALIZER
from reconciler.operator.clusters.fleet import FleetIndex
from reconciler.operator.runtime.wiring import _essence as essence


def _body(name: str, kyma: str, version: str = "1", namespace: str = "kcp") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "resourceVersion": version,
            "labels": {KYMA_NAME: kyma},
        }
    }


def test_manifests_are_found_by_their_kyma_follow_a_relabel_and_go_when_deleted() -> None:
    fleet = FleetIndex()
    fleet.manifest(_body("k1-a", "k1"))
    fleet.manifest(_body("k1-b", "k1"))
    fleet.manifest(_body("k2-a", "k2"))
    assert sorted(m["metadata"]["name"] for m in fleet.manifests("kcp", "k1")) == ["k1-a", "k1-b"]
    assert fleet.manifests("other", "k1") == []

    fleet.manifest(_body("k1-b", "k2", "2"))  # relabelled to another Kyma
    assert [m["metadata"]["name"] for m in fleet.manifests("kcp", "k1")] == ["k1-a"]
    assert len(fleet.manifests("kcp", "k2")) == 2

    fleet.manifest(_body("k1-a", "k1", "3"), deleted=True)
    assert fleet.manifests("kcp", "k1") == []


def test_a_secret_counts_as_changed_only_when_a_seen_one_changes() -> None:
    fleet = FleetIndex()
    assert fleet.secret(_body("kubeconfig-k1", "k1")) is False  # first sight (initial listing)
    assert fleet.secret(_body("kubeconfig-k1", "k1")) is False  # same resourceVersion
    assert fleet.secret(_body("kubeconfig-k1", "k1", "2")) is True
    assert [s["metadata"]["resourceVersion"] for s in fleet.secrets("kcp", "k1")] == ["2"]
    assert fleet.secret(_body("kubeconfig-k1", "k1", "3"), deleted=True) is True
    assert fleet.secrets("kcp", "k1") == []


def test_our_own_finalizer_is_no_reason_to_look_again_but_anything_else_is() -> None:
    body = _body("k1-a", "k1")
    before = essence(body)
    body["metadata"]["finalizers"] = [MANIFEST_FINALIZER]
    assert essence(body) == before
    body["metadata"]["finalizers"] = [MANIFEST_FINALIZER, "someone/else"]
    assert essence(body) != before
    body["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert essence(body) != before


def test_the_index_keeps_no_managed_fields() -> None:
    fleet = FleetIndex()
    body = _body("k1-a", "k1")
    body["metadata"]["managedFields"] = [{"manager": "x", "fieldsV1": {"f:spec": {}}}]
    fleet.manifest(body)
    (kept,) = fleet.manifests("kcp", "k1")
    assert "managedFields" not in kept["metadata"]
    assert kept["metadata"]["resourceVersion"] == "1"
    assert "managedFields" in body["metadata"]  # the event's own body is left as it was
