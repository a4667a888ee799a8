"""The Kyma controller: each module through the catalog to one Manifest, module states back into
the Kyma's status.

Per module: resolve (ModuleReleaseMeta channel -> version -> ModuleTemplate), refuse a
downgrade, apply the Manifest (owner reference to the Kyma, the lifecycle manager's labels).
Manifests of modules no longer listed are deleted; a module with `managed: false` gets its
Manifest marked unmanaged and deleted, which leaves the module installed. The Kyma's state is
Error > Warning > Processing > Ready of its modules. Deleting a Kyma deletes its Manifests and
waits for them (finalizer `operator.kyma-project.io/Kyma`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from reconciler.errors import KubeApiError, ReconcilerError
from reconciler.model.kube_object import Body, KubeObject
from reconciler.model.lifecycle import (
    API_VERSION,
    CHANNEL,
    GROUP,
    KYMA_FINALIZER,
    KYMA_NAME,
    MANAGED_BY,
    MODULE_NAME,
    SKIP_RECONCILIATION,
    SYNC,
    UNMANAGED,
    UNMANAGED_ANNOTATION,
    CustomResourcePolicy,
    KymaSpec,
    Module,
    State,
    kyma_of,
    module_object_name,
)
from reconciler.observability.logging import get_logger, log_state_change
from reconciler.operator.catalog.resolve import (
    MANDATORY_MODULE,
    CatalogError,
    Resolved,
    mandatory_modules,
    resolve,
    version_key,
)
from reconciler.operator.clusters.control import ControlPlane
from reconciler.operator.clusters.fleet import FleetIndex
from reconciler.operator.controllers.status import aggregate, condition, last_operation
from reconciler.operator.metrics import OperatorMetrics
from reconciler.operator.rollout.index import RolloutIndex
from reconciler.operator.settings import OperatorSettings
from reconciler.util.backoff import Backoff


def manifest_name(kyma: str, module: str) -> str:
    """A new Manifest's name (`model/lifecycle.py`); an existing one keeps its own."""
    return module_object_name(kyma, module)


LM_MANAGER = "lifecycle-manager"
"""`MANAGED_BY` on the Manifests, as the lifecycle manager labels them."""
OCM_COMPONENT_NAME = f"{GROUP}/ocm-component-name"
FQDN = f"{GROUP}/fqdn"
"""The module's OCM component name, under the lifecycle manager's deprecated key too."""


def _tracking(
    kind: str, namespace: str, name: str, generation: int | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if generation is not None:
        meta["generation"] = generation
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": meta}


def ocm_component_name(templates: list[Body], name: str) -> str:
    """The OCM component name of the ModuleTemplate `name` (its descriptor's), "" without."""
    for body in templates:
        template = KubeObject(body)
        if template.name == name:
            descriptor = (template.raw.get("spec") or {}).get("descriptor") or {}
            return str((descriptor.get("component") or {}).get("name") or "")
    return ""


class KymaController:
    def __init__(
        self,
        control: ControlPlane,
        settings: OperatorSettings,
        metrics: OperatorMetrics | None = None,
        fleet: FleetIndex | None = None,
        rollouts: RolloutIndex | None = None,
    ) -> None:
        self.metrics = metrics or OperatorMetrics()
        self.rollouts = rollouts
        """Which version each Kyma gets while a release rolls out (None: the channel's)."""
        self.fleet = fleet
        """Where the Kymas' Manifests are known from events (else each reconcile LISTs them)."""
        self.control = control
        self.settings = settings
        self.backoff = Backoff(settings.error_interval, settings.error_max_interval)
        self.catalog: Probe | None = None
        """Whether the Kyma's catalog was copied to its remote cluster (the remote sync's)."""
        self.crds: Probe | None = None
        """Whether our CRDs are installed on its remote cluster (the remote sync's)."""
        self.webhook: Probe | None = None
        """Whether the watcher's webhook is in place there (set when the watcher is on)."""

    async def handle(self, namespace: str, name: str) -> float | None:
        kyma = await self.control.get("Kyma", namespace, name)
        if kyma is None:
            self.backoff.forget((namespace, name))
            return None
        if kyma["metadata"].get("labels", {}).get(SKIP_RECONCILIATION) == "true":
            return None
        log = get_logger(kyma=name, namespace=namespace)
        try:
            if kyma["metadata"].get("deletionTimestamp"):
                return await self._delete(kyma)
            await self.control.set_finalizer(kyma, KYMA_FINALIZER, True)
            return await self._reconcile(kyma)
        except (ReconcilerError, ValidationError) as exc:
            log.warning("kyma failed", error=str(exc))
            await self._set(kyma, State.ERROR, str(exc), (kyma.get("status") or {}).get("modules"))
            return self.backoff.next((namespace, name))

    async def _manifests(self, kyma: Body, *, fresh: bool = False) -> dict[str, Body]:
        """The Kyma's Manifests by module: from the fleet index, or (`fresh`: deletion waits
        for them to be gone, which a lagging index must not fake) the apiserver."""
        meta = kyma["metadata"]
        if self.fleet is not None and not fresh:
            items = self.fleet.manifests(meta["namespace"], meta["name"])
        else:
            items = await self.control.list(
                "Manifest", meta["namespace"], f"{KYMA_NAME}={meta['name']}"
            )
        return {str(m["metadata"].get("labels", {}).get(MODULE_NAME, "")): m for m in items}

    async def _catalog(
        self, namespace: str, *, fresh: bool = False
    ) -> tuple[list[Body], list[Body], bool]:
        """ModuleReleaseMetas and ModuleTemplates of the namespace, and whether they came from
        the fleet index (watched; no request) rather than the apiserver."""
        if self.fleet is not None and not fresh:
            metas = self.fleet.catalog(namespace, "ModuleReleaseMeta")
            templates = self.fleet.catalog(namespace, "ModuleTemplate")
            if metas is not None and templates is not None:
                return metas, templates, True
        metas = await self.control.list("ModuleReleaseMeta", namespace)
        templates = await self.control.list("ModuleTemplate", namespace)
        return metas, templates, False

    async def _current(self, kyma: Body, module: str, known: dict[str, Body]) -> Body | None:
        """The module's Manifest; one the index has not seen yet (just created, or the index
        is still filling at start) is read, so it is neither re-applied nor shown as missing."""
        if module in known or self.fleet is None:
            return known.get(module)
        meta = kyma["metadata"]
        return await self.control.get(
            "Manifest", meta["namespace"], manifest_name(meta["name"], module)
        )

    async def _reconcile(self, kyma: Body) -> float:
        meta = kyma["metadata"]
        namespace = meta["namespace"]
        spec = KymaSpec.model_validate(kyma.get("spec") or {})
        metas, templates, indexed = await self._catalog(namespace)
        labels = meta.get("labels") or {}
        existing = await self._manifests(kyma)
        choose = None
        if self.rollouts is not None:
            installed = {
                k: str((m.get("spec") or {}).get("version") or "") for k, m in existing.items()
            }
            choose = self.rollouts.for_kyma(namespace, meta["name"], labels, installed)
        modules: list[dict[str, Any]] = []
        wanted = {m.name for m in spec.modules or []}
        mandatory, problems = mandatory_modules(metas, templates)
        always = {r.module for r in mandatory}  # a user cannot give these up either
        for module in spec.modules or []:
            current = await self._current(kyma, module.name, existing)
            if not module.managed and module.name not in always:
                if current is not None:
                    await self._release(current)
                modules.append({"name": module.name, "state": str(State.UNMANAGED)})
                continue
            try:
                args = (module, spec.channel)
                try:
                    resolved = resolve(*args, metas, templates, kyma_labels=labels, choose=choose)
                except CatalogError:
                    if not indexed:
                        raise
                    # the index may lag an event (a template and its release meta arrive on
                    # different watches): ask the apiserver once
                    metas, templates, indexed = await self._catalog(namespace, fresh=True)
                    resolved = resolve(*args, metas, templates, kyma_labels=labels, choose=choose)
                back = choose is not None and module.name in choose.rollback
                component = ocm_component_name(templates, resolved.template)
                manifest = await self._ensure_manifest(
                    kyma, module, resolved, current, component, rollback=back
                )
            except CatalogError as exc:
                modules.append(
                    {
                        "name": module.name,
                        "state": str(State.ERROR),
                        "message": str(exc),
                        "channel": module.channel or spec.channel,
                    }
                )
                continue
            modules.append(self._module_status(module, resolved, manifest, component))
        await self._mandatory(kyma, (mandatory, problems), templates, existing, wanted)
        for module_name, manifest in existing.items():
            if module_name not in wanted and not manifest["metadata"].get("deletionTimestamp"):
                await self.control.delete("Manifest", namespace, manifest["metadata"]["name"])
        gone = [m for name, m in existing.items() if name not in wanted]
        for manifest in gone:  # still being removed: shown until its finalizer is done
            entry = {
                "name": manifest["metadata"]["labels"].get(MODULE_NAME, ""),
                "state": str(State.DELETING),
                "manifest": _tracking("Manifest", namespace, manifest["metadata"]["name"]),
            }
            waits = ((manifest.get("status") or {}).get("lastOperation") or {}).get("operation")
            if waits:  # what its removal waits for ("waiting for module crs deletion: ...")
                entry["message"] = waits
            modules.append(entry)
        state = aggregate(m["state"] for m in modules)
        message = (
            "all modules are ready" if state is State.READY else _first_problem(modules, state)
        )
        await self._set(kyma, state, message, modules, channel=spec.channel)
        if state is State.ERROR:
            return self.backoff.next((namespace, meta["name"]))
        self.backoff.forget((namespace, meta["name"]))
        if state is State.WARNING:
            return self.settings.warning_interval
        # Ready, or Processing: waiting for Manifests, each of whose changes requeues the Kyma
        # (`runtime.py`), so its timer is only the safety net. A busy timer here made 1,000
        # installing Kymas 1,000 reconciles a second, starving the Manifests they waited for.
        return self.settings.success_interval

    async def _mandatory(
        self,
        kyma: Body,
        catalog_mandatory: tuple[list[Resolved], list[str]],
        templates: list[Body],
        existing: dict[str, Body],
        wanted: set[str],
    ) -> None:
        """Mandatory modules, as the lifecycle manager's mandatory-module controller: a
        Manifest (labelled `mandatory-module`) on every Kyma whether it lists them or not, not
        shown in its status and never removed (nor unmanaged) by its user; gone when the catalog
        drops them."""
        found, problems = catalog_mandatory
        if problems:
            get_logger(kyma=kyma["metadata"]["name"]).warning(
                "mandatory modules not installed", problems="; ".join(problems)[:2048]
            )
        for resolved in found:
            if resolved.module in wanted:
                continue  # listed as well: installed above, at the mandatory version
            wanted.add(resolved.module)
            current = await self._current(kyma, resolved.module, existing)
            try:
                await self._ensure_manifest(
                    kyma,
                    Module(name=resolved.module),
                    resolved,
                    current,
                    ocm_component_name(templates, resolved.template),
                    mandatory=True,
                )
            except CatalogError as exc:
                get_logger(kyma=kyma["metadata"]["name"]).warning(
                    "mandatory module not installed", module=resolved.module, error=str(exc)
                )

    async def _ensure_manifest(
        self,
        kyma: Body,
        module: Module,
        resolved: Resolved,
        current: Body | None,
        component: str,
        *,
        mandatory: bool = False,
        rollback: bool = False,
    ) -> Body:
        """`rollback`: a rollout policy sends the module back to an older version."""
        meta = kyma["metadata"]
        if current is not None and not rollback:
            have = str((current.get("spec") or {}).get("version") or "")
            if have and version_key(resolved.version) < version_key(have):
                raise CatalogError(
                    f"module {module.name}: channel {resolved.channel} offers {resolved.version}, "
                    f"older than the installed {have}; downgrades are refused"
                )
        policy = module.custom_resource_policy or CustomResourcePolicy.CREATE_AND_DELETE
        spec: dict[str, Any] = {
            "remote": meta.get("labels", {}).get(SYNC) != "false",
            "version": resolved.version,
            "install": {
                "name": resolved.install,
                "source": {"type": resolved.source_type, "url": resolved.link},
            },
            "customResourcePolicy": str(policy),
        }
        if resolved.resource:
            spec["resource"] = resolved.resource
        if resolved.manager is not None:
            spec["manager"] = resolved.manager.dump()
        labels = {
            KYMA_NAME: meta["name"],
            MODULE_NAME: module.name,
            CHANNEL: resolved.channel,
            MANAGED_BY: LM_MANAGER,
        }
        if mandatory:
            labels[MANDATORY_MODULE] = "true"
            del labels[CHANNEL]  # a mandatory module has one version on every channel
        annotations = {OCM_COMPONENT_NAME: component, FQDN: component} if component else {}
        marks = {"labels": labels, "annotations": annotations}
        have_labels = (current or {}).get("metadata", {}).get("labels") or {}
        same_labels = (MANDATORY_MODULE in have_labels) == mandatory
        if (
            current is not None
            and same_labels
            and _contains(current, {"metadata": marks, "spec": spec})
        ):
            return current
        body = {
            "apiVersion": API_VERSION,
            "kind": "Manifest",
            "metadata": {
                "name": (
                    current["metadata"]["name"]  # found by its labels: adopted, whatever its name
                    if current is not None
                    else manifest_name(meta["name"], module.name)
                ),
                "namespace": meta["namespace"],
                **marks,
                "ownerReferences": [
                    {
                        "apiVersion": API_VERSION,
                        "kind": "Kyma",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": spec,
        }
        have = str(((current or {}).get("spec") or {}).get("version") or "")
        if current is not None and have != resolved.version and self._rolled_out(kyma, module):
            await self._switching(current, resolved.version)
        return await self.control.apply(body)

    def _rolled_out(self, kyma: Body, module: Module) -> bool:
        """Whether a rollout policy watches the module's health (`operator/rollout/`)."""
        namespace = kyma["metadata"]["namespace"]
        return self.rollouts is not None and bool(self.rollouts.policy_for(namespace, module.name))

    async def _switching(self, manifest: Body, version: str) -> None:
        """Before a Manifest gets a new version: its `Ready` is the old version's, which a
        rollout's gate must not count. Its state goes `Processing` first (status-only: no
        Manifest run for it), then the spec changes, whose run reports on the new version.
        Guarded by the resourceVersion (a lagging index's copy is read again once)."""
        status = {
            "state": str(State.PROCESSING),
            "lastOperation": last_operation({}, f"switching to version {version}"),
        }
        meta = manifest["metadata"]
        for _ in range(2):
            patch = {"metadata": {"resourceVersion": meta["resourceVersion"]}, "status": status}
            try:
                await self.control.patch(
                    "Manifest", meta["namespace"], meta["name"], patch, status=True
                )
                return
            except KubeApiError as exc:
                if exc.status != 409:
                    raise
            fresh = await self.control.get("Manifest", meta["namespace"], meta["name"])
            if fresh is None:
                return
            meta = fresh["metadata"]

    def _module_status(
        self, module: Module, resolved: Resolved, manifest_body: Body, component: str
    ) -> dict[str, Any]:
        """As the lifecycle manager writes a module's entry: its OCM component name (and the
        deprecated `fqdn`), and `resource` only for a default resource we create (policy
        `CreateAndDelete`), with the namespace it is created in."""
        manifest = KubeObject(manifest_body)
        status = manifest.raw.get("status") or {}
        entry: dict[str, Any] = {"name": module.name}
        if component:
            entry["fqdn"] = entry["ocmComponentName"] = component
        entry |= {
            "channel": resolved.channel,
            "version": resolved.version,
            "state": str(status.get("state") or State.PROCESSING),
            "manifest": _tracking(
                "Manifest", manifest.namespace, manifest.name, manifest.metadata.get("generation")
            ),
            "template": _tracking("ModuleTemplate", manifest.namespace, resolved.template),
        }
        message = (status.get("lastOperation") or {}).get("operation")
        if message and entry["state"] != State.READY:
            entry["message"] = message
        policy = (manifest.raw.get("spec") or {}).get("customResourcePolicy")
        if resolved.resource and policy != CustomResourcePolicy.IGNORE:
            resource = KubeObject(dict(resolved.resource))
            namespace = resource.namespace or self.settings.module_namespace.replace(
                "{kyma}", kyma_of(manifest_body)
            )
            entry["resource"] = {
                "apiVersion": resource.api_version,
                "kind": resource.kind,
                "metadata": {"name": resource.name, "namespace": namespace},
            }
        return entry

    async def _release(self, manifest: Body) -> None:
        """Give a module up without uninstalling it (`managed: false`)."""
        meta = manifest["metadata"]
        marked = KubeObject(manifest)
        if (
            marked.labels.get(UNMANAGED) != "true"
            or marked.annotations.get(UNMANAGED_ANNOTATION) != "true"
        ):
            await self.control.patch(
                "Manifest",
                meta["namespace"],
                meta["name"],
                {
                    "metadata": {
                        "labels": {UNMANAGED: "true"},
                        "annotations": {UNMANAGED_ANNOTATION: "true"},
                    }
                },
            )
        if not meta.get("deletionTimestamp"):
            await self.control.delete("Manifest", meta["namespace"], meta["name"])

    async def _delete(self, kyma: Body) -> float | None:
        meta = kyma["metadata"]
        if KYMA_FINALIZER not in (meta.get("finalizers") or []):
            return None
        existing = await self._manifests(kyma, fresh=True)
        for manifest in existing.values():
            if not manifest["metadata"].get("deletionTimestamp"):
                await self.control.delete(
                    "Manifest", meta["namespace"], manifest["metadata"]["name"]
                )
        if existing:
            modules = (kyma.get("status") or {}).get("modules")
            names = ", ".join(sorted(existing))
            await self._set(
                kyma, State.DELETING, f"waiting for the modules to be removed: {names}", modules
            )
            return self.settings.busy_interval
        await self.control.set_finalizer(kyma, KYMA_FINALIZER, False)
        self.backoff.forget((meta["namespace"], meta["name"]))
        self.metrics.forget_kyma(meta["namespace"], meta["name"])
        return None

    def _condition_values(
        self, kyma: Body, modules: list[dict[str, Any]] | None
    ) -> dict[str, bool | None]:
        """`CRDsSync`: our CRDs installed on the remote cluster; `Modules`: every module Ready
        (or Unmanaged); `ModuleCatalog`: the catalog copied to the remote cluster (a Kyma without
        one has nothing to install or copy); `SKRWebhook` (with the watcher): its webhook in
        place there. In the lifecycle manager's order."""
        obj = KubeObject(kyma)
        states = [str(m.get("state")) for m in modules or []]
        remote = obj.labels.get(SYNC) != "false"
        values: dict[str, bool | None] = {
            "CRDsSync": (self.crds(obj.namespace, obj.name) if self.crds else None)
            if remote
            else True,
            "Modules": all(s in (State.READY, State.UNMANAGED) for s in states),
        }
        values["ModuleCatalog"] = (
            (self.catalog(obj.namespace, obj.name) if self.catalog else None) if remote else True
        )
        if self.webhook is not None and remote:
            values["SKRWebhook"] = self.webhook(obj.namespace, obj.name)
        return values

    async def _set(
        self,
        kyma: Body,
        state: State,
        message: str,
        modules: list[dict[str, Any]] | None,
        *,
        channel: str | None = None,
    ) -> None:
        previous = kyma.get("status") or {}
        status: dict[str, Any] = {
            "state": str(state),
            "lastOperation": last_operation(previous, message),
        }
        if modules is not None:
            status["modules"] = modules
        active = channel or previous.get("activeChannel")
        if active:
            status["activeChannel"] = active
        status["conditions"] = _conditions(
            previous, self._condition_values(kyma, modules), kyma["metadata"].get("generation")
        )
        await self.control.set_status(kyma, status)
        module_states = {str(m["name"]): str(m["state"]) for m in modules or []}
        meta = kyma["metadata"]
        log = get_logger(kyma=meta["name"], namespace=meta["namespace"])
        log_state_change(log, "kyma", previous.get("state"), str(state), message)
        before = {str(m.get("name")): m.get("state") for m in previous.get("modules") or []}
        for module, module_state in module_states.items():
            log_state_change(log.bind(module=module), "module", before.get(module), module_state)
        self.metrics.set_kyma(meta["namespace"], meta["name"], str(state), module_states)
        reason = {State.ERROR: "error", State.WARNING: "warning", State.READY: "success"}
        self.metrics.requeues.labels("Kyma", reason.get(state, "busy")).inc()


Probe = Callable[[str, str], bool | None]
"""Whether a part of a Kyma's sync is in order (namespace, name); None: not known yet."""

# the lifecycle manager's Kyma conditions: type -> (message when True, False, Unknown); the
# reason is always "Ready", the status says whether it is
KYMA_CONDITIONS = {
    "CRDsSync": (
        "CRDs are synchronized to the SKR",
        "CRDs are not synchronized to the SKR",
        "CRDs synchronization state is unknown",
    ),
    "Modules": (
        "all modules are in ready state",
        "not all modules are in ready state",
        "modules state is unknown",
    ),
    "ModuleCatalog": (
        "module templates are synchronized",
        "module templates are out of sync and need to be resynchronized",
        "module templates synchronization state is unknown",
    ),
    "SKRWebhook": (
        "skrwebhook is synchronized",
        "skrwebhook is out of sync and needs to be resynchronized",
        "no detailed message available as condition or status is unknown to API",
    ),
}


def _conditions(
    previous: Body, values: dict[str, bool | None], generation: int | None
) -> list[dict[str, Any]]:
    """The lifecycle manager's conditions of a Kyma (those in `values`), with its messages;
    conditions of other types are kept."""
    have = {c.get("type"): c for c in previous.get("conditions") or []}
    result = []
    for kind, value in values.items():
        yes, no, unknown = KYMA_CONDITIONS[kind]
        message = yes if value else unknown if value is None else no
        result.append(condition(have.get(kind), kind, value, "Ready", message, generation))
    return result + [c for kind, c in have.items() if kind not in KYMA_CONDITIONS]


def _first_problem(modules: list[dict[str, Any]], state: State) -> str:
    for module in modules:
        if module["state"] == state or (
            state is State.PROCESSING and module["state"] == State.DELETING
        ):
            detail = module.get("message") or str(state).lower()
            return f"module {module['name']}: {detail}"
    return str(state)


def _contains(have: Any, want: Any) -> bool:
    """Whether `have` already holds everything `want` sets (extra fields are someone else's)."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(_contains(have.get(k), v) for k, v in want.items())
    return bool(have == want)
