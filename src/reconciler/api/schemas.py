"""The wire format of the external API v1: request and response bodies as pydantic models.

Field names are the original's JSON names (camelCase, `runtimeID`, `statusURL`, `URL`), so the
models use them directly rather than aliases. Request bodies match field names
case-insensitively, exact spelling first, as Go's `encoding/json` did (clients send
`kubeConfig`), read `null` for an optional field as its empty default (Go marshals an empty
list as `null`: `administrators`, `components`, `configuration`), and ignore unknown fields;
FastAPI renders these models as our OpenAPI document. Identifiers that end up in URLs (runtime
ID, component names) are restricted to URL-safe text.
"""

from __future__ import annotations

import datetime as dt
import enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from reconciler.model.health import Health
from reconciler.model.status import ClusterStatus
from reconciler.model.values import MAX_VALUE_DEPTH, nesting_depth

RUNTIME_ID = r"^[A-Za-z0-9][A-Za-z0-9._~-]*$"
COMPONENT = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
NAMESPACE = r"^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class _Input(BaseModel):
    model_config = ConfigDict(extra="ignore")

    @model_validator(mode="before")
    @classmethod
    def _fold_case(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        names = {name.lower(): name for name in cls.model_fields}
        folded = {key: value for key, value in data.items() if key in cls.model_fields}
        for key, value in data.items():
            name = names.get(key.lower()) if isinstance(key, str) else None
            if name is not None and name not in folded:
                folded[name] = value
        return {
            name: value
            for name, value in folded.items()
            if value is not None or cls.model_fields[name].is_required()
        }


class ConfigEntryIn(_Input):
    key: str = Field(min_length=1, max_length=1024)
    value: Any = None
    secret: bool = False

    @field_validator("value")
    @classmethod
    def _bounded_depth(cls, value: Any) -> Any:
        if nesting_depth(value) > MAX_VALUE_DEPTH:
            raise ValueError(f"nested more than {MAX_VALUE_DEPTH} levels deep")
        return value


class ComponentIn(_Input):
    component: str = Field(min_length=1, max_length=63, pattern=COMPONENT)
    namespace: str = Field(default="", max_length=63, pattern=NAMESPACE)
    URL: str = Field(default="", max_length=2048)
    version: str = Field(default="", max_length=128)
    configuration: list[ConfigEntryIn] = Field(default_factory=list)
    regenerate: str = Field(default="", max_length=128)


class KymaConfigIn(_Input):
    version: str = Field(min_length=1, max_length=128)
    profile: str = Field(default="", max_length=128)
    components: list[ComponentIn] = Field(default_factory=list)
    administrators: list[str] = Field(default_factory=list)


class RuntimeInputIn(_Input):
    name: str = ""
    description: str = ""


class MetadataIn(_Input):
    globalAccountID: str = ""
    subAccountID: str = ""
    serviceID: str = ""
    servicePlanID: str = ""
    servicePlanName: str = ""
    shootName: str = ""
    instanceID: str = ""
    region: str = ""


class ClusterIn(_Input):
    """A cluster as the broker upserts it (`POST`/`PUT /v1/clusters`)."""

    runtimeID: str = Field(min_length=1, max_length=256, pattern=RUNTIME_ID)
    runtimeInput: RuntimeInputIn = Field(default_factory=RuntimeInputIn)
    kymaConfig: KymaConfigIn
    metadata: MetadataIn = Field(default_factory=MetadataIn)
    kubeconfig: str = Field(
        min_length=1, repr=False, description="A kubeconfig with inline credentials."
    )


class UserStatus(enum.StrEnum):
    """The statuses a caller may set: disable, enable, force a run."""

    RECONCILE_DISABLED = ClusterStatus.RECONCILE_DISABLED.value
    READY = ClusterStatus.READY.value
    RECONCILE_PENDING = ClusterStatus.RECONCILE_PENDING.value


class StatusUpdate(_Input):
    status: UserStatus


class ForgetRequest(_Input):
    confirm: bool = Field(
        default=False,
        description="Forget the cluster even though it is healthy (its apiserver answers):"
        " whatever is installed on it stays installed.",
    )


class OperationStop(_Input):
    reason: str = Field(default="", max_length=4096)


# ------------------------------------------------------------------------------ responses
class ErrorBody(BaseModel):
    error: str


class FailureOut(BaseModel):
    component: str
    reason: str


class ClusterHealthOut(BaseModel):
    """A cluster's health beside its wire status (an addition of this implementation): what
    the latest finished run proved, kept while the next one runs."""

    health: Health = Field(
        description="healthy, progressing, failing, unreachable, disabled (deleted: forgotten"
        " or uninstalled). A failing cluster stays failing while its retries run."
    )
    failingSince: dt.datetime | None = Field(
        default=None, description="When the current series of failed runs began."
    )
    consecutiveFailures: int = Field(default=0, description="Failed runs in a row.")
    component: str = Field(
        default="", description="The root cause: the first component that failed."
    )
    reason: str = Field(default="", description="Why that component failed.")
    lastSuccess: dt.datetime | None = Field(
        default=None, description="When a run last succeeded on this cluster."
    )
    checkedConfigVersion: int | None = Field(
        default=None,
        description="The configuration version the latest finished run worked on (None: no"
        " run has finished yet).",
    )
    deleting: bool = Field(
        default=False, description="A deletion is under way (failing: it cannot finish)."
    )
    summary: str = Field(default="", description="All of the above in one line.")


class ClusterResponse(BaseModel):
    cluster: str
    clusterVersion: int
    configurationVersion: int
    status: ClusterStatus
    statusURL: str
    failures: list[FailureOut] = Field(default_factory=list)
    health: ClusterHealthOut | None = Field(
        default=None, description="Not in the original API: the cluster's health."
    )


class ClusterListItem(BaseModel):
    """One entry of `GET /v1/clusters` (an addition of this implementation)."""

    runtimeID: str
    status: ClusterStatus
    clusterVersion: int
    configurationVersion: int
    statusChanged: dt.datetime
    health: ClusterHealthOut | None = None


class ConfigEntryOut(BaseModel):
    key: str
    value: Any = Field(description="The value; `<redacted>` for secret entries.")
    secret: bool


class ComponentOut(BaseModel):
    component: str
    namespace: str
    URL: str
    version: str
    configuration: list[ConfigEntryOut]
    regenerate: str = ""


class KymaConfigOut(BaseModel):
    version: str
    profile: str
    components: list[ComponentOut]
    administrators: list[str]


class RuntimeInputOut(BaseModel):
    name: str
    description: str


class MetadataOut(BaseModel):
    globalAccountID: str
    subAccountID: str
    serviceID: str
    servicePlanID: str
    servicePlanName: str
    shootName: str
    instanceID: str
    region: str


class ClusterStateCluster(BaseModel):
    version: int
    runtimeID: str
    runtime: RuntimeInputOut
    metadata: MetadataOut
    contract: int


class ClusterStateConfiguration(BaseModel):
    version: int
    runtimeID: str
    clusterVersion: int
    kymaVersion: str
    kymaProfile: str
    components: list[ComponentOut]
    administrators: list[str]
    contract: int
    deleted: bool


class ClusterStateStatus(BaseModel):
    runtimeID: str
    clusterVersion: int
    configVersion: int
    status: ClusterStatus
    deleted: bool
    created: dt.datetime


class ClusterStateResponse(BaseModel):
    cluster: ClusterStateCluster
    configuration: ClusterStateConfiguration
    status: ClusterStateStatus


class StatusChangeOut(BaseModel):
    started: dt.datetime
    duration: int = Field(description="Nanoseconds (Go's time.Duration).")
    status: ClusterStatus
    configVersion: int | None = Field(
        default=None, description="The configuration version the status belongs to."
    )
    restoredFrom: int | None = Field(
        default=None,
        description="Set when that configuration version is a rollback: the version it restored.",
    )
    health: Health | None = Field(
        default=None,
        description="The cluster's health from this change on (not in the original API).",
    )


class ConfigVersionOut(BaseModel):
    """One configuration version of a cluster (`GET /v1/clusters/{runtimeID}/configs`)."""

    version: int
    clusterVersion: int
    kymaVersion: str
    kymaProfile: str
    created: dt.datetime
    restoredFrom: int | None = Field(
        default=None, description="The version a rollback copied; null for a version sent."
    )


class RollbackResponse(ClusterResponse):
    """The cluster after a rollback: `configurationVersion` is the new version, a copy of
    `restoredFrom`."""

    restoredFrom: int


class StatusChangesResponse(BaseModel):
    statusChanges: list[StatusChangeOut]


class ReconciliationOut(BaseModel):
    lock: str = Field(description="The runtime ID while the reconciliation runs, else empty.")
    runtimeID: str
    shootName: str
    schedulingID: str
    created: dt.datetime
    updated: dt.datetime
    status: ClusterStatus
    finished: bool


class OperationOut(BaseModel):
    priority: int
    schedulingID: str
    correlationID: str
    component: str
    state: str
    reason: str
    created: dt.datetime
    updated: dt.datetime
    type: str
    retries: int = Field(default=0, description="Attempts that failed before this one.")
    duration: float = Field(
        default=0.0,
        description="Seconds from creation to the final state (or to now, while open)."
        " Not in the original API.",
    )
    blocker: str = Field(
        default="",
        description="What keeps the component from being ready while it runs or after it failed:"
        " the blocking object and its condition (`deployment kyma-system/x: 0/1 replicas"
        " available`); empty when nothing blocks. Not in the original API.",
    )


class ReconciliationInfo(BaseModel):
    runtimeID: str
    schedulingID: str
    configVersion: int
    created: dt.datetime
    updated: dt.datetime
    status: ClusterStatus
    finished: bool
    operations: list[OperationOut]


class HealthOut(BaseModel):
    status: str
