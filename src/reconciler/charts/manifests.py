"""From rendered template text to an ordered list of `KubeObject`s, the same for every renderer.

Both renderers hand over (source path, text) pairs; this module splits them the way Helm splits
manifests, drops what is not applied (NOTES.txt, partials, empty documents, Helm hooks), checks
that each document is a Kubernetes object and orders the result: CRDs first, then Helm's install
kind order, then by template path and name. It parses; it does not transform objects.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from reconciler.charts import yamlio
from reconciler.errors import ChartError
from reconciler.model.kube_object import KubeObject

HOOK_ANNOTATION = "helm.sh/hook"

# Helm's releaseutil.InstallOrder; kinds not listed sort after these, alphabetically.
INSTALL_ORDER: tuple[str, ...] = (
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
)
_RANK = {kind: rank for rank, kind in enumerate(INSTALL_ORDER)}
_SEPARATOR = re.compile(r"(?:^|\s*\n)---\s*")  # Helm's releaseutil.SplitManifests
_SOURCE = re.compile(r"\A# Source: (.+)\n?")

Document = tuple[str, str]
"""(source path such as `mychart/templates/deployment.yaml`, text of one YAML document)."""


def split_documents(source: str, text: str) -> list[Document]:
    """Split one rendered file into its documents, as Helm does."""
    return [(source, part) for part in _SEPARATOR.split(text) if part.strip()]


def split_cli_output(text: str) -> list[Document]:
    """Split `helm template` output, attributing each document to its `# Source:` file."""
    documents: list[Document] = []
    source = "<helm template output>"
    for part in _SEPARATOR.split(text):
        header = _SOURCE.match(part)
        if header:
            source = header.group(1).strip()
            part = part[header.end() :]
        if part.strip():
            documents.append((source, part))
    return documents


def is_rendered_manifest(path: str) -> bool:
    """Whether a rendered template file holds manifests (not NOTES.txt, not a `_partial`)."""
    name = path.rsplit("/", 1)[-1]
    return not name.endswith("NOTES.txt") and not name.startswith("_")


def to_objects(chart: Path, documents: Iterable[Document]) -> list[KubeObject]:
    """Parse, filter and order the documents of one chart rendering."""
    entries: list[tuple[str, KubeObject]] = []
    for source, text in documents:
        raw = _load(chart, source, text)
        if raw is None or _is_hook(raw):
            continue
        _check_object(chart, source, raw)
        entries.append((source, KubeObject(raw)))
    entries.sort(key=_order_key)
    return [obj for _, obj in entries]


def _load(chart: Path, source: str, text: str) -> dict[str, Any] | None:
    try:
        raw = yamlio.load(text)
    except yaml.YAMLError as exc:
        raise ChartError(
            f"chart {chart}: template {source} renders invalid YAML{yamlio.where(exc)}"
        ) from exc
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ChartError(
            f"chart {chart}: template {source} renders a {type(raw).__name__}, "
            "not a Kubernetes object"
        )
    return raw


def _is_hook(raw: dict[str, Any]) -> bool:
    metadata = raw.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return isinstance(annotations, dict) and HOOK_ANNOTATION in annotations


def _check_object(chart: Path, source: str, raw: dict[str, Any]) -> None:
    missing = [field for field in ("apiVersion", "kind") if not raw.get(field)]
    metadata = raw.get("metadata")
    if not isinstance(metadata, dict) or not metadata.get("name"):
        missing.append("metadata.name")
    if missing:
        raise ChartError(
            f"chart {chart}: template {source} renders an object without {', '.join(missing)}"
        )


def _order_key(entry: tuple[str, KubeObject]) -> tuple[int, str, str, str, str]:
    source, obj = entry
    rank = -1 if obj.is_crd else _RANK.get(obj.kind, len(INSTALL_ORDER))
    return (rank, obj.kind, source, obj.namespace, obj.name)
