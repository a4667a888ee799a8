"""Real-world chart traits on the real apiserver (fixture charts of ours): `kind: List`
documents, Helm's `helm.sh/resource-policy: keep` on delete and prune, and the manifest quirks
of popular charts (status, empty data, scope mix-ups, hooks) that must apply and re-apply
unchanged."""

from __future__ import annotations

from reconciler.core.runner import ComponentReconciler
from reconciler.kube.cluster import Cluster
from tests.core.support import get, run


async def test_the_items_of_list_documents_are_applied(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str
) -> None:
    first = await run(reconciler, cluster, "list-documents", namespace)
    assert first.ok, first.error
    for kind, name in [
        ("ConfigMap", "list-documents-first"),
        ("ConfigMap", "list-documents-second"),
        ("ServiceAccount", "list-documents-robot"),
    ]:
        assert await get(cluster, kind, name, namespace) is not None, name
    again = await run(reconciler, cluster, "list-documents", namespace)
    assert again.ok, again.error
    assert again.changed == []


async def test_objects_with_resource_policy_keep_outlive_prune_and_delete(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str
) -> None:
    first = await run(reconciler, cluster, "resource-policy", namespace)
    assert first.ok, first.error
    assert await get(cluster, "Secret", "resource-policy-password", namespace) is not None

    dropped = await run(
        reconciler, cluster, "resource-policy", namespace, configuration={"keepSecret": False}
    )
    assert dropped.ok, dropped.error
    assert dropped.pruned == []
    assert await get(cluster, "Secret", "resource-policy-password", namespace) is not None
    assert any(
        "resource-policy-password kept: annotated helm.sh/resource-policy: keep" in warning
        for warning in dropped.warnings
    ), dropped.warnings

    deleted = await run(
        reconciler,
        cluster,
        "resource-policy",
        namespace,
        configuration={"keepSecret": False},
        delete=True,
    )
    assert deleted.ok, deleted.error
    assert [key.name for key in deleted.deleted] == ["resource-policy-deleted"]
    assert await get(cluster, "ConfigMap", "resource-policy-deleted", namespace) is None
    assert await get(cluster, "ConfigMap", "resource-policy-kept", namespace) is not None
    assert any("resource-policy-kept kept" in warning for warning in deleted.warnings)


async def test_manifest_quirks_of_popular_charts_apply_and_re_apply_unchanged(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str
) -> None:
    first = await run(reconciler, cluster, "manifest-quirks", namespace)
    assert first.ok, first.error
    role = await get(
        cluster,
        "ClusterRole",
        f"manifest-quirks-{namespace}-reader",
        api_version="rbac.authorization.k8s.io/v1",
    )
    assert role is not None
    assert role.namespace == ""
    blank = await get(cluster, "ConfigMap", "manifest-quirks-blank-namespace", namespace)
    assert blank is not None  # `namespace: ""` is the component's namespace
    empty = await get(cluster, "ConfigMap", "manifest-quirks-empty", namespace)
    assert empty is not None
    assert "data" not in empty.raw
    for kind, name in [("Pod", "manifest-quirks-test"), ("ConfigMap", "manifest-quirks-twice")]:
        assert await get(cluster, kind, name, namespace) is None, f"hook {name} was applied"
    service = await get(cluster, "Service", "manifest-quirks-nodeport", namespace)
    assert service is not None
    allocated = service.raw["spec"]["clusterIP"], service.raw["spec"]["ports"][0]["nodePort"]
    for _ in range(2):  # forced: every object is applied again, not skipped as unchanged
        again = await run(reconciler, cluster, "manifest-quirks", namespace, force=True)
        assert again.ok, again.error
        assert again.applied > 0
        assert again.changed == []
    service = await get(cluster, "Service", "manifest-quirks-nodeport", namespace)
    assert service is not None
    assert (service.raw["spec"]["clusterIP"], service.raw["spec"]["ports"][0]["nodePort"]) == (
        allocated
    )


async def test_crds_still_annotated_as_helm_2_hooks_are_installed_from_crds_dir(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str
) -> None:
    first = await run(reconciler, cluster, "crd-hook-annotations", namespace)
    assert first.ok, first.error
    legacy = await get(
        cluster, "Legacy", "crd-hook-annotations", namespace, api_version="hooks.example.io/v1"
    )
    assert legacy is not None
    assert legacy.raw["spec"] == {"mode": "classic"}


async def test_an_object_rendered_twice_is_applied_once_as_its_last_rendering(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str
) -> None:
    for attempt in range(2):
        outcome = await run(reconciler, cluster, "duplicate-objects", namespace)
        assert outcome.ok, outcome.error
        same = await get(cluster, "ConfigMap", "duplicate-objects-same", namespace)
        assert same is not None
        assert same.raw["data"] == {"from": "b"}
        if attempt:  # the no-op fast path: nothing rendered, nothing written
            assert outcome.changed == []
        else:
            warnings = outcome.warnings
            assert any("is rendered 2 times: the last one is applied" in w for w in warnings)
