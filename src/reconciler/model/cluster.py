"""What a cluster should look like, as the mothership stores it: runtime, metadata, kubeconfig
and the Kyma configuration (version, profile, components with their configuration).

Field names follow the external API (camelCase aliases) so the REST layer can pass these models
straight through; `secret` configuration values and the kubeconfig are encrypted at rest by the
store and never leave it in responses or logs.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from reconciler.model.health import Health
from reconciler.model.status import ClusterStatus


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="ignore")


class ConfigEntry(_Model):
    key: str = Field(min_length=1)
    value: Any = None
    secret: bool = False


class ComponentConfig(_Model):
    component: str = Field(min_length=1, max_length=63)
    namespace: str = ""
    url: str = Field(default="", alias="URL")
    version: str = ""
    configuration: tuple[ConfigEntry, ...] = ()
    regenerate: str = ""
    """Change it to apply the values the chart generates (certificates, passwords) as newly
    rendered, once; otherwise the values on the cluster are kept."""

    def values(self) -> dict[str, Any]:
        return {entry.key: entry.value for entry in self.configuration}


class KymaConfig(_Model):
    version: str = Field(min_length=1)
    profile: str = ""
    administrators: tuple[str, ...] = ()
    components: tuple[ComponentConfig, ...] = ()

    def fingerprint(self) -> str:
        """Stable digest of the whole configuration: equal digests mean nothing changed."""
        return _digest(self.model_dump(mode="json", by_alias=True))


class RuntimeInput(_Model):
    name: str = ""
    description: str = ""


class Metadata(_Model):
    global_account_id: str = Field(default="", alias="globalAccountID")
    sub_account_id: str = Field(default="", alias="subAccountID")
    service_id: str = Field(default="", alias="serviceID")
    service_plan_id: str = Field(default="", alias="servicePlanID")
    service_plan_name: str = Field(default="", alias="servicePlanName")
    shoot_name: str = Field(default="", alias="shootName")
    instance_id: str = Field(default="", alias="instanceID")
    region: str = ""


class ClusterSpec(_Model):
    """Everything a client upserts for one cluster."""

    runtime_id: str = Field(alias="runtimeID", min_length=1, max_length=256)
    runtime_input: RuntimeInput = Field(default_factory=RuntimeInput, alias="runtimeInput")
    kyma_config: KymaConfig = Field(alias="kymaConfig")
    metadata: Metadata = Field(default_factory=Metadata)
    kubeconfig: str = Field(min_length=1, repr=False)

    def secret_values(self) -> list[Any]:
        """The values of every `secret: true` configuration entry (what scrubbers remove)."""
        return [
            entry.value
            for component in self.kyma_config.components
            for entry in component.configuration
            if entry.secret
        ]

    def cluster_fingerprint(self) -> str:
        """Digest of what makes a new *cluster* version (runtime, metadata, kubeconfig)."""
        return _digest(
            {
                "runtime": self.runtime_input.model_dump(mode="json"),
                "metadata": self.metadata.model_dump(mode="json", by_alias=True),
                "kubeconfig": self.kubeconfig,
            }
        )


class ClusterState(_Model):
    """The latest (or a referenced) state of one cluster."""

    runtime_id: str
    cluster_version: int
    config_version: int
    status: ClusterStatus
    status_changed: dt.datetime
    spec: ClusterSpec
    deleted: bool = False
    restored_from: int | None = None
    """The configuration version this one is a rollback to (None: sent by a client)."""


def _digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(frozen=True)
class Head:
    """A cluster's latest versions and status (the inventory's projection), as the scheduler
    and listings read it without loading the configuration."""

    runtime_id: str
    cluster_version: int
    config_version: int
    status: ClusterStatus
    status_changed: dt.datetime


@dataclass(frozen=True)
class StatusChange:
    """One entry of a cluster's status history, with how long the cluster stayed in it."""

    status: ClusterStatus
    started: dt.datetime
    duration: dt.timedelta
    config_version: int = 0
    restored_from: int | None = None
    """Set when `config_version` is a rollback: the version it restored."""
    health: Health | None = None
    """The cluster's health from this change on (None: recorded before health existed)."""


@dataclass(frozen=True)
class ConfigVersion:
    """One entry of a cluster's configuration history (without the configuration itself)."""

    version: int
    cluster_version: int
    kyma_version: str
    kyma_profile: str
    created: dt.datetime
    restored_from: int | None = None
    """The version a rollback copied; None for a version a client sent."""
