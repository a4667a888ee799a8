"""Least privilege: the verbs each role of the chart is granted, listed here, and no wildcard.

The mothership and the component reconcilers never call the Kubernetes API of the cluster they
run in (they reach clusters by the kubeconfigs they are given), so they get no role and no
mounted token. The operator gets what `reconciler operator run` itself uses plus what its
modules install (`operator.moduleRules`); tests/deploy/test_in_cluster.py runs an operator with
exactly this role.
"""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.operator.runtime.deploy import all_objects
from reconciler.operator.watcher.settings import WatcherSettings
from tests.deploy.chart import EVERYTHING, by_kind, render

CRUD = ("get", "list", "watch", "create", "update", "patch", "delete")
OPERATOR_OWN = {
    ("operator.kyma-project.io", "kymas"): CRUD,
    ("operator.kyma-project.io", "kymas/status"): CRUD,
    ("operator.kyma-project.io", "manifests"): CRUD,
    ("operator.kyma-project.io", "manifests/status"): CRUD,
    ("operator.kyma-project.io", "moduletemplates"): CRUD,
    ("operator.kyma-project.io", "modulereleasemetas"): CRUD,
    ("operator.kyma-project.io", "moduleconfigs"): CRUD,
    ("operator.kyma-project.io", "syncresources"): CRUD,
    ("operator.kyma-project.io", "syncresources/status"): CRUD,
    ("operator.kyma-project.io", "modulerollouts"): CRUD,
    ("operator.kyma-project.io", "modulerollouts/status"): CRUD,
    ("", "secrets"): ("get", "list", "watch"),
    ("", "events"): ("create",),
    ("apiextensions.k8s.io", "customresourcedefinitions"): CRUD,
    ("apiregistration.k8s.io", "apiservices"): ("get", "list", "watch"),
}
MODULE_DEFAULTS = {
    **{("", r): CRUD for r in ("configmaps", "secrets", "services", "serviceaccounts")},
    **{("", r): CRUD for r in ("namespaces", "persistentvolumeclaims")},
    **{("apps", r): CRUD for r in ("deployments", "statefulsets", "daemonsets")},
    **{("batch", r): CRUD for r in ("jobs", "cronjobs")},
    **{("networking.k8s.io", r): CRUD for r in ("networkpolicies", "ingresses")},
    ("policy", "poddisruptionbudgets"): CRUD,
    **{
        ("admissionregistration.k8s.io", r): CRUD
        for r in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations")
    },
    **{
        ("rbac.authorization.k8s.io", r): (*CRUD, "bind", "escalate")
        for r in ("roles", "rolebindings", "clusterroles", "clusterrolebindings")
    },
}


IM = "infrastructuremanager.kyma-project.io"
NO_CREATE = ("get", "list", "watch", "update", "patch")
INFRA = {
    (IM, "runtimes"): NO_CREATE,
    (IM, "runtimes/status"): NO_CREATE,
    (IM, "gardenerclusters"): CRUD,
    (IM, "gardenerclusters/status"): CRUD,
    ("", "secrets"): CRUD,
}


def grants(rules: list[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    """(group, resource) -> verbs, over every rule."""
    found: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                found.setdefault((group, resource), set()).update(rule["verbs"])
    return found


def wildcards(rules: list[dict[str, Any]]) -> list[str]:
    return [
        f"{field}: {value}"
        for rule in rules
        for field in ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs")
        for value in rule.get(field, [])
        if "*" in value
    ]


def expected(*tables: dict[tuple[str, str], tuple[str, ...]]) -> dict[tuple[str, str], set[str]]:
    merged: dict[tuple[str, str], set[str]] = {}
    for table in tables:
        for key, verbs in table.items():
            merged.setdefault(key, set()).update(verbs)
    return merged


async def test_each_role_gets_exactly_the_verbs_listed_and_no_wildcard() -> None:
    objects = await render(EVERYTHING)
    roles = {r["metadata"]["name"]: r for r in by_kind(objects, "ClusterRole")}
    assert not by_kind(objects, "Role")
    assert not by_kind(objects, "RoleBinding")
    bound = {
        subject["name"]: binding["roleRef"]["name"]
        for binding in by_kind(objects, "ClusterRoleBinding")
        for subject in binding["subjects"]
    }
    accounts = {a["metadata"]["name"]: a for a in by_kind(objects, "ServiceAccount")}
    assert set(accounts) == {
        "reconciler-mothership",
        "reconciler-component",
        "reconciler-operator",
        "reconciler-infra",
    }
    for quiet in ("reconciler-mothership", "reconciler-component"):
        assert quiet not in bound
        assert accounts[quiet]["automountServiceAccountToken"] is False
    operator_rules = roles[bound["reconciler-operator"]]["rules"]
    assert wildcards(operator_rules) == []
    assert grants(operator_rules) == expected(OPERATOR_OWN, MODULE_DEFAULTS)
    infra_rules = roles[bound["reconciler-infra"]]["rules"]
    assert wildcards(infra_rules) == []
    assert grants(infra_rules) == expected(INFRA)


async def test_module_rules_replace_the_defaults() -> None:
    rules = [{"apiGroups": ["example.io"], "resources": ["widgets"], "verbs": ["get", "patch"]}]
    objects = await render(
        {"mothership": {"enabled": False}, "operator": {"enabled": True, "moduleRules": rules}}
    )
    (role,) = by_kind(objects, "ClusterRole")
    assert grants(role["rules"]) == expected(
        OPERATOR_OWN, {("example.io", "widgets"): ("get", "patch")}
    )


async def test_operator_self_deploy_grants_the_charts_role() -> None:
    """`reconciler operator deploy` and the chart give the operator one role, no wildcard."""
    objects = await all_objects("kyma-system", "registry.example:5000/reconciler:1.2")
    (role,) = [o for o in objects if o["kind"] == "ClusterRole"]
    assert wildcards(role["rules"]) == []
    assert grants(role["rules"]) == expected(OPERATOR_OWN, MODULE_DEFAULTS)
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "registry.example:5000/reconciler:1.2"
    assert container["args"][:2] == ["operator", "run"]


async def test_operator_self_deploy_pins_an_image_by_digest() -> None:
    digest = "sha256:" + "ab" * 32
    objects = await all_objects("kyma-system", f"registry.example/reconciler@{digest}")
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == f"registry.example/reconciler@{digest}"


async def test_the_watcher_listener_may_create_secrets_in_its_ca_namespace_and_nothing_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The listener's CA Secret is read through the ClusterRole and created once; `create`
    cannot be limited to a name, so a Role grants it in the CA's namespace only."""
    watcher = {"enabled": True, "caNamespace": "kcp-system", "listenerHosts": ["kcp.example"]}
    objects = await render(
        {"mothership": {"enabled": False}, "operator": {"enabled": True, "watcher": watcher}}
    )
    (cluster_role,) = by_kind(objects, "ClusterRole")
    assert grants(cluster_role["rules"]) == expected(OPERATOR_OWN, MODULE_DEFAULTS)
    (role,) = by_kind(objects, "Role")
    (binding,) = by_kind(objects, "RoleBinding")
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == "kcp-system"
    assert wildcards(role["rules"]) == []
    assert grants(role["rules"]) == {("", "secrets"): {"create"}}
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert [s["name"] for s in binding["subjects"]] == ["reconciler-operator"]
    (service,) = by_kind(objects, "Service")
    assert service["spec"]["ports"][0]["port"] == 8443
    (deployment,) = by_kind(objects, "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "listener", "containerPort": 8443, "protocol": "TCP"} in container["ports"]
    for env in container["env"]:
        monkeypatch.setenv(env["name"], env["value"])
    settings = WatcherSettings()
    assert settings.listener_url == "https://reconciler-operator-watcher.reconciler-system.svc:8443"
    assert settings.ca_namespace == "kcp-system"
    assert {"reconciler-operator-watcher.reconciler-system.svc", "kcp.example"} <= set(
        settings.listener_hosts
    )
