"""The platform set (examples/platform) has the size and every trait it exists to exercise.

Only the helm CLI is needed: the charts are rendered for Kubernetes 1.20 and the rendered objects
are checked for the traits of a real platform (issue 11, part C). Deploying the set on a cluster
is `test_platform_set.py`.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from pathlib import Path

import pytest

from reconciler.charts.determinism import chart_varying_calls
from reconciler.charts.workspace import Workspace
from tests.examples.platform import (
    IMPOSSIBLE_ON_1_20,
    PLATFORM,
    Obj,
    chart_names,
    copy_set,
    render,
    render_text,
)
from tests.examples.sample import BUILTIN_KINDS_1_20, run_helm

KB = 1024
# Built-in kinds the set uses beyond the kyma-like sample's, all served by Kubernetes 1.20.
MORE_BUILTIN_KINDS_1_20 = {
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"),
    ("autoscaling/v2beta2", "HorizontalPodAutoscaler"),
    ("networking.k8s.io/v1", "IngressClass"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_set(tmp_path_factory.mktemp("platform") / "platform")


@pytest.fixture(scope="module")
def rendered(workspace: Path) -> dict[str, list[Obj]]:
    return {chart: render(workspace, chart) for chart in chart_names(workspace)}


def everything(rendered: dict[str, list[Obj]]) -> list[Obj]:
    return [obj for objs in rendered.values() for obj in objs]


def test_the_set_has_at_least_12_charts_and_400_objects(rendered: dict[str, list[Obj]]) -> None:
    assert len(rendered) >= 12
    assert len(everything(rendered)) >= 400


def test_components_yaml_lists_every_chart_with_prerequisites_and_dependencies() -> None:
    components = Workspace(PLATFORM).component_set()  # as the reconciler reads it

    assert sorted(components.names()) == chart_names()
    assert [s.name for s in components.prerequisites] == [
        "cluster-essentials",
        "cert-manager",
        "mesh",
    ]
    assert any(spec.depends_on for spec in components.components)


@pytest.mark.parametrize("chart", chart_names())
def test_helm_lint_passes_strictly(workspace: Path, chart: str) -> None:
    done = run_helm(
        "lint", "--strict", str(workspace / "resources" / chart), "--kube-version", "1.20.2"
    )

    assert done.returncode == 0, done.stdout + done.stderr


def test_big_crds_are_generated_identically_and_exceed_300_kb(tmp_path: Path) -> None:
    first, second = copy_set(tmp_path / "a"), copy_set(tmp_path / "b")
    big = [p for p in (first / "resources").rglob("crds/*.yaml") if p.stat().st_size > 300 * KB]

    assert len(big) >= 2
    for path in big:
        assert path.read_bytes() == (second / path.relative_to(first)).read_bytes()


def test_three_crds_convert_by_webhook_and_carry_a_null_creation_timestamp() -> None:
    texts = [p.read_text() for p in (PLATFORM / "resources").rglob("crds/*.yaml")]
    webhook = [t for t in texts if "strategy: Webhook" in t]

    assert len(webhook) >= 3
    assert all("creationTimestamp: null" in t for t in webhook)


def test_a_crd_enum_holds_an_unquoted_equals_sign() -> None:
    texts = [p.read_text() for p in (PLATFORM / "resources").rglob("crds/*.yaml")]

    assert any(re.search(r"^\s*- =$", t, re.MULTILINE) for t in texts)


def test_unquoted_dates_and_big_numbers_render_unquoted(workspace: Path) -> None:
    text = "".join(render_text(workspace, chart) for chart in chart_names(workspace))

    assert re.search(r": \d{4}-\d{2}-\d{2}$", text, re.MULTILINE)
    assert re.search(r"^value: \d+e\+\d+$", text, re.MULTILINE)  # Helm's float formatting


@pytest.mark.parametrize("chart", ["cert-manager", "functions", "policy", "grafana", "database"])
def test_generated_values_differ_between_two_renders(workspace: Path, chart: str) -> None:
    first, second = render(workspace, chart, run=1), render(workspace, chart, run=2)

    def secrets(objs: list[Obj]) -> dict[str, Obj]:
        return {o["metadata"]["name"]: o["data"] for o in objs if o["kind"] == "Secret"}

    def checksums(objs: list[Obj]) -> dict[str, str]:
        return {
            f"{o['metadata']['name']}/{key}": value
            for o in objs
            if o["kind"] in ("Deployment", "StatefulSet")
            for key, value in (o["spec"]["template"]["metadata"].get("annotations") or {}).items()
            if key.startswith("checksum/")
        }

    assert secrets(first) != secrets(second)
    assert checksums(first).keys() == checksums(second).keys()
    assert checksums(first) != checksums(second)


def test_the_charts_read_as_deterministic_render_the_same_twice(workspace: Path) -> None:
    """The reconciler renders a chart a second time (to find generated values) only when its
    files name a varying function: the set's charts with generated values must all be found
    so, and the others must really render identically."""
    charts = chart_names(workspace)
    varying = {c for c in charts if chart_varying_calls(workspace / "resources" / c)}

    assert varying == {"cert-manager", "functions", "policy", "grafana", "database"}
    for chart in sorted(set(charts) - varying):
        assert render_text(workspace, chart, run=0) == render_text(workspace, chart, run=1), chart


def test_config_maps_hold_characters_outside_the_basic_multilingual_plane(
    rendered: dict[str, list[Obj]],
) -> None:
    dashboards = [
        o
        for o in rendered["grafana"]
        if o["kind"] == "ConfigMap" and "dashboard" in o["metadata"]["name"]
    ]
    astral = [
        o["metadata"]["name"]
        for o in dashboards
        if any(ord(c) > 0xFFFF for value in o["data"].values() for c in value)
    ]

    assert len(dashboards) >= 20
    assert len(astral) == len(dashboards)
    for o in dashboards:
        for value in o["data"].values():
            json.loads(value)  # still valid dashboard JSON
    assert unicodedata.name("🚀") in {unicodedata.name(c) for o in dashboards for c in str(o)}


def test_a_custom_resource_renders_a_null_value(rendered: dict[str, list[Obj]]) -> None:
    prometheus = next(o for o in rendered["monitoring"] if o["kind"] == "Prometheus")

    assert None in prometheus["spec"]["podMetadata"]["annotations"].values()


def test_containers_with_duplicate_env_names(rendered: dict[str, list[Obj]]) -> None:
    duplicated = [
        f"{o['metadata']['name']}/{c['name']}"
        for o in everything(rendered)
        if o["kind"] in ("Deployment", "StatefulSet", "DaemonSet")
        for c in o["spec"]["template"]["spec"]["containers"]
        if any(n > 1 for n in Counter(e["name"] for e in c.get("env", [])).values())
    ]

    assert len(duplicated) >= 2


def test_only_the_backup_chart_uses_a_kind_kubernetes_1_20_does_not_serve(
    rendered: dict[str, list[Obj]],
) -> None:
    served = BUILTIN_KINDS_1_20 | MORE_BUILTIN_KINDS_1_20
    for objs in rendered.values():
        for crd in (o for o in objs if o["kind"] == "CustomResourceDefinition"):
            for version in crd["spec"]["versions"]:
                served.add(
                    (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
                )
    unserved = {
        chart: {(o["apiVersion"], o["kind"]) for o in objs} - served
        for chart, objs in rendered.items()
    }

    assert {chart: kinds for chart, kinds in unserved.items() if kinds} == {
        IMPOSSIBLE_ON_1_20: {("batch/v1", "CronJob")}
    }


def test_the_set_uses_the_kinds_of_a_real_platform(rendered: dict[str, list[Obj]]) -> None:
    kinds = Counter(o["kind"] for o in everything(rendered))

    for kind in (
        "CustomResourceDefinition",
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "Job",
        "Service",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "Namespace",
        "Secret",
        "ConfigMap",
    ):
        assert kinds[kind] >= 1, kind
    assert kinds["CustomResourceDefinition"] >= 12
