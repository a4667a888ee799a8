"""Settings of the external REST API (env prefix `RECONCILER_API_`, or passed in by the caller).

Authentication is never off by accident: at least one authenticator must be configured (a token
file, an OIDC issuer, client identities with a client CA or a trusted proxy), and all configured
ones work together; otherwise the app refuses to start. `auth="none"` is the only way to run
without authentication, and it says so in the docs and logs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from reconciler.errors import ReconcilerError

AuthMode = Literal["static", "oidc", "none"]
DEFAULT_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384"]


class ApiConfigError(ReconcilerError):
    """The API settings are incomplete or contradictory (e.g. no authentication configured)."""


class ApiSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RECONCILER_API_", extra="forbid")

    # authentication / authorization
    auth: AuthMode | None = None
    """`none`: no checks, everyone is admin. Unset: every authenticator that is configured
    (token file, OIDC issuer, client identities) is used; `static`/`oidc` additionally insist
    that the token file / the OIDC issuer is given."""
    tokens_file: Path | None = None
    """YAML/JSON mapping token (or `sha256:<hex>` of it) -> {subject, role}."""
    oidc_issuer: str = ""
    oidc_audience: str = ""
    oidc_jwks_file: Path | None = None
    oidc_jwks_url: str = ""
    oidc_role_claim: str = "role"
    """Claim holding the role (`viewer`/`operator`/`admin`, a string or a list)."""
    oidc_groups_claim: str = "groups"
    oidc_group_roles: dict[str, str] = Field(default_factory=dict)
    """Group name -> role; the highest role of the caller's groups counts."""
    oidc_subject_claim: str = "sub"
    oidc_algorithms: list[str] = Field(default_factory=lambda: list(DEFAULT_ALGORITHMS))
    oidc_leeway: float = 30.0
    """Seconds of clock skew accepted on `exp`/`nbf`/`iat`."""
    oidc_jwks_refresh: float = 300.0
    """Seconds between JWKS downloads (a token with an unknown key id forces one, at most
    every `oidc_jwks_min_refresh` seconds)."""
    oidc_jwks_min_refresh: float = 30.0
    oidc_http_timeout: float = 10.0

    # client identities: mutual TLS, or an identity header from a trusted fronting proxy
    client_identities: dict[str, str] = Field(default_factory=dict)
    """Name -> role. A name is a client certificate's subject CN or subject alternative name
    (DNS, URI such as a SPIFFE ID, e-mail), or a name a trusted proxy asserts."""
    client_ca_file: Path | None = None
    """CA bundle (PEM) that signs client certificates: `mothership serve` with a TLS
    certificate then asks clients for one (mutual TLS) and verifies it."""
    client_cert_required: bool = False
    """Refuse the TLS handshake without a client certificate (default: optional, so callers
    with bearer tokens need none)."""
    trusted_proxies: list[str] = Field(default_factory=list)
    """Addresses/CIDRs of fronting proxies (e.g. `127.0.0.1/32` for a mesh sidecar) whose
    `proxy_identity_header` is believed. Empty: the header is ignored."""
    proxy_identity_header: str = "x-forwarded-client-cert"
    """Envoy's XFCC (its URI/DNS/subject CN are the names) or a plain header holding one name."""

    # component reconciler callbacks
    callback_token: str = Field(default="", repr=False)
    """Bearer token component reconcilers send on callbacks (empty: operator role needed)."""
    callback_orphan_timeout: float = 60.0
    """How long a `failed` operation waits for its component reconciler's next attempt."""

    # load
    max_concurrent_reads: int = Field(default=100, ge=1)
    """Reads (GET, HEAD) answered at once; more are refused at once with 503 and Retry-After
    (health probes are never refused). With the API's own database pool (the engine's
    `api_pool_size`) a flood of viewers cannot starve the engine or the writers."""

    # input validation
    max_body_bytes: int = 100 * 1024
    reject_unknown_components: bool = False
    """Refuse (400) an upsert naming a component without a chart (no URL, unknown to the Kyma
    version's workspace). Off (the original's behaviour, which the broker relies on): accepted,
    and that component's operation fails with `unknown component ...` during the run."""
    kubeconfig_timeout: float = 10.0
    """Seconds to wait for a cluster's apiserver when a kubeconfig is checked."""
    kubeconfig_allow_host_access: bool = False
    """Accept kubeconfigs that run commands (`exec`, `auth-provider`) or read files on the
    mothership's host (`tokenFile`, `client-certificate`, ...). Off: only inline credentials."""

    # audit
    audit_log: str = "-"
    """`-` for stdout, else a file path (rotated by size, old files removed by age)."""
    audit_max_bytes: int = 10 << 20
    audit_backups: int = 5
    audit_max_age: float = Field(default=90 * 86400, ge=0)
    """Seconds a rotated audit file is kept at most (0: only `audit_backups` limits them)."""
    audit_denied_window: float = Field(default=60.0, gt=0)
    """Refused requests (401/403) are written once per source and window, then counted."""

    # metrics
    metrics_port: int | None = None
    """Serve `/metrics` on this port of its own, without authentication (for a scraper that
    cannot send tokens; keep the port private). Unset: `/metrics` on the API, viewer role."""

    # admin console
    console: bool = True
    """Serve the admin web console at `/ui` (same port and authentication as the API)."""
    console_kubeconfig: Path | None = None
    """A cluster whose operator-mode resources (Kyma, Manifest) the console shows, read only.
    Unset: the console has no Kyma view."""

    # responses
    public_url: str = ""
    """Base URL clients reach this API at (for `statusURL`); default: the request's own."""
    ready_timeout: float = 5.0

    def check_auth_mode(self) -> None:
        """`auth=static`/`oidc` insist on their source (ApiConfigError when it is missing)."""
        if self.auth == "static" and self.tokens_file is None:
            raise ApiConfigError("auth=static needs tokens_file")
        if self.auth == "oidc" and not self.oidc_issuer:
            raise ApiConfigError("auth=oidc needs oidc_issuer and oidc_audience")
