"""Settings of the external REST API (env prefix `RECONCILER_API_`, or passed in by the caller).

Authentication is never off by accident: `auth` must name a mode, or one of the token file and
the OIDC issuer must be given (which picks the mode); otherwise the app refuses to start.
`auth="none"` is the only way to run without tokens, and it says so in the docs and logs.
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
    """`static` (token file), `oidc` (JWTs), `none` (no checks: everyone is admin). Unset: the
    mode follows from `tokens_file` / `oidc_issuer`; with neither the app refuses to start."""
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

    # component reconciler callbacks
    callback_token: str = Field(default="", repr=False)
    """Bearer token component reconcilers send on callbacks (empty: operator role needed)."""
    callback_orphan_timeout: float = 60.0
    """How long a `failed` operation waits for its component reconciler's next attempt."""

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

    # responses
    public_url: str = ""
    """Base URL clients reach this API at (for `statusURL`); default: the request's own."""
    ready_timeout: float = 5.0

    def auth_mode(self) -> AuthMode:
        if self.auth is not None:
            return self.auth
        if self.tokens_file is not None and self.oidc_issuer:
            raise ApiConfigError("both tokens_file and oidc_issuer are set: choose `auth`")
        if self.tokens_file is not None:
            return "static"
        if self.oidc_issuer:
            return "oidc"
        raise ApiConfigError(
            "no API authentication configured: set tokens_file (static tokens), oidc_issuer"
            " (OIDC/JWT) or, to run without authentication, auth=none"
        )
