"""One settings model for the mothership (env prefix `RECONCILER_`, optional YAML file).

Every default is safe for one machine: SQLite under the data directory, the in-process component
reconciler, intervals of seconds rather than the original's minutes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ByteSize, Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from reconciler.charts.sources import DEFAULT_MAX_CACHE_BYTES
from reconciler.errors import ReconcilerError
from reconciler.paths import cache_dir


def default_data_dir() -> Path:
    return Path.home() / ".local" / "share" / "reconciler"


class SettingsError(ReconcilerError):
    """The settings file is missing or invalid."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RECONCILER_", extra="forbid")

    data_dir: Path = Field(default_factory=default_data_dir)
    database_url: str = ""
    """Empty: SQLite file `<data_dir>/reconciler.db`. PostgreSQL: postgresql+asyncpg://..."""
    migrate_on_start: bool = True
    encryption_key_file: Path | None = None
    """Default `<data_dir>/encryption.key`, generated on first start."""

    # scheduling
    reconcile_interval: float = 300.0
    """Seconds after which a ready cluster is reconciled again (drift)."""
    sweep_interval: float = 5.0
    """Safety-net interval of the scheduler; changes wake it at once."""
    max_active_reconciliations: int = 500
    """Back-pressure: the scheduler starts no more runs while this many are active (all
    instances together), so the queue stays short however many clusters are due."""
    retry_interval: float = 60.0
    """Seconds before a `*_error_retryable` cluster is tried again."""

    # workers
    invoker: str = "inprocess"
    """`inprocess` (the core in this process), `remote` (component reconciler services, see
    `component_reconcilers`) or `import:package.module:factory`, a callable taking the Planner
    and returning an Invoker (benchmarks, tests, plug-ins)."""
    component_reconcilers: dict[str, str] = Field(default_factory=dict)
    """Component name -> base URL of its component reconciler; key `base` is the fallback."""
    callback_url: str = ""
    """This mothership's base URL as component reconcilers reach it (for callbacks)."""
    component_reconciler_token: str = Field(default="", repr=False)
    """Bearer token sent to component reconcilers and expected on their callbacks."""
    component_reconciler_ca_file: Path | None = None
    """CA bundle to verify component reconcilers' TLS certificates."""
    remote_attempts: int = 5
    """Tries to hand an operation to a busy/unavailable component reconciler per claim."""
    workers: int = 16
    """Operations processed at once by this instance."""
    api_pool_size: int = Field(default=10, ge=1)
    """Database connections of the REST API (twice that at peak), apart from the engine's own:
    readers of the API can never take the connections the scheduler, workers and bookkeeper
    need."""
    api_pool_timeout: float = Field(default=5.0, gt=0)
    """Seconds an API request waits for one of its connections before it is answered 503."""
    per_cluster: int = 4
    """At most this many operations of one cluster at once (fairness)."""
    max_retries: int = 3
    retry_backoff: float = 2.0
    heartbeat_interval: float = Field(default=5.0, gt=0)
    """Seconds between the heartbeats of an operation a worker of this instance runs."""
    orphan_timeout: float = Field(default=60.0, gt=0)
    """An operation without a heartbeat this long is declared orphaned and run again: at least
    twice `heartbeat_interval` (checked at start-up), so one late heartbeat is not a death."""
    bookkeeping_interval: float = 2.0
    operation_timeout: float = 600.0
    full_reconcile_after: float = Field(default=3600.0, gt=0)
    """Seconds after which a component whose inputs did not change is applied in full again
    (in-process invoker; the no-op fast path only checks drift it can see in metadata)."""
    full_reconcile_every: int = Field(default=0, ge=0)
    """On average every Nth reconciliation of a cluster applies every object (chosen by the
    reconciliation's id, so all instances and retries agree); 0: never by count."""
    metrics_interval: float = 5.0
    """How often the state metrics (cluster statuses, operations, pool) are refreshed."""

    # retention
    keep_reconciliations: int = 10
    reconciliation_retention_days: float = 7.0
    status_retention_days: float = 30.0
    cleaner_interval: float = 3600.0

    # component sets
    workspace: Path | None = None
    """Workspace used for every Kyma version not in `workspaces` (default: none)."""
    workspaces: dict[str, Path] = Field(default_factory=dict)
    prerequisites: list[str] = Field(
        default_factory=lambda: ["cluster-essentials", "istio", "certificates"]
    )
    charts_cache: Path = Field(default_factory=lambda: cache_dir() / "charts")
    charts_cache_max_bytes: ByteSize = Field(default=ByteSize(DEFAULT_MAX_CACHE_BYTES), gt=0)
    """Size limit of the chart cache (e.g. `2GiB`); least recently used charts are removed."""

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        """Refuse pairs that contradict each other rather than misbehave at run time."""
        if self.heartbeat_interval * 2 > self.orphan_timeout:
            raise ValueError(
                f"heartbeat_interval ({self.heartbeat_interval:g} s) must be at most half of "
                f"orphan_timeout ({self.orphan_timeout:g} s): otherwise an operation is "
                "declared orphaned (and run a second time) while its worker is alive"
            )
        return self

    def remote_problems(self) -> list[str]:
        """With `invoker=remote`: each setting this process needs for it that is missing or
        not a URL, named with its environment variable and config key (empty: complete, or
        another invoker). The callback token is the API's (`REMOTE_CALLBACK_TOKEN`)."""
        if self.invoker != "remote":
            return []
        problems = []
        urls = [u.strip() for v in self.component_reconcilers.values() for u in v.split(",")]
        if not any(urls):
            problems.append(
                "the component reconciler URL (RECONCILER_COMPONENT_RECONCILERS="
                '\'{"base": "http://host:8080"}\', config key component_reconcilers)'
            )
        elif not all(_http_url(u) for u in urls if u):
            problems.append(
                "component_reconcilers (RECONCILER_COMPONENT_RECONCILERS) must hold http(s) URLs"
            )
        if not self.component_reconciler_token:
            problems.append(
                "its token (RECONCILER_COMPONENT_RECONCILER_TOKEN, config key"
                " component_reconciler_token)"
            )
        if not self.callback_url:
            problems.append(
                "the callback URL component reconcilers reach this mothership at"
                " (RECONCILER_CALLBACK_URL, config key callback_url)"
            )
        elif not _http_url(self.callback_url):
            problems.append("callback_url (RECONCILER_CALLBACK_URL) must be an http(s) URL")
        return problems

    def sqlalchemy_url(self) -> str:
        if self.database_url:
            return self.database_url
        self.data_dir.mkdir(parents=True, exist_ok=True)
        return f"sqlite+aiosqlite:///{self.data_dir / 'reconciler.db'}"

    def key_file(self) -> Path:
        return self.encryption_key_file or self.data_dir / "encryption.key"

    def workspace_for(self, version: str) -> Path | None:
        return self.workspaces.get(version, self.workspace)

    @classmethod
    def load(cls, path: Path | None = None, **overrides: Any) -> Settings:
        """Settings from the environment, then the YAML file, then explicit overrides."""
        data: dict[str, Any] = read_mapping(path) if path is not None else {}
        data.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls(**data)
        except ValidationError as exc:
            raise SettingsError(f"invalid settings: {problems(exc)}") from None


def read_mapping(path: Path) -> dict[str, Any]:
    """The YAML mapping of a settings file (empty file: none); SettingsError otherwise."""
    try:
        loaded = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise SettingsError(f"settings file {path} does not exist") from None
    except OSError as exc:
        raise SettingsError(f"cannot read settings file {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise SettingsError(f"settings file {path} is not valid YAML: {exc}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise SettingsError(f"settings file {path} must hold a mapping")
    return {str(key): value for key, value in loaded.items()}


REMOTE_CALLBACK_TOKEN = (
    "the callback token component reconcilers send (RECONCILER_API_CALLBACK_TOKEN, config key"
    " api.callback_token; the same value as the component reconcilers'"
    " RECONCILER_COMPONENT_CALLBACK_TOKEN, which defaults to their RECONCILER_COMPONENT_TOKEN)"
)


def _http_url(text: str) -> bool:
    scheme, _, rest = text.partition("://")
    return scheme in ("http", "https") and bool(rest.strip("/"))


def problems(exc: ValidationError) -> str:
    """One line naming each invalid setting (never echoing values: some are secrets)."""
    parts = []
    for err in exc.errors(include_input=False):
        where = ".".join(str(p) for p in err["loc"])  # empty: a check across settings
        message = str(err["msg"]).removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)
