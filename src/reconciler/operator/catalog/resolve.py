"""Catalog resolution: which ModuleTemplate (and so which version and source) a Kyma's module
gets on its channel.

ModuleReleaseMeta of the module: channel -> version; then the ModuleTemplate of that module
and version. Without a ModuleReleaseMeta, the older way: the ModuleTemplate whose
`spec.channel` is the channel. The module's source is the template's `chart` or `rawManifest`
resource, else the raw-manifest resource of its OCM descriptor. Every failure is a
`CatalogError` whose message says what is missing, for the Kyma's status.

Beta and internal modules (ModuleReleaseMeta `spec.beta` / `spec.internal`, or, as older
catalogs say it, the ModuleTemplate's label `operator.kyma-project.io/beta` / `internal` set to
"true") are offered only to a Kyma carrying the same label set to "true", as the lifecycle
manager does; any other Kyma gets a `CatalogError` naming the label it lacks. A
ModuleReleaseMeta with a `kymaSelector` (a restricted module) is offered only to Kymas whose
labels it selects.

Mandatory modules (ModuleReleaseMeta `spec.mandatory.version`, or, older, a ModuleTemplate with
`spec.mandatory: true` and no ModuleReleaseMeta) go to every Kyma at that version, whatever its
channel and whether it lists them (`mandatory_modules`); an older mandatory template is never
what a listed module resolves to, as the lifecycle manager refuses it there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from reconciler.errors import ReconcilerError
from reconciler.model.kube_object import Body
from reconciler.model.lifecycle import (
    GROUP,
    MODULE_NAME,
    Manager,
    Module,
    ModuleReleaseMetaSpec,
    ModuleTemplateSpec,
)
from reconciler.operator.catalog.sources import descriptor_source

SOURCE_KINDS = {"chart": "helm-chart", "rawManifest": "raw-manifest"}
MANDATORY_MODULE = f"{GROUP}/mandatory-module"
"""Label `"true"` on the Manifest of a mandatory module."""
BETA = f"{GROUP}/beta"
INTERNAL = f"{GROUP}/internal"
"""Labels of a Kyma (and, in older catalogs, of a ModuleTemplate): "true" enables."""


Choose = Callable[[str, str, str], str]
"""(module, channel, the channel's version) -> the version this Kyma gets now: a rollout policy
(`operator/rollout/`) holds a Kyma on its installed version until its wave is admitted."""


class CatalogError(ReconcilerError):
    """A module cannot be resolved to a usable ModuleTemplate."""


@dataclass(frozen=True)
class Resolved:
    module: str
    channel: str
    version: str
    template: str
    """The ModuleTemplate's name."""
    install: str
    """`chart` or `rawManifest`: the template resource that holds the module."""
    source_type: str
    link: str
    resource: dict[str, Any] | None
    manager: Manager | None


def _module_of(template: Body) -> str:
    spec = template.get("spec") or {}
    labels = template.get("metadata", {}).get("labels") or {}
    return str(spec.get("moduleName") or labels.get(MODULE_NAME) or "")


def _template_spec(template: Body) -> ModuleTemplateSpec:
    name = template["metadata"]["name"]
    try:
        return ModuleTemplateSpec.model_validate(template.get("spec") or {})
    except ValidationError as exc:
        first = exc.errors(include_input=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise CatalogError(f"ModuleTemplate {name}: spec.{where}: {first['msg']}") from None


def _enabled(labels: Mapping[str, str] | None, label: str) -> bool:
    return str((labels or {}).get(label, "")).lower() == "true"


def _check_audience(
    module: str,
    release: ModuleReleaseMetaSpec | None,
    template: Body | None,
    kyma_labels: Mapping[str, str] | None,
) -> None:
    """Refuse a beta or internal module to a Kyma without the matching label (internal first,
    as the lifecycle manager checks)."""
    labels = (template or {}).get("metadata", {}).get("labels") or {}
    flags = (
        ("internal", INTERNAL, release is not None and bool(release.internal)),
        ("beta", BETA, release is not None and bool(release.beta)),
    )
    for flag, label, released_as in flags:
        if (released_as or _enabled(labels, label)) and not _enabled(kyma_labels, label):
            raise CatalogError(
                f"module {module} is {flag}: offered only to Kymas labelled {label}=true"
            )
    selector = release.kyma_selector if release is not None else None
    if selector is not None and not selector.selects(kyma_labels or {}):
        raise CatalogError(
            f"module {module} is restricted: offered only to Kymas its kymaSelector selects"
        )


def version_key(version: str) -> tuple[tuple[int, int | str], ...]:
    """Semantic-version order (numbers as numbers): what a downgrade check compares."""
    core, _, pre = version.lstrip("v").partition("-")
    parts = [(0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"[.+]", core)]
    return (*parts, (1, "~") if not pre else (0, pre))  # a release sorts after its pre-releases


def resolve(
    module: Module,
    kyma_channel: str,
    metas: list[Body],
    templates: list[Body],
    *,
    kyma_labels: Mapping[str, str] | None = None,
    choose: Choose | None = None,
) -> Resolved:
    """The template a Kyma's module gets. `kyma_labels` are the Kyma's labels (None: it has
    none, so beta and internal modules are refused); `choose` may replace a ModuleReleaseMeta's
    version by another (a rollout's decision)."""
    channel = module.channel or kyma_channel
    candidates = [t for t in templates if _module_of(t) == module.name]
    meta = next((m for m in metas if (m.get("spec") or {}).get("moduleName") == module.name), None)
    if meta is not None:
        release = ModuleReleaseMetaSpec.model_validate(meta["spec"])
        _check_audience(module.name, release, None, kyma_labels)
        versions = {c.channel: c.version for c in release.channels or []}
        if release.mandatory is not None:
            versions = {channel: release.mandatory.version}  # mandatory: one version for all
        if channel not in versions:
            raise CatalogError(
                f"module {module.name} has no version on channel {channel} "
                f"(ModuleReleaseMeta {meta['metadata']['name']} lists: "
                f"{', '.join(sorted(versions)) or 'none'})"
            )
        version = versions[channel]
        if choose is not None:
            version = choose(module.name, channel, version)
        template = next((t for t in candidates if _template_spec(t).version == version), None)
        if template is None:
            raise CatalogError(f"no ModuleTemplate for module {module.name} version {version}")
    else:
        template = next(
            (
                t
                for t in candidates
                if _template_spec(t).channel == channel and not _template_spec(t).mandatory
            ),
            None,
        )
        if template is None:
            raise CatalogError(
                f"module {module.name}: no ModuleReleaseMeta and no ModuleTemplate on channel "
                f"{channel}"
            )
    _check_audience(module.name, None, template, kyma_labels)
    return _resolved(module.name, channel, template)


def _resolved(module: str, channel: str, template: Body) -> Resolved:
    spec = _template_spec(template)
    name = template["metadata"]["name"]
    found = [(r.name, r.link) for r in spec.resources or [] if r.name in SOURCE_KINDS]
    described = descriptor_source(spec.descriptor)
    if not found and described is not None:
        found = [described]
    if not found:
        raise CatalogError(
            f"ModuleTemplate {name}: spec.resources has no `chart` or `rawManifest` link "
            "and spec.descriptor no raw-manifest resource"
        )
    if not spec.version:
        raise CatalogError(f"ModuleTemplate {name}: spec.version is empty")
    return Resolved(
        module=module,
        channel=channel,
        version=spec.version,
        template=name,
        install=found[0][0],
        source_type=SOURCE_KINDS[found[0][0]],
        link=found[0][1],
        resource=spec.data or None,
        manager=spec.manager,
    )


def mandatory_modules(metas: list[Body], templates: list[Body]) -> tuple[list[Resolved], list[str]]:
    """The mandatory modules every Kyma gets, and why others marked mandatory cannot be
    resolved (for the log: they concern no single Kyma). A ModuleReleaseMeta being deleted
    no longer counts."""
    found: list[Resolved] = []
    problems: list[str] = []
    released: set[str] = set()
    for meta in metas:
        spec = meta.get("spec") or {}
        released.add(str(spec.get("moduleName") or ""))
        if not spec.get("mandatory") or meta["metadata"].get("deletionTimestamp"):
            continue
        try:
            release = ModuleReleaseMetaSpec.model_validate(spec)
            version = release.mandatory.version if release.mandatory else ""
            template = next(
                (
                    t
                    for t in templates
                    if _module_of(t) == release.module_name and _template_spec(t).version == version
                ),
                None,
            )
            if template is None:
                raise CatalogError(
                    f"no ModuleTemplate for mandatory module {release.module_name} "
                    f"version {version}"
                )
            found.append(_resolved(release.module_name, "", template))
        except (CatalogError, ValidationError) as exc:
            problems.append(str(exc))
    older: dict[str, Body] = {}
    for template in templates:
        module = _module_of(template)
        if module in released or not (template.get("spec") or {}).get("mandatory"):
            continue
        have = older.get(module)
        version = str((template.get("spec") or {}).get("version") or "")
        if have is None or version_key(version) > version_key(str(have["spec"].get("version"))):
            older[module] = template
    for module, template in sorted(older.items()):
        try:
            found.append(_resolved(module, "", template))
        except CatalogError as exc:
            problems.append(str(exc))
    return sorted(found, key=lambda r: r.module), problems
