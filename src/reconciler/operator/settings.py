"""How often the controllers look again, and where modules go: the lifecycle manager's defaults."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


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
    stop_timeout: float = Field(default=15.0, gt=0)
    """Seconds from SIGTERM/SIGINT until the process exits even if kopf's thread or a handler
    has not finished (exit code 1, logged): a stop must be bounded, as a pod's grace period is."""
