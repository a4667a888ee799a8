"""Manifests are made safe and ours before they are applied."""

from __future__ import annotations

import pytest

from reconciler.kube.transform import COMPONENT, MANAGED_BY, ORIGIN_VERSION, prepare
from reconciler.model.kube_object import KubeObject


def test_labels_scope_protocols_and_nulls() -> None:
    rendered = KubeObject(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "svc", "labels": {"app": None, "tier": "web"}},
            "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}},
        }
    )
    prepared, warnings = prepare(
        rendered, namespace="ns", namespaced=True, version="1.2.3", component="web"
    )
    assert prepared.namespace == "ns"
    assert prepared.labels == {
        "tier": "web",
        MANAGED_BY: "reconciler",
        ORIGIN_VERSION: "1.2.3",
        COMPONENT: "web",
    }
    assert prepared.raw["spec"]["ports"] == [{"port": 80, "protocol": "TCP"}]
    assert any("null" in w for w in warnings)
    assert rendered.raw["spec"]["ports"] == [{"port": 80}]  # input untouched


def test_container_ports_get_a_protocol_and_cluster_scoped_kinds_lose_namespace() -> None:
    rendered = KubeObject(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "ds", "namespace": "wrong"},
            "spec": {
                "template": {
                    "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 9000}]}]}
                }
            },
        }
    )
    prepared, _ = prepare(rendered, namespace="ns", namespaced=False, version="v", component="x")
    assert "namespace" not in prepared.metadata
    container = prepared.raw["spec"]["template"]["spec"]["containers"][0]
    assert container["ports"] == [{"containerPort": 9000, "protocol": "TCP"}]


@pytest.mark.parametrize("given", [{}, {"namespace": ""}, {"namespace": "other"}], ids=str)
def test_namespaced_kinds_without_a_namespace_go_to_the_components(given: dict[str, str]) -> None:
    """An empty `namespace: ""` (a template's `{{ .Values.namespace | quote }}` left unset) is
    no namespace: Helm's resource builder fills in the release namespace for both."""
    rendered = KubeObject(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", **given}}
    )
    prepared, _ = prepare(rendered, namespace="ns", namespaced=True, version="v", component="x")
    assert prepared.namespace == (given.get("namespace") or "ns")


def test_aggregated_cluster_role_rules_are_left_to_the_controller() -> None:
    rendered = KubeObject(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "agg"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]},
            "rules": [],
        }
    )
    prepared, warnings = prepare(
        rendered, namespace="", namespaced=False, version="v", component="x"
    )
    assert "rules" not in prepared.raw
    assert any("aggregated" in w for w in warnings)


def test_secret_string_data_is_applied_as_data() -> None:
    rendered = KubeObject(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s"},
            "data": {"a": "YQ=="},
            "stringData": {"b": "b", "a": "override"},
        }
    )
    prepared, _ = prepare(rendered, namespace="ns", namespaced=True, version="v", component="x")
    assert "stringData" not in prepared.raw
    assert prepared.raw["data"] == {"a": "b3ZlcnJpZGU=", "b": "Yg=="}
