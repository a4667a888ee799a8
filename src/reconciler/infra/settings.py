"""How the infrastructure manager talks to Gardener and how often it looks again: KIM's defaults
(25 workers, Gardener limited to 5 requests/s, kubeconfigs valid 24 h, rotated after 95 % of
60 % of that, Shoots looked at every 60 s while created, 30 s while reconciled, 90 s while
deleted)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class InfraSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RECONCILER_INFRA_", frozen=True)

    gardener_project: str = Field(
        default="kyma-dev", min_length=1, max_length=56, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
    )
    """Shoots live in the garden cluster's namespace `garden-<project>` (a DNS label, so the
    namespace is one too: it is a segment of every Gardener REST path)."""
    gardener_rate: float | None = Field(default=5.0, gt=0)
    """Requests per second to Gardener, across all workers (None: unlimited)."""
    gardener_burst: int = Field(default=5, ge=1)
    workers: int = Field(default=25, ge=1)
    kubeconfig_validity: float = Field(default=86400.0, ge=600, le=86400)
    """Seconds an admin kubeconfig is requested for (Gardener allows 600 s to 24 h)."""
    rotation_ratio: float = Field(default=0.6, gt=0, lt=1)
    """Share of its validity after which a kubeconfig is replaced."""
    create_poll_interval: float = Field(default=60.0, gt=0)
    """Seconds between looks at a Shoot Gardener is creating (KIM: 60 s)."""
    update_poll_interval: float = Field(default=30.0, gt=0)
    """Seconds between looks at a Shoot Gardener is reconciling after an update (KIM: 30 s)."""
    delete_poll_interval: float = Field(default=90.0, gt=0)
    """Seconds between looks at a Shoot Gardener is deleting (KIM: 90 s)."""
    gardener_requeue_interval: float = Field(default=15.0, gt=0)
    """Seconds until the first look at a Shoot just written, and until a Shoot Gardener refused
    to create (or to patch, with a conflict) is sent again (KIM: 15 s)."""
    ready_interval: float = Field(default=1800.0, gt=0)
    """Seconds until a Ready Runtime is looked at again (sooner when its kubeconfig is due). Each
    look is one Gardener request: 5,000 Runtimes every 30 min are 2.8 of the 5 requests/s."""
    error_interval: float = Field(default=2.0, gt=0)
    """First retry after a retryable error; doubled per failure up to `error_max_interval`."""
    error_max_interval: float = Field(default=60.0, gt=0)
    stop_timeout: float = Field(default=15.0, gt=0)
    converter_config: Path | None = None
    """The converter configuration (KIM's `converter_config.json`, JSON or YAML; a mounted
    ConfigMap key): defaults, DNS, audit-log tenants, maintenance windows. Unset: built-in
    development defaults (`infra/converter/config.py`)."""
    api_server_acl_enabled: bool = False
    """KIM's `--api-server-acl-enabled`: an AWS or Azure Runtime listing
    `kubeAPIServer.acl.allowedCIDRs` gets the Shoot extension `acl` admitting only those, the
    operators' and the control plane's addresses (from the ConfigMap the converter
    configuration names at `kubernetes.kubeApiServer.acl.configMapName`, then required)."""
