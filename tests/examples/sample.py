"""The sample component set in examples/kyma-like, rendered with the helm CLI, for the tests here.

Renders are cached per (chart, values file, namespace, --set flags): the charts do not change while
the tests run, and `helm template` costs about 60 ms a call.
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from reconciler.devcluster.build import ensure_helm
from reconciler.model.component import ComponentSet
from reconciler.paths import find_binary

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
WORKSPACE = EXAMPLES / "kyma-like"
RESOURCES = WORKSPACE / "resources"
INSTALLATION = WORKSPACE / "installation" / "resources"
CRDS_BUNDLE = INSTALLATION / "crds"
KUBE_VERSION = "v1.20.2"
HOOK_ANNOTATION = "helm.sh/hook"

Obj = dict[str, Any]

# (apiVersion, kind) of the built-in kinds the charts may use: all served by Kubernetes 1.20.
BUILTIN_KINDS_1_20 = {
    ("v1", "ConfigMap"),
    ("v1", "LimitRange"),
    ("v1", "Namespace"),
    ("v1", "ResourceQuota"),
    ("v1", "Secret"),
    ("v1", "Service"),
    ("v1", "ServiceAccount"),
    ("apps/v1", "DaemonSet"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"),
    ("batch/v1", "Job"),
    ("policy/v1beta1", "PodDisruptionBudget"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
}
CLUSTER_SCOPED_BUILTINS = {
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "Namespace",
    "PriorityClass",
}
WORKLOAD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "Job"}
# The C loader when PyYAML has it: the big CRD takes seconds to parse in pure Python.
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def helm() -> Path:
    """The helm CLI of the test bed (installed on first use, like the rest of the test bed)."""
    found = find_binary("helm")
    if found is None:
        ensure_helm()
        found = find_binary("helm")
    assert found is not None, "helm is not available; run `make testbed`"
    return found


@functools.cache
def component_set() -> ComponentSet:
    raw = yaml.safe_load((INSTALLATION / "components.yaml").read_text())
    return ComponentSet.model_validate(raw)


def chart_names() -> list[str]:
    return sorted(p.name for p in RESOURCES.iterdir() if (p / "Chart.yaml").is_file())


def namespace_of(chart: str) -> str:
    components = component_set()
    return components.namespace_of(components.get(chart))


def values_files(chart: str) -> list[str | None]:
    """None (the chart's own values.yaml only) and every profile file of the chart."""
    return [None, *sorted(p.name for p in (RESOURCES / chart).glob("profile-*.yaml"))]


def render_cases() -> list[tuple[str, str | None]]:
    return [(chart, values) for chart in chart_names() for values in values_files(chart)]


def run_helm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(helm()), *args], capture_output=True, text=True, check=False, timeout=60
    )


@functools.cache
def render_text(
    chart: str,
    values_file: str | None = None,
    namespace: str | None = None,
    sets: tuple[str, ...] = (),
) -> str:
    """`helm template` output (hooks and crds/ included), as the reconciler's input would be."""
    args = [
        "template",
        chart,
        str(RESOURCES / chart),
        "--namespace",
        namespace or namespace_of(chart),
        "--include-crds",
        "--kube-version",
        KUBE_VERSION,
    ]
    if values_file:
        args += ["--values", str(RESOURCES / chart / values_file)]
    for item in sets:
        args += ["--set", item]
    done = run_helm(*args)
    assert done.returncode == 0, f"helm template {chart} ({values_file}) failed:\n{done.stderr}"
    return done.stdout


def render(
    chart: str,
    values_file: str | None = None,
    namespace: str | None = None,
    sets: tuple[str, ...] = (),
) -> list[Obj]:
    """The rendered objects (empty documents dropped)."""
    text = render_text(chart, values_file, namespace, sets)
    return [doc for doc in yaml.safe_load_all(text) if doc]


def is_hook(obj: Obj) -> bool:
    return HOOK_ANNOTATION in (obj.get("metadata", {}).get("annotations") or {})


def applied(objs: list[Obj]) -> list[Obj]:
    """What a reconciler applies: everything but Helm hooks."""
    return [obj for obj in objs if not is_hook(obj)]


@functools.cache
def _load_yaml_files(directory: Path) -> tuple[tuple[Path, Obj], ...]:
    found: list[tuple[Path, Obj]] = []
    for path in sorted(directory.rglob("*.yaml")):
        docs = yaml.load_all(path.read_text(), Loader=_LOADER)
        found += [(path, doc) for doc in docs if doc]
    return tuple(found)


def load_yaml_files(directory: Path) -> list[tuple[Path, Obj]]:
    """Every YAML document under `directory` (recursively), with the file it came from."""
    return list(_load_yaml_files(directory))


def crds() -> list[tuple[Path, Obj]]:
    """The CRDs bundle plus every chart's own crds/ directory."""
    found = load_yaml_files(CRDS_BUNDLE)
    for chart in chart_names():
        if (RESOURCES / chart / "crds").is_dir():
            found += load_yaml_files(RESOURCES / chart / "crds")
    return found


@functools.cache
def custom_kinds() -> dict[tuple[str, str], str]:
    """(apiVersion, kind) of every served custom-resource version -> its scope."""
    kinds: dict[tuple[str, str], str] = {}
    for _, crd in crds():
        spec = crd["spec"]
        for version in spec["versions"]:
            if version["served"]:
                kinds[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = spec["scope"]
    return kinds


def is_namespaced(obj: Obj) -> bool:
    custom = custom_kinds().get((obj["apiVersion"], obj["kind"]))
    if custom is not None:
        return custom == "Namespaced"
    return obj["kind"] not in CLUSTER_SCOPED_BUILTINS


def pod_spec(obj: Obj) -> Obj | None:
    if obj["kind"] in WORKLOAD_KINDS:
        spec: Obj = obj["spec"]["template"]["spec"]
        return spec
    return None


def containers(obj: Obj) -> Iterator[Obj]:
    spec = pod_spec(obj)
    if spec is not None:
        yield from spec.get("initContainers", [])
        yield from spec.get("containers", [])


def null_paths(value: Any, path: str = "") -> Iterator[str]:
    """Paths (a.b[0].c) of every YAML null inside `value`."""
    if value is None:
        yield path or "<document>"
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from null_paths(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from null_paths(item, f"{path}[{index}]")


def ref(obj: Obj) -> str:
    meta = obj.get("metadata", {})
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('kind')} {where}{meta.get('name')}"
