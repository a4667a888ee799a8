"""The module catalog a remote cluster's users may choose from, copied into that cluster.

For every module of the control plane's catalog (the Kyma's namespace), the ModuleTemplate it
resolves to on the Kyma's channel (and on any channel a module of the Kyma names) is applied
to `kyma-system` of the remote cluster, labelled `managed-by: kyma-operator`; copies whose
template is no longer offered are deleted. Only differences are written. Beta and internal
modules are offered only when the Kyma carries the matching label (`catalog.py`), so a user
cannot pick what the Kyma would then be refused.
"""

from __future__ import annotations

from reconciler.model.kube_object import Body
from reconciler.model.lifecycle import (
    API_VERSION,
    MANAGED_BY,
    MANAGER,
    MODULE_NAME,
    KymaSpec,
    Module,
)
from reconciler.operator.catalog.resolve import CatalogError, resolve
from reconciler.operator.clusters.control import ControlPlane

REMOTE_NAMESPACE = "kyma-system"
OURS = f"{MANAGED_BY}={MANAGER}"


def offered(kyma: Body, metas: list[Body], templates: list[Body]) -> dict[str, Body]:
    """Template name -> the control plane's ModuleTemplate the Kyma's cluster may use."""
    spec = KymaSpec.model_validate(kyma.get("spec") or {})
    names = {str((m.get("spec") or {}).get("moduleName") or "") for m in metas}
    names |= {
        str((t.get("spec") or {}).get("moduleName") or "")
        or str((t["metadata"].get("labels") or {}).get(MODULE_NAME) or "")
        for t in templates
    }
    names.discard("")
    channels = {spec.channel} | {m.channel for m in spec.modules or [] if m.channel}
    by_name = {t["metadata"]["name"]: t for t in templates}
    labels = kyma["metadata"].get("labels") or {}
    wanted: dict[str, Body] = {}
    for module in sorted(names):
        for channel in sorted(channels):
            try:
                resolved = resolve(
                    Module(name=module, channel=channel),
                    channel,
                    metas,
                    templates,
                    kyma_labels=labels,
                )
            except CatalogError:
                continue  # not on this channel, or not for this Kyma: not offered
            wanted[resolved.template] = by_name[resolved.template]
    return wanted


def _copy(template: Body) -> Body:
    labels = dict(template["metadata"].get("labels") or {})
    labels[MANAGED_BY] = MANAGER
    return {
        "apiVersion": API_VERSION,
        "kind": "ModuleTemplate",
        "metadata": {
            "name": template["metadata"]["name"],
            "namespace": REMOTE_NAMESPACE,
            "labels": labels,
        },
        "spec": template.get("spec") or {},
    }


async def sync_catalog(control: ControlPlane, remote: ControlPlane, kyma: Body) -> int:
    """Bring the remote copies in line; return how many objects were written or deleted."""
    namespace = kyma["metadata"]["namespace"]
    metas = await control.list("ModuleReleaseMeta", namespace)
    templates = await control.list("ModuleTemplate", namespace)
    wanted = {name: _copy(t) for name, t in offered(kyma, metas, templates).items()}
    existing = {
        t["metadata"]["name"]: t
        for t in await remote.list("ModuleTemplate", REMOTE_NAMESPACE, OURS)
    }
    changes = 0
    for name, body in wanted.items():
        have = existing.get(name)
        if have is None or not _same(have, body):
            await remote.apply(body)
            changes += 1
    for name in existing.keys() - wanted.keys():
        await remote.delete("ModuleTemplate", REMOTE_NAMESPACE, name)
        changes += 1
    return changes


def _same(have: Body, want: Body) -> bool:
    labels = have["metadata"].get("labels") or {}
    same_labels = all(labels.get(k) == v for k, v in want["metadata"]["labels"].items())
    return same_labels and have.get("spec") == want["spec"]


async def remove_catalog(remote: ControlPlane) -> None:
    for template in await remote.list("ModuleTemplate", REMOTE_NAMESPACE, OURS):
        await remote.delete("ModuleTemplate", REMOTE_NAMESPACE, template["metadata"]["name"])
