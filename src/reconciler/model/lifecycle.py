"""The lifecycle manager's resources as pydantic models: the one source of the CRDs we install
(`operator/clusters/crds.py`) and of how the controllers read and write them.

Field names, states, labels and finalizers are those of Kyma's lifecycle manager (group
`operator.kyma-project.io`, version `v1beta2`), so existing resources work unchanged. Unknown
fields are ignored on read (a newer resource still parses); what we do not model is kept by the
CRDs as long as it lives under a field marked "preserve unknown fields".
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, JsonValue

from reconciler.model.kube_object import Body, KubeObject
from reconciler.model.resource import Condition, ResourceModel

GROUP = "operator.kyma-project.io"
VERSION = "v1beta2"
API_VERSION = f"{GROUP}/{VERSION}"

KYMA_NAME = f"{GROUP}/kyma-name"
MODULE_NAME = f"{GROUP}/module-name"


def module_object_name(kyma: str, module: str) -> str:
    """Name of a Kyma's Manifest and ModuleConfig for a module: `<kyma>-<module>-<hash>`, the
    hash (8 hex digits of sha256 over `kyma/module`) telling apart pairs whose plain join is the
    same (`t` + `api-gw`, `t-api` + `gw`); stable, at most 253 characters. Objects are found by
    their labels (`KYMA_NAME`, `MODULE_NAME`), never by this name, so ones named otherwise
    (`<kyma>-<module>`, before) are adopted."""
    digest = hashlib.sha256(f"{kyma}/{module}".encode()).hexdigest()[:8]
    prefix = f"{kyma}-{module}"[: 253 - len(digest) - 1].rstrip("-.")
    return f"{prefix}-{digest}"


CHANNEL = f"{GROUP}/channel"
MANAGED_BY = f"{GROUP}/managed-by"
SKIP_RECONCILIATION = f"{GROUP}/skip-reconciliation"
SYNC = f"{GROUP}/sync"
"""`"false"` on a Kyma: its modules go to the cluster the operator runs in, not a remote one."""
UNMANAGED = f"{GROUP}/unmanaged"
"""Set on a Manifest the Kyma gives up (`managed: false`): deleting it leaves the module."""
UNMANAGED_ANNOTATION = f"{GROUP}/is-unmanaged"
"""The lifecycle manager's mark of the same (`"true"`), set beside `UNMANAGED`."""
MANAGER = "kyma-operator"
KYMA_FINALIZER = f"{GROUP}/Kyma"
MANIFEST_FINALIZER = "declarative.kyma-project.io/finalizer"
FIELD_MANAGER = "declarative.kyma-project.io/applier"


def kyma_of(body: Body) -> str:
    """The Kyma an object (Manifest, kubeconfig Secret, ModuleConfig, ...) belongs to: its
    `KYMA_NAME` label, "" when it has none."""
    return KubeObject(body).labels.get(KYMA_NAME, "")


PRESERVE: dict[str, JsonValue] = {"x-kubernetes-preserve-unknown-fields": True}


class State(enum.StrEnum):
    PROCESSING = "Processing"
    DELETING = "Deleting"
    READY = "Ready"
    ERROR = "Error"
    EMPTY = ""
    WARNING = "Warning"
    UNMANAGED = "Unmanaged"


class CustomResourcePolicy(enum.StrEnum):
    CREATE_AND_DELETE = "CreateAndDelete"
    IGNORE = "Ignore"


class LastOperation(ResourceModel):
    operation: str
    last_update_time: str | None = None


class PartialMeta(ResourceModel):
    name: str | None = None
    namespace: str | None = None
    generation: int | None = None


class TrackingObject(ResourceModel):
    """A reference to a related object, as Kyma's module status lists it."""

    api_version: str | None = None
    kind: str | None = None
    metadata: PartialMeta | None = None


class Manager(ResourceModel):
    group: str
    version: str
    kind: str
    name: str
    namespace: str | None = None


class LabelSelectorRequirement(ResourceModel):
    key: str
    operator: str
    values: list[str] | None = None


class LabelSelector(ResourceModel):
    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None

    def selects(self, labels: Mapping[str, str]) -> bool:
        """Kubernetes' label selector semantics: every term must hold (an empty selector
        matches everything); an unknown operator selects nothing."""
        for key, value in (self.match_labels or {}).items():
            if labels.get(key) != value:
                return False
        for term in self.match_expressions or []:
            present, values = term.key in labels, term.values or []
            match term.operator:
                case "In":
                    held = present and labels[term.key] in values
                case "NotIn":
                    held = not present or labels[term.key] not in values
                case "Exists":
                    held = present
                case "DoesNotExist":
                    held = not present
                case _:
                    held = False
            if not held:
                return False
        return True


# --- Kyma -------------------------------------------------------------------------------------


class Module(ResourceModel):
    name: str
    managed: bool = True
    channel: str | None = None
    controller: str | None = None
    custom_resource_policy: CustomResourcePolicy | None = None
    remote_module_template_ref: str | None = None


class KymaSpec(ResourceModel):
    channel: str
    modules: list[Module] | None = None
    skip_maintenance_windows: bool | None = None


class ModuleStatus(ResourceModel):
    name: str
    state: State
    channel: str | None = None
    version: str | None = None
    message: str | None = None
    fqdn: str | None = None
    maintenance: bool | None = None
    ocm_component_name: str | None = None
    manifest: TrackingObject | None = None
    template: TrackingObject | None = None
    resource: TrackingObject | None = None


class KymaStatus(ResourceModel):
    state: State | None = None
    active_channel: str | None = None
    conditions: list[Condition] | None = None
    last_operation: LastOperation | None = None
    modules: list[ModuleStatus] | None = None


# --- the catalog ------------------------------------------------------------------------------


class ChannelVersion(ResourceModel):
    channel: str
    version: str


class Mandatory(ResourceModel):
    version: str


class ModuleReleaseMetaSpec(ResourceModel):
    module_name: str
    channels: list[ChannelVersion] | None = None
    beta: bool | None = None
    internal: bool | None = None
    kyma_selector: LabelSelector | None = None
    mandatory: Mandatory | None = None
    ocm_component_name: str | None = None


class Resource(ResourceModel):
    """`rawManifest` (a YAML document stream) or `chart` (a Helm chart): where the module's
    objects come from (local path, http(s) URL, or `oci://` reference)."""

    name: str
    link: str


class AssociatedResource(ResourceModel):
    group: str
    version: str
    kind: str


class CustomStateCheck(ResourceModel):
    json_path: str
    value: str
    mapped_state: State


class Icon(ResourceModel):
    name: str
    link: str


class Info(ResourceModel):
    repository: str
    documentation: str
    icons: list[Icon] | None = None


class ModuleTemplateSpec(ResourceModel):
    descriptor: dict[str, Any] = Field(default_factory=dict, json_schema_extra=PRESERVE)
    module_name: str | None = None
    version: str | None = None
    channel: str | None = None
    data: dict[str, Any] | None = Field(default=None, json_schema_extra=PRESERVE)
    """The module's default custom resource."""
    resources: list[Resource] | None = None
    manager: Manager | None = None
    associated_resources: list[AssociatedResource] | None = None
    custom_state_check: list[CustomStateCheck] | None = None
    info: Info | None = None
    mandatory: bool | None = None
    requires_downtime: bool | None = None


# --- Manifest ---------------------------------------------------------------------------------


class InstallInfo(ResourceModel):
    name: str
    source: dict[str, Any] = Field(json_schema_extra=PRESERVE)
    """Ours: `{"type": "helm-chart" | "raw-manifest", "url": <link>}` (ImageSpec fields kept)."""


class ImageSpec(ResourceModel):
    name: str | None = None
    ref: str | None = None
    repo: str | None = None
    type: Literal["helm-chart", "oci-ref", "kustomize", ""] | None = None
    cred_secret_selector: LabelSelector | None = None


class ManifestSpec(ResourceModel):
    remote: bool
    install: InstallInfo
    version: str | None = None
    config: ImageSpec | None = None
    resource: dict[str, Any] | None = Field(default=None, json_schema_extra=PRESERVE)
    custom_resource_policy: CustomResourcePolicy | None = None
    manager: Manager | None = None
    localized_images: list[str] | None = None


class SyncedObject(ResourceModel):
    """One object the module installed (what a new version that drops it prunes).

    `group` and `namespace` are `""` for the core group and cluster-scoped objects, as the
    lifecycle manager writes them; an entry stored without them reads as `""`."""

    version: str
    kind: str
    name: str
    group: str = ""
    namespace: str = ""


class ManifestStatus(ResourceModel):
    state: State
    conditions: list[Condition] | None = None
    last_operation: LastOperation | None = None
    synced: list[SyncedObject] | None = None


# --- the kinds --------------------------------------------------------------------------------


class Kind:
    """What `crds.py` needs to know about one kind besides its models."""

    kind: ClassVar[str]
    plural: ClassVar[str]
    short_names: ClassVar[tuple[str, ...]] = ()
    spec: ClassVar[type[ResourceModel]]
    status: ClassVar[type[ResourceModel] | None] = None
    state_column: ClassVar[bool] = False
    defaults: ClassVar[tuple[tuple[str, JsonValue], ...]] = ()
    """The lifecycle manager's CRD defaults (`+kubebuilder:default`), by dotted schema path
    (`[]` steps into a list's items): the apiserver stores them, so an object reads the same
    under both operators."""


class KymaKind(Kind):
    kind, plural, spec, status, state_column = "Kyma", "kymas", KymaSpec, KymaStatus, True
    short_names = ("kyma",)
    defaults = (
        ("spec.modules[].managed", True),
        ("spec.modules[].customResourcePolicy", "CreateAndDelete"),
    )


class ModuleTemplateKind(Kind):
    kind, plural, spec = "ModuleTemplate", "moduletemplates", ModuleTemplateSpec
    short_names = ("mt",)


class ModuleReleaseMetaKind(Kind):
    kind, plural, spec = "ModuleReleaseMeta", "modulereleasemetas", ModuleReleaseMetaSpec
    short_names = ("mrm",)
    defaults = (("spec.beta", False), ("spec.internal", False))


class ManifestKind(Kind):
    kind, plural, spec, status = "Manifest", "manifests", ManifestSpec, ManifestStatus
    defaults = (("spec.customResourcePolicy", "CreateAndDelete"),)
    state_column = True


KINDS: tuple[type[Kind], ...] = (KymaKind, ModuleTemplateKind, ModuleReleaseMetaKind, ManifestKind)
