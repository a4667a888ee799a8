"""The operator's settings: how often the controllers look again and where modules go (the
lifecycle manager's defaults, `RECONCILER_OPERATOR_*`), and how processes split the Kymas
(`RECONCILER_OPERATOR_SHARD_*`, `runtime/shards.py`). The watcher's are `watcher/settings.py`."""

from __future__ import annotations

import os
import socket
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from reconciler.charts.policy import SourcePolicy


class OperatorSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RECONCILER_OPERATOR_", frozen=True)

    success_interval: float = Field(default=300.0, gt=0)
    """Seconds until a Ready resource is checked again (drift, the fast path of the core)."""
    verify_interval: float = Field(default=1800.0, ge=0)
    """Seconds during which a settled Kyma or Manifest (Ready, and its watches open without a
    gap) skips the check at `success_interval`: the watches would have reported a change. After
    it, the check runs (the core's fast path); 0 runs it every `success_interval`
    (`operator/settled.py`)."""
    busy_interval: float = Field(default=5.0, gt=0)
    warning_interval: float = Field(default=30.0, gt=0)
    error_interval: float = Field(default=2.0, gt=0)
    """First retry after an error; doubled per failure up to `error_max_interval`."""
    error_max_interval: float = Field(default=30.0, gt=0)
    module_namespace: str = "kyma-system"
    """Namespace of a module's namespaced objects that name none (and of its inventory);
    `{kyma}` is replaced by the Kyma's name (many Kymas on one cluster, as the benchmark does)."""
    timeout: float = Field(default=300.0, gt=0)
    workers: int = Field(default=8, ge=1)
    remote_sync: bool = True
    """Keep a Kyma `kyma-system/default`, the catalog and ModuleConfigs in sync with each remote
    cluster (off when many Kymas share one cluster, as the benchmark's do)."""
    source_schemes: list[Literal["https", "http", "oci", "file"]] = ["https", "oci"]
    """Schemes a module's chart or raw-manifest link (ModuleTemplate, Manifest) may use; every
    redirect is checked against them again (`charts/policy.py`)."""
    source_local_files: bool = False
    """Whether such a link may name a file on the operator's host (a path, `file://`)."""
    source_redirect_hosts: list[str] | None = []
    """Hosts a link may redirect to besides its own ([]: none; unset (null): any)."""
    stop_timeout: float = Field(default=15.0, gt=0)
    """Seconds from SIGTERM/SIGINT until the process exits even if kopf's thread or a handler
    has not finished (exit code 1, logged): a stop must be bounded, as a pod's grace period is."""

    def source_policy(self) -> SourcePolicy:
        """The rule for what module links may be fetched (`file` only with local files)."""
        schemes = {s for s in self.source_schemes if s != "file"}
        hosts = self.source_redirect_hosts
        return SourcePolicy(
            frozenset(schemes | ({"file"} if self.source_local_files else set())),
            self.source_local_files,
            None if hosts is None else frozenset(hosts),
        )


def _default_identity() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


class ShardSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RECONCILER_OPERATOR_SHARD_", frozen=True)

    count: int = Field(default=1, ge=1, le=1024)
    """Number of shards; 1 turns sharding off (no Leases, this process does everything)."""
    label: str | None = None
    """A Kyma label whose value (0..count-1) names its shard; other Kymas go by the hash."""
    lease_namespace: str = "kcp-system"
    lease_prefix: str = Field(default="reconciler-operator", pattern=r"^[a-z0-9]([-a-z0-9]*)$")
    lease_duration: float = Field(default=15.0, gt=0)
    """Seconds without renewal after which a shard's holder counts as dead."""
    renew_interval: float = Field(default=5.0, gt=0)
    identity: str = Field(default_factory=_default_identity, min_length=1, max_length=200)
