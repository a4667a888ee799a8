"""CRDs in tests: compare a generated CRD schema with a reference one (operator mode,
infrastructure manager), and a minimal CRD that changes a cluster's discovery."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any


def version_of(crd: dict[str, Any], version: str) -> dict[str, Any]:
    return next(v for v in crd["spec"]["versions"] if v["name"] == version)


def differences(
    ours: dict[str, Any], theirs: dict[str, Any], path: str, kept: Collection[str] = ()
) -> list[str]:
    """Every field of ours must exist in theirs with the same type (recursively). `kept`: paths
    where ours preserves unknown fields and the reference spells them out (ours keeps more)."""
    problems = []
    if ours.get("type") != theirs.get("type"):
        problems.append(f"{path}: type {ours.get('type')} != reference {theirs.get('type')}")
        return problems
    if (
        ours.get("x-kubernetes-preserve-unknown-fields")
        != theirs.get("x-kubernetes-preserve-unknown-fields")
        and path not in kept
    ):
        problems.append(f"{path}: preserve-unknown-fields differs from the reference")
    if set(ours.get("enum") or []) - set(theirs.get("enum") or ours.get("enum") or []):
        problems.append(f"{path}: enum {ours['enum']} not within {theirs.get('enum')}")
    for name, sub in (ours.get("properties") or {}).items():
        if name not in (theirs.get("properties") or {}):
            problems.append(f"{path}.{name}: not in the reference")
            continue
        problems += differences(sub, theirs["properties"][name], f"{path}.{name}", kept)
    if "items" in ours:
        problems += differences(ours["items"], theirs.get("items") or {}, f"{path}[]", kept)
    if isinstance(ours.get("additionalProperties"), dict):
        problems += differences(
            ours["additionalProperties"],
            theirs.get("additionalProperties") or {},
            f"{path}{{}}",
            kept,
        )
    return problems


def gadget_crd(group: str) -> dict[str, Any]:
    """A minimal namespaced CRD (`Gadget` in `group`): creating it changes discovery."""
    return minimal_crd(group, "Gadget")


def minimal_crd(group: str, kind: str) -> dict[str, Any]:
    """A namespaced CRD of `kind` in `group`, served and stored as v1, with any fields."""
    plural, singular = f"{kind.lower()}s", kind.lower()
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": singular, "kind": kind},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        },
    }
