"""Traits of real-world charts that must reconcile on the real apiserver, each from a small
fixture chart of ours (tests/fixtures/charts/): the first run applies everything, the second
changes nothing."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from reconciler.core.runner import ComponentReconciler
from reconciler.kube.cluster import Cluster
from reconciler.util.polling import poll_until
from tests.core.support import get, run


async def live(
    cluster: Cluster, api_version: str, kind: str, name: str, namespace: str = ""
) -> dict[str, Any]:
    found = await get(cluster, kind, name, namespace, api_version)
    assert found is not None, f"{kind} {name} does not exist"
    return found.raw


async def test_yaml_that_pyyaml_misreads_applies_as_helm_reads_it(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str
) -> None:
    first = await run(reconciler, cluster, "yaml-quirks", namespace)
    assert first.ok, first.error
    crd = await live(
        cluster, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "filters.quirks.example.io"
    )
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema["properties"]["spec"]["properties"]["operator"]["enum"][:2] == ["=", "=="]
    filter_ = await live(cluster, "quirks.example.io/v1", "Filter", "yaml-quirks-equals", namespace)
    assert filter_["spec"] == {"operator": "=", "since": "2024-01-01"}
    data = (await live(cluster, "v1", "ConfigMap", "yaml-quirks-quirks", namespace))["data"]
    assert data == {"released": "2024-01-01", "time": "12:30", "mode": "0755", "answer": "yes"}
    again = await run(reconciler, cluster, "yaml-quirks", namespace)
    assert again.ok, again.error
    assert again.changed == []


async def test_characters_outside_the_bmp_reach_the_apiserver_unchanged(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str
) -> None:
    first = await run(reconciler, cluster, "emoji", namespace)
    assert first.ok, first.error
    dashboard = await live(cluster, "v1", "ConfigMap", "emoji-dashboard", namespace)
    assert "Health 🩺 of the 🌍" in dashboard["data"]["dashboard.json"]
    assert dashboard["data"]["note.txt"] == "🎉 and 中文 and é"
    assert dashboard["metadata"]["annotations"]["description"] == "Cluster health 🚀"
    again = await run(reconciler, cluster, "emoji", namespace)
    assert again.ok, again.error
    assert again.changed == []


async def test_null_values_inside_a_custom_resource_are_dropped_with_a_warning(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str
) -> None:
    first = await run(reconciler, cluster, "nulls-in-cr", namespace)
    assert first.ok, first.error
    monitor = await live(cluster, "nulls.example.io/v1", "Monitor", "nulls-in-cr", namespace)
    assert monitor["spec"]["podMetadata"] == {
        "annotations": {"example.io/owner": "platform"},
        "labels": {},
    }
    assert monitor["spec"]["selectors"] == [{"matchLabels": {"app": "web"}}]
    dropped = [w for w in first.warnings if "dropped null value" in w]
    assert any("podMetadata.annotations.example.io/unset" in w for w in dropped), dropped
    assert any("selectors[0].matchLabels.zone" in w for w in dropped), dropped


async def test_empty_strings_and_zeros_inside_a_custom_resource_apply_and_reapply_unchanged(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str
) -> None:
    first = await run(reconciler, cluster, "empty-strings-in-cr", namespace)
    assert first.ok, first.error
    gateway = await live(
        cluster, "empties.example.io/v1", "Gateway", "empty-strings-in-cr", namespace
    )
    assert gateway["metadata"]["annotations"]["example.io/note"] == ""
    assert gateway["spec"] == {
        "replicas": 0,
        "paused": False,
        "prefix": "",
        "weight": 0,
        "podMetadata": {
            "annotations": {
                "traffic.sidecar.istio.io/includeInboundPorts": "",
                "sidecar.istio.io/inject": "false",
            },
            "labels": {},
        },
        "hosts": [""],
    }
    again = await run(reconciler, cluster, "empty-strings-in-cr", namespace)
    assert again.ok, again.error
    assert again.changed == []


@pytest.mark.usefixtures("kubelet")
async def test_duplicate_keys_in_keyed_lists_keep_the_last_entry_with_a_warning(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str
) -> None:
    first = await run(reconciler, cluster, "duplicate-keys", namespace)
    assert first.ok, first.error
    pod = (await live(cluster, "apps/v1", "Deployment", "duplicate-keys", namespace))["spec"][
        "template"
    ]["spec"]
    (app,) = pod["containers"]
    assert [(e["name"], e["value"]) for e in app["env"]] == [
        ("REGION", "eu"),
        ("LOG_LEVEL", "debug"),
    ]
    assert [(p["containerPort"], p["name"]) for p in app["ports"]] == [
        (8080, "http-again"),
        (9090, "metrics"),
    ]
    assert app["volumeMounts"] == [{"name": "config-b", "mountPath": "/etc/app"}]
    assert pod["initContainers"][0]["env"] == [{"name": "MODE", "value": "last"}]
    assert [(v["name"], v["configMap"]["name"]) for v in pod["volumes"]] == [
        ("config-b", "b"),
        ("config", "c"),
    ]
    service = await live(cluster, "v1", "Service", "duplicate-keys", namespace)
    assert [(p["port"], p["name"]) for p in service["spec"]["ports"]] == [(80, "http-2")]
    duplicates = [w for w in first.warnings if "duplicate entries" in w]
    assert len(duplicates) == 6, duplicates
    assert any("containers[app].env: name=LOG_LEVEL" in w for w in duplicates), duplicates
    again = await run(reconciler, cluster, "duplicate-keys", namespace)
    assert again.ok, again.error
    assert again.changed == []


async def test_static_manifests_with_unstored_zero_values_re_apply_unchanged(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str
) -> None:
    """controller-gen's `preserveUnknownFields: false`, `annotations: {}`, `binaryData: {}`...:
    the apiserver does not store them, and applying them anyway rewrote the object whenever the
    clock's second had moved since the last write."""
    first = await run(reconciler, cluster, "static-manifests", namespace)
    assert first.ok, first.error
    crd = await live(
        cluster, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "gizmos.static.example.io"
    )
    assert crd["spec"]["conversion"]["strategy"] == "Webhook"
    assert crd["spec"]["versions"][1]["subresources"] == {"status": {}}  # a zero that is kept
    written = time.time()
    await poll_until(
        lambda: asyncio.sleep(0, int(time.time()) > int(written)),
        timeout=5,
        what=lambda: "the clock's second to move",
        interval=0.05,
    )
    for _ in range(2):
        again = await run(reconciler, cluster, "static-manifests", namespace, force=True)
        assert again.ok, again.error
        assert again.applied > 0
        assert again.changed == []
