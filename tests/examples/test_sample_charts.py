"""The sample component set (examples/kyma-like) is a valid, realistic input for the reconciler.

These checks need only the helm CLI: every chart renders and lints for Kubernetes 1.20 with its
default values and with each profile; the rendered objects avoid the pitfalls that break a
server-side apply (ports without protocol, nulls, unserved API versions); the CRDs bundle holds a
CRD larger than 256 KiB; and components.yaml is read by the reconciler's own model.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.examples.sample import (
    BUILTIN_KINDS_1_20,
    CRDS_BUNDLE,
    EXAMPLES,
    HOOK_ANNOTATION,
    INSTALLATION,
    KUBE_VERSION,
    RESOURCES,
    Obj,
    applied,
    chart_names,
    component_set,
    containers,
    crds,
    custom_kinds,
    is_hook,
    is_namespaced,
    load_yaml_files,
    null_paths,
    pod_spec,
    ref,
    render,
    render_cases,
    run_helm,
    values_files,
)

BIG_CRD = CRDS_BUNDLE / "monitoring" / "prometheuses.monitoring.example.io.yaml"
BIG_CRD_SCRIPT = EXAMPLES / "tools" / "make_big_crd.py"
KIB = 1024
CASES = render_cases()
CASE_IDS = [f"{chart}-{values or 'values'}" for chart, values in CASES]


def all_rendered() -> list[tuple[str, str | None, Obj]]:
    return [(chart, values, obj) for chart, values in CASES for obj in render(chart, values)]


# --- components.yaml ------------------------------------------------------------------------------


def test_components_yaml_is_read_by_the_reconciler_model() -> None:
    components = component_set()

    assert components.default_namespace == "kyma-system"
    assert [s.name for s in components.prerequisites] == [
        "cluster-essentials",
        "istio",
        "certificates",
    ]
    assert [s.name for s in components.components] == [
        "app-gateway",
        "eventing",
        "monitoring",
        "serverless",
    ]
    assert components.get("serverless").depends_on == ("eventing",)
    assert components.namespace_of(components.get("istio")) == "istio-system"
    assert components.namespace_of(components.get("eventing")) == "kyma-system"


def test_components_yaml_uses_only_the_original_fields_and_our_additions() -> None:
    raw = yaml.safe_load((INSTALLATION / "components.yaml").read_text())
    allowed = {"name", "namespace", "url", "version", "dependsOn", "configuration"}

    assert set(raw) <= {"defaultNamespace", "prerequisites", "components"}
    for entry in raw["prerequisites"] + raw["components"]:
        assert set(entry) <= allowed, entry


def test_every_component_has_a_chart_and_every_chart_a_component() -> None:
    assert sorted(component_set().names()) == chart_names()


# --- charts ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("chart", chart_names())
def test_chart_metadata_is_helm_v2_at_version_0_1_0(chart: str) -> None:
    meta = yaml.safe_load((RESOURCES / chart / "Chart.yaml").read_text())

    assert meta["apiVersion"] == "v2"
    assert meta["name"] == chart
    assert meta["version"] == "0.1.0"
    assert isinstance(meta["appVersion"], str)
    assert meta["appVersion"]


@pytest.mark.parametrize(("chart", "values"), CASES, ids=CASE_IDS)
def test_chart_renders_for_kubernetes_1_20(chart: str, values: str | None) -> None:
    objs = render(chart, values)

    assert objs, f"{chart} rendered nothing"
    for obj in objs:
        assert obj.get("apiVersion")
        assert obj.get("kind")
        assert obj.get("metadata", {}).get("name"), obj


@pytest.mark.parametrize(("chart", "values"), CASES, ids=CASE_IDS)
def test_helm_lint_passes_strictly(chart: str, values: str | None) -> None:
    args = ["lint", "--strict", "--kube-version", KUBE_VERSION, str(RESOURCES / chart)]
    if values:
        args += ["--values", str(RESOURCES / chart / values)]

    done = run_helm(*args)

    assert done.returncode == 0, done.stdout + done.stderr


def test_monitoring_profiles_size_the_deployment_and_the_prometheus() -> None:
    def replicas(values: str | None) -> dict[str, int]:
        return {
            obj["kind"]: obj["spec"]["replicas"]
            for obj in render("monitoring", values)
            if obj["kind"] in ("Deployment", "Prometheus")
        }

    assert values_files("monitoring") == [
        None,
        "profile-evaluation.yaml",
        "profile-production.yaml",
    ]
    assert replicas("profile-evaluation.yaml") == {"Deployment": 1, "Prometheus": 1}
    assert replicas("profile-production.yaml") == {"Deployment": 2, "Prometheus": 2}


def test_profiles_change_resources_too() -> None:
    def operator_memory(values: str | None) -> str:
        (deployment,) = (o for o in render("monitoring", values) if o["kind"] == "Deployment")
        memory: str = deployment["spec"]["template"]["spec"]["containers"][0]["resources"][
            "limits"
        ]["memory"]
        return memory

    assert operator_memory("profile-evaluation.yaml") == "128Mi"
    assert operator_memory("profile-production.yaml") == "512Mi"


# --- pitfalls of server-side apply ----------------------------------------------------------------


def test_no_rendered_document_contains_a_null() -> None:
    nulls = [
        f"{chart} ({values or 'values.yaml'}): {ref(obj)}: {path}"
        for chart, values, obj in all_rendered()
        for path in null_paths(obj)
    ]

    assert nulls == []


def test_every_service_and_container_port_declares_its_protocol() -> None:
    missing: list[str] = []
    seen = 0
    for _, _, obj in all_rendered():
        ports: list[Obj] = []
        if obj["kind"] == "Service":
            ports += obj["spec"].get("ports", [])
        for container in containers(obj):
            ports += container.get("ports", [])
        seen += len(ports)
        missing += [f"{ref(obj)}: {port}" for port in ports if port.get("protocol") != "TCP"]

    assert seen > 20
    assert missing == []


def test_only_api_versions_served_by_kubernetes_1_20_are_used() -> None:
    served = BUILTIN_KINDS_1_20 | set(custom_kinds())
    unserved = {
        (obj["apiVersion"], obj["kind"])
        for _, _, obj in all_rendered()
        if (obj["apiVersion"], obj["kind"]) not in served
    }

    assert unserved == set()


def test_aggregated_cluster_roles_leave_rules_to_the_controller_manager() -> None:
    roles = [obj for _, _, obj in all_rendered() if obj["kind"] == "ClusterRole"]
    aggregated = [obj for obj in roles if "aggregationRule" in obj]

    assert {obj["metadata"]["name"] for obj in aggregated} == {"kyma-view", "kyma-edit"}
    assert [ref(obj) for obj in aggregated if "rules" in obj] == []


def test_other_components_contribute_roles_to_the_aggregated_ones() -> None:
    label = "rbac.kyma.example.io/aggregate-to-kyma-view"
    contributors = {
        chart
        for chart, _, obj in all_rendered()
        if obj["kind"] == "ClusterRole" and obj["metadata"]["labels"].get(label) == "true"
    }

    assert contributors == {"cluster-essentials", "eventing", "serverless"}


# --- hooks ----------------------------------------------------------------------------------------


def test_the_pre_install_job_is_a_hook_and_the_migration_job_is_not() -> None:
    jobs = {obj["metadata"]["name"]: obj for obj in render("app-gateway") if obj["kind"] == "Job"}

    hook = jobs["app-gateway-pre-install-check"]
    assert hook["metadata"]["annotations"][HOOK_ANNOTATION] == "pre-install"
    migration = jobs["app-gateway-migrate-2-4-0"]
    assert not is_hook(migration)
    applied_jobs = [o for o in applied(render("app-gateway")) if o["kind"] == "Job"]
    assert [o["metadata"]["name"] for o in applied_jobs] == ["app-gateway-migrate-2-4-0"]


def test_no_other_chart_has_hooks() -> None:
    hooks = {(chart, ref(obj)) for chart, _, obj in all_rendered() if is_hook(obj)}

    assert hooks == {("app-gateway", "Job kyma-system/app-gateway-pre-install-check")}


# --- namespaces, labels, global values ------------------------------------------------------------


@pytest.mark.parametrize("chart", chart_names())
def test_namespaced_objects_follow_the_release_namespace(chart: str) -> None:
    objs = render(chart, namespace="elsewhere")

    namespaced = [obj for obj in objs if is_namespaced(obj)]
    assert [ref(o) for o in namespaced if o["metadata"].get("namespace") != "elsewhere"] == []
    cluster_scoped = [obj for obj in objs if not is_namespaced(obj)]
    assert [ref(o) for o in cluster_scoped if "namespace" in o["metadata"]] == []


def test_every_object_carries_the_recommended_labels() -> None:
    unlabelled = [
        f"{chart}: {ref(obj)}"
        for chart, _, obj in all_rendered()
        if obj["metadata"].get("labels", {}).get("app.kubernetes.io/name") != chart
        or obj["metadata"]["labels"].get("app.kubernetes.io/part-of") != "kyma"
    ]

    assert unlabelled == []


def test_workload_selectors_match_their_pod_labels() -> None:
    for _, _, obj in all_rendered():
        if obj["kind"] in ("Deployment", "StatefulSet", "DaemonSet"):
            selector = obj["spec"]["selector"]["matchLabels"]
            labels = obj["spec"]["template"]["metadata"]["labels"]
            assert selector.items() <= labels.items(), ref(obj)


def test_global_values_reach_every_workload() -> None:
    overrides = (
        "global.domainName=global.test",
        "global.imagePullPolicy=Always",
        "global.containerRegistry.path=mirror.test/kyma",
        "global.priorityClassName=custom-priority",
    )
    checked = 0
    for chart in chart_names():
        objs = applied(render(chart, sets=overrides))
        for obj in objs:
            spec = pod_spec(obj)
            if spec is None:
                continue
            checked += 1
            assert spec["priorityClassName"] in ("custom-priority", "kyma-system-critical")
            for container in containers(obj):
                assert container["imagePullPolicy"] == "Always", ref(obj)
                assert container["image"].startswith("mirror.test/kyma/"), ref(obj)
        if chart == "cluster-essentials":
            names = {o["metadata"]["name"] for o in objs if o["kind"] == "PriorityClass"}
            assert "custom-priority" in names
        else:
            assert "global.test" in yaml.safe_dump_all(objs), chart
    assert checked >= 8


# --- CRDs -----------------------------------------------------------------------------------------


def test_the_big_crd_is_larger_than_256_kib_valid_yaml_and_in_budget() -> None:
    size = BIG_CRD.stat().st_size
    crd = yaml.safe_load(BIG_CRD.read_text())

    assert 256 * KIB < size <= 400 * KIB
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"]["name"] == "prometheuses.monitoring.example.io"


def test_the_big_crd_is_what_its_script_generates() -> None:
    done = subprocess.run(
        [sys.executable, str(BIG_CRD_SCRIPT), "--check"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )

    assert done.returncode == 0, done.stderr


def structural_problems(schema: Obj, path: str) -> list[str]:
    """Violations of the structural-schema rules Kubernetes 1.20 enforces (the ones that matter)."""
    problems: list[str] = []
    open_ended = schema.get("x-kubernetes-int-or-string") or schema.get(
        "x-kubernetes-preserve-unknown-fields"
    )
    if "type" not in schema and not open_ended:
        problems.append(f"{path}: no type")
    if "properties" in schema and "additionalProperties" in schema:
        problems.append(f"{path}: both properties and additionalProperties")
    if "x-kubernetes-validations" in schema:
        problems.append(f"{path}: CEL validation rules need Kubernetes 1.25")
    if schema.get("x-kubernetes-list-type") == "map":
        required = set(schema["items"].get("required", []))
        if not set(schema["x-kubernetes-list-map-keys"]) <= required:
            problems.append(f"{path}: list-map keys must be required")
    for name, sub in schema.get("properties", {}).items():
        problems += structural_problems(sub, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            problems += structural_problems(schema[key], f"{path}[{key}]")
    return problems


def test_every_crd_is_an_apiextensions_v1_crd_with_a_structural_schema() -> None:
    found = crds()
    problems: list[str] = []
    for path, crd in found:
        spec = crd["spec"]
        assert crd["apiVersion"] == "apiextensions.k8s.io/v1", path
        assert crd["kind"] == "CustomResourceDefinition", path
        assert crd["metadata"]["name"] == f"{spec['names']['plural']}.{spec['group']}", path
        assert not spec["group"].endswith(("istio.io", "k8s.io", "kubernetes.io")), path
        assert [v["storage"] for v in spec["versions"]].count(True) == 1, path
        for version in spec["versions"]:
            schema = version["schema"]["openAPIV3Schema"]
            problems += structural_problems(schema, f"{path.name}:{version['name']}")

    assert len(found) >= 8
    assert problems == []


def served_kinds(found: list[tuple[Path, Obj]]) -> set[tuple[str, str]]:
    return {
        (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
        for _, crd in found
        for version in crd["spec"]["versions"]
        if version["served"]
    }


def test_custom_resources_come_from_the_bundle_or_the_charts_own_crds() -> None:
    bundle = served_kinds(load_yaml_files(CRDS_BUNDLE))
    from_bundle: dict[str, list[str]] = {}
    from_own: dict[str, list[str]] = {}
    for chart in chart_names():
        own_dir = RESOURCES / chart / "crds"
        own = served_kinds(load_yaml_files(own_dir)) if own_dir.is_dir() else set()
        used = {
            (obj["apiVersion"], obj["kind"])
            for obj in render(chart)
            if (obj["apiVersion"], obj["kind"]) not in BUILTIN_KINDS_1_20
        }
        assert used <= bundle | own, chart
        from_bundle[chart] = sorted(kind for av, kind in used if (av, kind) in bundle)
        from_own[chart] = sorted(kind for av, kind in used if (av, kind) in own)

    assert from_bundle["certificates"] == ["Certificate", "Issuer"]
    assert from_bundle["eventing"] == ["EventingBackend"]
    assert from_bundle["monitoring"] == ["Prometheus"]
    assert from_own == {chart: ["Gateway"] if chart == "istio" else [] for chart in chart_names()}


# --- budget ---------------------------------------------------------------------------------------


def test_the_examples_stay_small() -> None:
    files = [p for p in EXAMPLES.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    total = sum(p.stat().st_size for p in files)

    # Two sets (kyma-like with its 334 KiB CRD, platform) and the actions package.
    assert total < 1024 * KIB, f"examples/ holds {total} bytes"


def test_chart_paths_are_the_original_kyma_layout() -> None:
    assert (INSTALLATION / "components.yaml").is_file()
    assert CRDS_BUNDLE.is_dir()
    for chart in chart_names():
        assert Path(RESOURCES / chart / "values.yaml").is_file()
