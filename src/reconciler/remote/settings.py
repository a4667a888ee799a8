"""Settings of one component reconciler service (env prefix `RECONCILER_COMPONENT_`).

The service holds no state of its own, so everything here is about serving: pool size, heartbeat
cadence, which components it takes, and how it authenticates in both directions. It refuses to
start without a shared token unless anonymous access is explicitly allowed: the task body carries
a kubeconfig, and an open `/v1/run` would run anyone's chart with anyone's credentials.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Annotated

from pydantic import ByteSize, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from reconciler.charts.sources import DEFAULT_MAX_CACHE_BYTES
from reconciler.paths import cache_dir


class ComponentSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RECONCILER_COMPONENT_", extra="forbid")

    workers: int = Field(default=16, ge=1, le=10_000)
    """Tasks held at once, from acceptance until the final callback is delivered or given up."""
    heartbeat_interval: float = Field(default=2.0, gt=0)
    """Seconds between `running` callbacks while a task runs (the original sent one per 30 s).
    At most half the mothership's `orphan_timeout` (60 s; another process, so not checked
    here), or a running task is declared orphaned and handed out again."""
    components: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Components this instance serves; empty = all."""

    token: str = Field(default="", repr=False)
    """Shared bearer token expected on `POST /v1/run`."""
    allow_anonymous: bool = False
    """Accept `/v1/run` without a token (only for a trusted network; off by default)."""
    callback_token: str | None = Field(default=None, repr=False)
    """Bearer token sent with callbacks; None = the same as `token`, "" = none."""

    cert_file: Path | None = None
    key_file: Path | None = None
    """Certificate and key to serve HTTPS with (both or neither)."""
    client_ca_file: Path | None = None
    """Require client certificates signed by this CA on every request (inbound mTLS)."""
    ca_file: Path | None = None
    """CA bundle to verify the mothership's callback URL with (default: system trust)."""
    client_cert_file: Path | None = None
    client_key_file: Path | None = None
    """Client certificate for mTLS towards the mothership (optional)."""

    client_cache_size: int = Field(default=32, ge=0)
    """Idle cluster clients (connection pools) kept for reuse by later tasks."""
    client_idle_seconds: float = Field(default=60.0, ge=0)
    """An idle cluster client is closed after this long."""

    charts_cache: Path = Field(default_factory=lambda: cache_dir() / "component-charts")
    charts_cache_max_bytes: ByteSize = Field(default=ByteSize(DEFAULT_MAX_CACHE_BYTES), gt=0)
    """Size limit of the chart cache (e.g. `2GiB`); least recently used charts are removed."""
    full_reconcile_after: float = Field(default=3600.0, gt=0)
    """Seconds after which a component whose inputs did not change is applied in full again."""

    retry_delay: float = Field(default=1.0, ge=0)
    """First pause between failed attempts of a task; doubles up to `retry_max_delay`."""
    retry_max_delay: float = Field(default=15.0, ge=0)
    """At least `retry_delay` (checked at start-up). Keep it well below the mothership's
    `callback_orphan_timeout` (60 s): an operation whose task reported `failed` and waits this
    long for its next attempt is otherwise handed to another worker meanwhile."""
    callback_timeout: float = Field(default=5.0, gt=0)
    """Timeout of one callback request."""
    final_callback_grace: float = Field(default=30.0, ge=0)
    """The final callback is retried at least this long, even when the task timeout has passed."""
    shutdown_timeout: float = Field(default=5.0, gt=0)
    """How long shutdown waits for the `failed` callbacks of cancelled tasks."""

    @field_validator("components", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @model_validator(mode="after")
    def _check(self) -> ComponentSettings:
        if not self.token and not self.allow_anonymous and self.client_ca_file is None:
            raise ValueError(
                "no token configured: set RECONCILER_COMPONENT_TOKEN (or --token-file), require "
                "client certificates (client_ca_file), or set "
                "RECONCILER_COMPONENT_ALLOW_ANONYMOUS=true for a trusted network"
            )
        if self.client_ca_file is not None and self.cert_file is None:
            raise ValueError("client_ca_file (mTLS) needs cert_file and key_file (TLS)")
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")
        if (self.client_cert_file is None) != (self.client_key_file is None):
            raise ValueError("client_cert_file and client_key_file go together")
        if self.retry_max_delay < self.retry_delay:
            raise ValueError(
                f"retry_max_delay ({self.retry_max_delay:g} s) is below retry_delay "
                f"({self.retry_delay:g} s): the cap of the backoff would be shorter than its "
                "first pause"
            )
        return self

    @property
    def outgoing_token(self) -> str:
        return self.token if self.callback_token is None else self.callback_token

    @property
    def tls(self) -> bool:
        return self.cert_file is not None

    def callback_verify(self) -> ssl.SSLContext | bool:
        """What httpx verifies callback URLs with: the CA file and client certificate, if set."""
        if self.ca_file is None and self.client_cert_file is None:
            return True
        context = ssl.create_default_context(
            cafile=str(self.ca_file) if self.ca_file is not None else None
        )
        if self.client_cert_file is not None and self.client_key_file is not None:
            context.load_cert_chain(str(self.client_cert_file), str(self.client_key_file))
        return context
