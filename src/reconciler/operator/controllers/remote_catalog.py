"""The module catalog a remote cluster's users may choose from, copied into that cluster.

As the lifecycle manager's catalog sync: every ModuleReleaseMeta of the control plane's
catalog (the Kyma's namespace) is copied to `kyma-system` of the remote cluster with the
channels whose ModuleTemplate this Kyma may use, beside those ModuleTemplates; an older
template without a ModuleReleaseMeta is copied when it resolves on its own `spec.channel`.
Beta and internal modules are offered only when the Kyma carries the matching label, a
restricted module (`kymaSelector`) only to the Kymas it selects, and mandatory modules never
(no user picks them: every Kyma has them). Copies are labelled `managed-by: kyma-operator`;
copies no longer offered are deleted. Only differences are written.

Under a rollout policy (`operator/rollout/`) a channel's copy names the version this Kyma gets
now (`choose`), and the template copied is that version's: a Kyma its wave still holds sees the
version it runs, not the one the channel is rolling out.
"""

from __future__ import annotations

from typing import Any

from reconciler.model.kube_object import Body
from reconciler.model.lifecycle import (
    API_VERSION,
    MANAGED_BY,
    MANAGER,
    MODULE_NAME,
    Module,
)
from reconciler.operator.catalog.resolve import CatalogError, Choose, resolve
from reconciler.operator.clusters.control import ControlPlane

REMOTE_NAMESPACE = "kyma-system"
OURS = f"{MANAGED_BY}={MANAGER}"
CATALOG_KINDS = ("ModuleReleaseMeta", "ModuleTemplate")


def offered(
    kyma: Body, metas: list[Body], templates: list[Body], choose: Choose | None = None
) -> dict[str, Body]:
    """Template name -> the control plane's ModuleTemplate the Kyma's cluster may use."""
    return offered_catalog(kyma, metas, templates, choose)[1]


def offered_catalog(
    kyma: Body, metas: list[Body], templates: list[Body], choose: Choose | None = None
) -> tuple[dict[str, Body], dict[str, Body]]:
    """What the Kyma's cluster is offered: ModuleReleaseMetas (by name, with only the channels
    it may use, each at the version `choose` gives this Kyma) and ModuleTemplates (by name)."""
    labels = kyma["metadata"].get("labels") or {}
    by_name = {t["metadata"]["name"]: t for t in templates}

    def template_on(module: str, channel: str) -> str | None:
        """The template the Kyma's module gets on a channel; None: not offered there."""
        try:
            module_entry = Module(name=module, channel=channel)
            found = resolve(
                module_entry, channel, metas, templates, kyma_labels=labels, choose=choose
            )
        except CatalogError:
            return None  # not on this channel, or not for this Kyma
        return found.template

    released: dict[str, Body] = {}
    wanted: dict[str, Body] = {}
    for meta in metas:
        spec = meta.get("spec") or {}
        module = str(spec.get("moduleName") or "")
        if not module or spec.get("mandatory") or meta["metadata"].get("deletionTimestamp"):
            continue
        channels = []
        for entry in spec.get("channels") or []:
            entry = dict(entry or {})
            name = template_on(module, str(entry.get("channel") or ""))
            if name is not None:
                version = (by_name[name].get("spec") or {}).get("version")
                channels.append({**entry, "version": version or entry.get("version")})
                wanted[name] = by_name[name]
        if channels:
            released[meta["metadata"]["name"]] = {**meta, "spec": {**spec, "channels": channels}}
    modules_released = {str((m.get("spec") or {}).get("moduleName") or "") for m in metas}
    for template in templates:
        spec = template.get("spec") or {}
        module = str(spec.get("moduleName") or "") or str(
            (template["metadata"].get("labels") or {}).get(MODULE_NAME) or ""
        )
        channel = str(spec.get("channel") or "")
        if not module or not channel or module in modules_released:
            continue
        if template_on(module, channel) == template["metadata"]["name"]:
            wanted[template["metadata"]["name"]] = template
    return released, wanted


def _copy(kind: str, source: Body) -> Body:
    labels = dict(source["metadata"].get("labels") or {})
    labels[MANAGED_BY] = MANAGER
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": {
            "name": source["metadata"]["name"],
            "namespace": REMOTE_NAMESPACE,
            "labels": labels,
        },
        "spec": source.get("spec") or {},
    }


async def sync_catalog(
    control: ControlPlane, remote: ControlPlane, kyma: Body, choose: Choose | None = None
) -> int:
    """Bring the remote copies in line; return how many objects were written or deleted."""
    namespace = kyma["metadata"]["namespace"]
    metas = await control.list("ModuleReleaseMeta", namespace)
    templates = await control.list("ModuleTemplate", namespace)
    released, offered_templates = offered_catalog(kyma, metas, templates, choose)
    changes = 0
    for kind, sources in zip(CATALOG_KINDS, (released, offered_templates), strict=True):
        wanted = {name: _copy(kind, body) for name, body in sources.items()}
        existing = {
            t["metadata"]["name"]: t for t in await remote.list(kind, REMOTE_NAMESPACE, OURS)
        }
        for name, body in wanted.items():
            have = existing.get(name)
            if have is None or not _same(have, body):
                await remote.apply(body)
                changes += 1
        for name in existing.keys() - wanted.keys():
            await remote.delete(kind, REMOTE_NAMESPACE, name)
            changes += 1
    return changes


def _same(have: Body, want: Body) -> bool:
    labels = have["metadata"].get("labels") or {}
    same_labels = all(labels.get(k) == v for k, v in want["metadata"]["labels"].items())
    return same_labels and _within(want["spec"], have.get("spec"))


def _within(want: Any, have: Any) -> bool:
    """`want` is in `have` (the apiserver adds CRD defaults, e.g. `beta: false`)."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(_within(v, have.get(k)) for k, v in want.items())
    return bool(want == have)


async def remove_catalog(remote: ControlPlane, kinds: tuple[str, ...] = CATALOG_KINDS) -> None:
    for kind in kinds:
        for copy in await remote.list(kind, REMOTE_NAMESPACE, OURS):
            await remote.delete(kind, REMOTE_NAMESPACE, copy["metadata"]["name"])
