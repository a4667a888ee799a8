"""Watcher and listener settings (`RECONCILER_OPERATOR_WATCHER_*`); off unless `listener_url`
is set, so an operator without a reachable listener works as before (periodic requeues)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class WatcherSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RECONCILER_OPERATOR_WATCHER_", frozen=True)

    listener_url: str | None = None
    """Base URL the remote watchers call (`https://host:port`); set it to turn the watcher on."""
    listener_host: str = "0.0.0.0"
    listener_port: int = Field(default=8443, ge=0, le=65535)
    """Port of the listener (0: any free port, read back from `Listener.port`)."""
    listener_hosts: list[str] = ["localhost", "127.0.0.1"]
    """Names (DNS or IP) in the listener's serving certificate: the host of `listener_url`."""
    manager: str = Field(default="lifecycle-manager", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    """The `<manager>` of `/v2/<manager>/event` and of the webhook's name."""
    kyma_namespace: str = "kcp-system"
    """Where the Kyma of an event naming no owner is (its name is the runtime id)."""
    ca_namespace: str = "kcp-system"
    ca_secret: str = "reconciler-watcher-ca"
    cert_validity: float = Field(default=90 * 86400.0, gt=0)
    """Seconds a runtime's certificate is valid."""
    renew_before: float = Field(default=1 / 3, gt=0, lt=1)
    """Renew a runtime's certificate when less than this part of its validity is left."""
    remote_namespace: str = "kyma-system"
    remote_secret: str = "skr-webhook-tls"
    """The Secret in the remote cluster the watcher reads its certificate from."""
    webhook_url: str | None = None
    """`clientConfig.url` of the remote webhook (a watcher outside the cluster, as in tests);
    unset: the in-cluster Service `skr-webhook` in `remote_namespace`."""
    webhook_hosts: list[str] = []
    """Extra names in the webhook's serving certificate (the host of `webhook_url`)."""
    image: str | None = None
    """Image of the watcher Deployment in the remote cluster; unset: not deployed by us."""
    max_body: int = Field(default=16 * 1024, ge=256)
    """Largest event body the listener reads (bytes); more is refused with 413."""

    events_rate: float = Field(default=5.0, gt=0)
    """Events per second one runtime may send on average (a token bucket per runtime); more
    are refused with 429 and `Retry-After`."""
    events_burst: int = Field(default=50, ge=1)
    """Events one runtime may send at once (the bucket's size)."""
    refusal_window: float = Field(default=60.0, gt=0)
    """Seconds over which refused events of one runtime are logged as one line and a count."""
    event_coalesce: float = Field(default=0.25, ge=0)
    """Seconds between runs of a Kyma for events: the first event in a while runs it at once,
    every later one within this time joins one pending requeue at its end."""

    @property
    def enabled(self) -> bool:
        return self.listener_url is not None
