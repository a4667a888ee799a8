"""The infrastructure manager's resources as pydantic models: the one source of the CRDs we install
(`infra/crds.py`) and of how the state machine reads them.

Names, states, conditions, labels and annotations are those of Kyma's infrastructure manager
(group `infrastructuremanager.kyma-project.io`, version `v1`), so existing Runtimes work
unchanged. Gardener's own worker fields we do not interpret are kept as they are (the worker
object preserves unknown fields) and handed to the Shoot unchanged.
"""

from __future__ import annotations

import datetime as dt
import enum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field

from reconciler.model.resource import Condition, ResourceModel

GROUP = "infrastructuremanager.kyma-project.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
FIELD_MANAGER = "kim"
FINALIZER = "runtime-controller.infrastructure-manager.kyma-project.io/deletion-hook"

RUNTIME_ID = "kyma-project.io/runtime-id"
SHOOT_NAME = "kyma-project.io/shoot-name"
KYMA_NAME = "operator.kyma-project.io/kyma-name"
MANAGED_BY = "operator.kyma-project.io/managed-by"
CLUSTER_NAME = "operator.kyma-project.io/cluster-name"
MANAGER = "infrastructure-manager"
LAST_SYNC = "operator.kyma-project.io/last-sync"
FORCE_ROTATION = "operator.kyma-project.io/force-kubeconfig-rotation"
SHOOT_RUNTIME_ID = f"{GROUP}/runtime-id"
SHOOT_GENERATION = f"{GROUP}/runtime-generation"
"""On the Shoot: the Runtime generation it was last written from (patch only when newer)."""
COPIED_LABELS = tuple(
    f"kyma-project.io/{name}"
    for name in (
        "instance-id",
        "broker-plan-id",
        "broker-plan-name",
        "global-account-id",
        "subaccount-id",
        "region",
        "platform-region",
    )
)
"""The Runtime's descriptive labels the GardenerCluster and the kubeconfig Secret carry too.
Only these: a label that routes (the Kyma name, the runtime id, the shoot name) is derived from
the Runtime itself, never copied, so a Runtime's author cannot point its kubeconfig at another
Kyma (docs/security.md)."""
SHOOT_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
SHOOT_NAME_MAX = 63
"""A Shoot's name is a DNS label (Gardener's rule): it is the last segment of every Gardener
REST path the manager sends, so nothing else may pass (`..`, `/`, `%`)."""
SYSTEM_IDENTITY = "system:"
"""Kubernetes' reserved identities (`system:anonymous`, `system:serviceaccount:...`,
`system:kube-controller-manager`): never a Runtime's administrator."""

_INT_OR_STRING: dict[str, Any] = {"x-kubernetes-int-or-string": True}
_PRESERVE: dict[str, Any] = {"x-kubernetes-preserve-unknown-fields": True}


class State(enum.StrEnum):
    PENDING = "Pending"
    READY = "Ready"
    TERMINATING = "Terminating"
    FAILED = "Failed"


class ConditionType(enum.StrEnum):
    PROVISIONED = "Provisioned"
    KUBECONFIG_READY = "KubeconfigReady"
    KYMA_SYSTEM_CREATED = "KymaSystemNSCreated"
    OIDC_AND_CONFIGMAPS = "OidcAndConfigMapConfigured"
    CONFIGURED = "Configured"
    DEPROVISIONED = "Deprovisioned"


class Enabled(ResourceModel):
    enabled: bool


class Filter(ResourceModel):
    egress: Enabled
    ingress: Enabled | None = None


class SecurityNetworking(ResourceModel):
    filter: Filter


def _administrator(user: str) -> str:
    if not user.strip():
        raise ValueError("an administrator must not be empty")
    if user.strip().lower().startswith(SYSTEM_IDENTITY):
        raise ValueError(
            f"administrator {user!r} is a Kubernetes system identity: such identities "
            "(system:anonymous, system:serviceaccount:...) are never bound as cluster-admin"
        )
    return user


Administrator = Annotated[str, AfterValidator(_administrator)]


class Security(ResourceModel):
    administrators: list[Administrator]
    networking: SecurityNetworking


class ClientAuthentication(ResourceModel):
    secret: str | None = None
    extra_config: dict[str, str] | None = None


class OidcConfig(ResourceModel):
    client_id: str | None = Field(default=None, alias="clientID")
    issuer_url: str | None = Field(default=None, alias="issuerURL")
    groups_claim: str | None = None
    groups_prefix: str | None = None
    username_claim: str | None = None
    username_prefix: str | None = None
    signing_algs: list[str] | None = None
    required_claims: dict[str, str] | None = None
    ca_bundle: str | None = None
    client_authentication: ClientAuthentication | None = None


class AdditionalOidcConfig(OidcConfig):
    jwks: str | None = None


class Acl(ResourceModel):
    allowed_cidrs: list[str] | None = Field(default=None, alias="allowedCIDRs")


class KubeAPIServer(ResourceModel):
    oidc_config: OidcConfig | None = None
    additional_oidc_config: list[AdditionalOidcConfig] | None = None
    acl: Acl | None = None


class Kubernetes(ResourceModel):
    version: str | None = None
    kube_api_server: KubeAPIServer | None = Field(default=None, alias="kubeAPIServer")


class MachineImage(ResourceModel):
    name: str
    version: str | None = None


class Machine(ResourceModel):
    type: str
    image: MachineImage | None = None
    architecture: str | None = None


class Volume(ResourceModel):
    size: str
    type: str | None = None
    name: str | None = None
    encrypted: bool | None = None


class Worker(ResourceModel):
    """A Gardener worker pool; fields not modelled here are kept and passed on to the Shoot."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_PRESERVE)

    name: str
    machine: Machine
    minimum: int
    maximum: int
    max_surge: int | str | None = Field(default=None, json_schema_extra=_INT_OR_STRING)
    max_unavailable: int | str | None = Field(default=None, json_schema_extra=_INT_OR_STRING)
    zones: list[str] | None = None
    volume: Volume | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class Provider(ResourceModel):
    type: Literal["aws", "azure", "gcp", "openstack", "alicloud", "gdch"]
    workers: list[Worker]
    additional_workers: list[Worker] | None = None
    control_plane_config: dict[str, Any] | None = Field(default=None, json_schema_extra=_PRESERVE)
    infrastructure_config: dict[str, Any] | None = Field(default=None, json_schema_extra=_PRESERVE)


class Networking(ResourceModel):
    pods: str
    nodes: str
    services: str
    type: str | None = None
    dual_stack: bool | None = None
    vpc_network: str | None = None


class FailureTolerance(ResourceModel):
    type: str


class HighAvailability(ResourceModel):
    failure_tolerance: FailureTolerance


class ControlPlane(ResourceModel):
    high_availability: HighAvailability | None = None


class Shoot(ResourceModel):
    name: str = Field(min_length=1, max_length=SHOOT_NAME_MAX, pattern=SHOOT_NAME_PATTERN)
    purpose: str
    region: str
    platform_region: str
    secret_binding_name: str
    enforce_seed_location: bool | None = None
    licence_type: str | None = None
    enable_nvidia_openshell: bool | None = None
    kubernetes: Kubernetes | None = None
    provider: Provider
    networking: Networking
    control_plane: ControlPlane | None = None


class GarbageCollection(ResourceModel):
    ttl: str | None = None


class CacheHttp(ResourceModel):
    tls: bool | None = None


class CacheProxy(ResourceModel):
    http_proxy: str | None = None
    https_proxy: str | None = None


class CacheVolume(ResourceModel):
    size: int | str | None = Field(default=None, json_schema_extra=_INT_OR_STRING)
    storage_class_name: str | None = None


class RegistryCacheConfig(ResourceModel):
    upstream: str
    remote_url: str | None = Field(default=None, alias="remoteURL")
    secret_reference_name: str | None = None
    garbage_collection: GarbageCollection | None = None
    http: CacheHttp | None = None
    proxy: CacheProxy | None = None
    volume: CacheVolume | None = None


class ImageRegistryCache(ResourceModel):
    """One registry cache of the Runtime (KIM's `imageRegistryCache[]`, the broker's API since
    2025; the form before, `{enabled: bool}`, named no cache and reads as none)."""

    name: str
    namespace: str
    uid: str
    config: RegistryCacheConfig


def _registry_caches(value: Any) -> Any:
    return [] if isinstance(value, dict) else value


class RuntimeSpec(ResourceModel):
    shoot: Shoot
    security: Security
    image_registry_cache: Annotated[
        list[ImageRegistryCache] | None, BeforeValidator(_registry_caches)
    ] = None
    audit_log_access_enabled: bool | None = None


class LastOperation(ResourceModel):
    """Gardener's `status.lastOperation` of the Shoot, as the Runtime reports it."""

    description: str
    last_update_time: dt.datetime
    progress: int
    state: str
    type: str


class LastError(ResourceModel):
    description: str
    codes: list[str] | None = None
    last_update_time: dt.datetime | None = None
    task_id: str | None = Field(default=None, alias="taskID")


class RuntimeStatus(ResourceModel):
    state: State
    conditions: list[Condition] | None = None
    provisioning_completed: bool | None = None
    shoot_last_operation: LastOperation | None = None
    shoot_last_errors: list[LastError] | None = None
    audit_log_cr: str | None = Field(default=None, alias="auditLogCR")


# --- GardenerCluster ---------------------------------------------------------------------------


class SecretRef(ResourceModel):
    name: str
    namespace: str
    key: str


class KubeconfigRef(ResourceModel):
    secret: SecretRef


class ShootRef(ResourceModel):
    name: str


class GardenerClusterSpec(ResourceModel):
    kubeconfig: KubeconfigRef
    shoot: ShootRef


class GardenerClusterStatus(ResourceModel):
    state: str | None = None
    conditions: list[Condition] | None = None


def _column(name: str, path: str, kind: str = "string") -> dict[str, str]:
    return {"name": name, "type": kind, "jsonPath": path}


AGE = _column("Age", ".metadata.creationTimestamp", "date")
RUNTIME_COLUMNS = (
    _column("Provider", ".spec.shoot.provider.type"),
    _column("Region", ".spec.shoot.region"),
    _column("STATE", ".status.state"),
    AGE,
)
GARDENER_CLUSTER_COLUMNS = (
    _column("STATE", ".status.state"),
    _column("RUNTIME-ID", ".metadata.labels.kyma-project\\.io/runtime-id"),
    _column("SHOOT-NAME", ".metadata.labels.kyma-project\\.io/shoot-name"),
    AGE,
)
