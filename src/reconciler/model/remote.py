"""The internal API between the mothership and component reconciler services, as data.

`RemoteTask` is the body of `POST /v1/run` (field names as the original internal API, plus
`crdSources`, `includeCrds`, `timeout` and `callbackSecret` for this implementation);
`CallbackMessage` is what a component reconciler POSTs to the task's `callbackURL`, with the
task's callback secret in the `X-Callback-Secret` header. The kubeconfig and the callback secret
travel in the task and must never be logged or echoed (`repr=False`).
"""

from __future__ import annotations

import enum
import uuid
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from reconciler.model.operation import BLOCKER_MAX
from reconciler.model.status import OperationState
from reconciler.model.task import ChartRef, Task, TaskType
from reconciler.model.values import MAX_VALUE_DEPTH, nesting_depth, values_at

CALLBACK_SECRET_HEADER = "X-Callback-Secret"
"""The header a component reconciler returns the task's `callbackSecret` in."""


class CallbackStatus(enum.StrEnum):
    NOT_STARTED = "notstarted"
    RUNNING = "running"
    FAILED = "failed"
    SUCCESS = "success"
    ERROR = "error"

    @property
    def operation_state(self) -> OperationState:
        return {
            CallbackStatus.NOT_STARTED: OperationState.IN_PROGRESS,
            CallbackStatus.RUNNING: OperationState.IN_PROGRESS,
            CallbackStatus.FAILED: OperationState.FAILED,
            CallbackStatus.SUCCESS: OperationState.DONE,
            CallbackStatus.ERROR: OperationState.ERROR,
        }[self]


class _Wire(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")


class Repository(_Wire):
    url: str = ""


class ComponentConfiguration(_Wire):
    max_retries: int = Field(default=3, ge=0, le=100, alias="maxRetries")
    debug: bool = False


class RemoteTask(_Wire):
    component: str = Field(min_length=1, max_length=63)
    namespace: str = Field(min_length=1, max_length=63)
    version: str = Field(min_length=1)
    url: str = Field(default="", description="Chart source: directory, .tgz URL or oci://")
    profile: str = ""
    configuration: dict[str, Any] = Field(default_factory=dict)
    kubeconfig: str = Field(min_length=1, repr=False)
    metadata: dict[str, Any] = Field(default_factory=dict)
    callback_url: str = Field(alias="callbackURL", min_length=1)
    correlation_id: str = Field(alias="correlationID", min_length=1)
    components_ready: list[str] = Field(default_factory=list, alias="componentsReady")
    repository: Repository = Field(default_factory=Repository)
    type: Literal["reconcile", "delete"] = "reconcile"
    component_configuration: ComponentConfiguration = Field(
        default_factory=ComponentConfiguration, alias="componentConfiguration"
    )
    crd_sources: list[str] = Field(default_factory=list, alias="crdSources")
    include_crds: bool = Field(default=True, alias="includeCrds")
    timeout: float = Field(default=600.0, gt=0, le=86400)
    callback_secret: str = Field(default="", alias="callbackSecret", repr=False)
    """Sent back with every callback (`X-Callback-Secret`); the mothership refuses callbacks
    without the secret of the operation's latest hand-over."""
    force: bool = False
    """Apply every object, even when the inputs did not change (no fast path)."""
    secret_keys: list[str] = Field(default_factory=list, alias="secretKeys")
    """Keys of `configuration` whose values are secret: the service scrubs them from callbacks
    and logs (an addition of this implementation)."""
    regenerate: str = Field(default="", max_length=128)
    """Regenerate token (see `Task.regenerate`)."""

    @field_validator("configuration")
    @classmethod
    def _bounded_depth(cls, value: dict[str, Any]) -> dict[str, Any]:
        if nesting_depth(value, MAX_VALUE_DEPTH + 1) > MAX_VALUE_DEPTH + 1:  # the map is one
            raise ValueError(f"nested more than {MAX_VALUE_DEPTH} levels deep")
        return value

    def secret_values(self) -> list[Any]:
        return values_at(self.configuration, self.secret_keys)

    def to_task(self) -> Task:
        return Task(
            component=self.component,
            namespace=self.namespace,
            version=self.version,
            source=ChartRef(self.url or self.repository.url),
            type=TaskType(self.type),
            profile=self.profile or None,
            configuration=self.configuration,
            include_crds=self.include_crds,
            crd_sources=tuple(self.crd_sources),
            correlation_id=self.correlation_id,
            components_ready=tuple(self.components_ready),
            timeout=self.timeout,
            force=self.force,
            secret_keys=tuple(self.secret_keys),
            regenerate=self.regenerate,
        )

    @classmethod
    def of(
        cls,
        task: Task,
        *,
        kubeconfig: str,
        callback_url: str,
        max_retries: int,
        callback_secret: str = "",
    ) -> RemoteTask:
        if not isinstance(task.source, ChartRef):
            raise ValueError(f"{task.component}: only a chart goes to a remote reconciler")
        return cls.model_validate(
            {
                "component": task.component,
                "namespace": task.namespace,
                "version": task.version,
                "url": task.source.link,
                "profile": task.profile or "",
                "configuration": task.configuration,
                "kubeconfig": kubeconfig,
                "callbackURL": callback_url,
                "correlationID": task.correlation_id,
                "componentsReady": list(task.components_ready),
                "type": task.type.value,
                "componentConfiguration": {"maxRetries": max_retries},
                "crdSources": list(task.crd_sources),
                "includeCrds": task.include_crds,
                "timeout": task.timeout,
                "callbackSecret": callback_secret,
                "force": task.force,
                "secretKeys": list(task.secret_keys),
                "regenerate": task.regenerate,
            }
        )


def _uuid(value: str) -> str:
    try:
        uuid.UUID(value)
    except ValueError:
        raise ValueError("must be a UUID (one per attempt)") from None
    return value


class CallbackMessage(_Wire):
    status: CallbackStatus
    error: str = ""
    retry_id: Annotated[str, AfterValidator(_uuid)] = Field(alias="retryID")
    processing_duration: int = Field(default=0, alias="processingDuration", ge=0)
    manifest: str | None = None
    blocker: str = Field(default="", max_length=BLOCKER_MAX)
    """What keeps the component from being ready (`deployment ns/x: 0/1 replicas available`),
    sent with `running`, `failed` and `error`; an addition of this implementation."""
