"""Module charts and catalog entries for operator tests, written into a test's directory."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from reconciler.model.lifecycle import API_VERSION

CRD_GROUP = "modules.test.example.com"


def module_chart(root: Path, module: str, version: str, configmaps: list[str]) -> Path:
    """A chart with a CRD (`<Module>` in CRD_GROUP) and one ConfigMap per name."""
    chart = root / f"{module}-{version}"
    (chart / "templates").mkdir(parents=True)
    (chart / "crds").mkdir()
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {module}\nversion: {version}\n")
    kind = module.capitalize()
    (chart / "crds" / "crd.yaml").write_text(
        f"""apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {module}s.{CRD_GROUP}
spec:
  group: {CRD_GROUP}
  names: {{kind: {kind}, plural: {module}s, singular: {module}, listKind: {kind}List}}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"""
    )
    for name in configmaps:
        (chart / "templates" / f"{name}.yaml").write_text(
            f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"
            f'data:\n  version: "{version}"\n'
        )
    return chart


def plain_chart(root: Path, module: str, version: str, *, broken: bool = False) -> Path:
    """A ConfigMap named after the module (and, `broken`, a Deployment no kubelet ever runs:
    never ready)."""
    path = root / f"{module}-{version}"
    (path / "templates").mkdir(parents=True)
    (path / "Chart.yaml").write_text(f"apiVersion: v2\nname: {module}\nversion: {version}\n")
    (path / "templates" / "cm.yaml").write_text(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {module}\n"
        f'data:\n  version: "{version}"\n'
    )
    if broken:
        (path / "templates" / "deploy.yaml").write_text(
            f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: {module}}}
spec:
  selector: {{matchLabels: {{app: {module}}}}}
  template:
    metadata: {{labels: {{app: {module}}}}}
    spec: {{containers: [{{name: c, image: "registry.invalid/never:{version}"}}]}}
"""
        )
    return path


def default_resource(module: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{CRD_GROUP}/v1",
        "kind": module.capitalize(),
        "metadata": {"name": f"default-{module}"},
        "spec": {"replicas": 1},
    }


def template(
    namespace: str, module: str, version: str, chart: Path, *, data: bool = True
) -> dict[str, Any]:
    """`data`: the template carries the module's default resource (of the CRD `module_chart`
    installs)."""
    body: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "ModuleTemplate",
        "metadata": {"name": f"{module}-{version}", "namespace": namespace},
        "spec": {
            "moduleName": module,
            "version": version,
            "descriptor": {"component": {"name": f"kyma-project.io/module/{module}"}},
            "data": default_resource(module),
            "resources": [{"name": "chart", "link": str(chart)}],
        },
    }
    if not data:
        del body["spec"]["data"]
    return body


def release_meta(namespace: str, module: str, channels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ModuleReleaseMeta",
        "metadata": {"name": module, "namespace": namespace},
        "spec": {
            "moduleName": module,
            "channels": [{"channel": c, "version": v} for c, v in channels.items()],
        },
    }


def kyma(namespace: str, name: str, channel: str, modules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "Kyma",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"channel": channel, "modules": modules},
    }


def kubeconfig_secret(namespace: str, kyma_name: str, kubeconfig: Path) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"kubeconfig-{kyma_name}",
            "namespace": namespace,
            "labels": {"operator.kyma-project.io/kyma-name": kyma_name},
        },
        "data": {"config": base64.b64encode(kubeconfig.read_bytes()).decode()},
    }
