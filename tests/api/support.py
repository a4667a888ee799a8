"""Building blocks for API tests: engines with a no-op invoker, tokens (static and signed JWTs),
cluster bodies, a database snapshot for "nothing was written" checks, and the reference spec.

Everything is local: JWTs are signed with an RSA key generated here and verified against a
JWKS built from it; the reference OpenAPI document is read from `../shared/reference`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jwt
import sqlalchemy as sa
import yaml
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI

from reconciler.api import ApiSettings, create_app
from reconciler.api.auth import Role
from reconciler.kube.probe import KubeconfigCheck
from reconciler.model.cluster import ClusterSpec, ClusterState
from reconciler.model.operation import Operation
from reconciler.mothership.engine import Engine
from reconciler.mothership.invoker import CallableInvoker, Invoker, InvokeResult
from reconciler.mothership.planner import Planner
from reconciler.mothership.settings import Settings
from reconciler.observability.audit import AuditLog
from reconciler.store.tables import metadata

REPO_ROOT = Path(__file__).resolve().parents[2]
REFERENCE = REPO_ROOT / ".." / "shared" / "reference" / "reconciler-openapi" / "external_api.yaml"
ISSUER = "https://issuer.test"
AUDIENCE = "reconciler"
KUBECONFIG = "apiVersion: v1\nkind: Config\n"
SECRET_TOKEN = "s3cr3t-kube-token-7f1d2c9a"


def secret_kubeconfig(server: str = "https://127.0.0.1:1") -> str:
    """A kubeconfig whose credentials are easy to look for in output."""
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": server}}],
            "users": [{"name": "u", "user": {"token": SECRET_TOKEN}}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "x",
        }
    )


def cluster_body(
    runtime_id: str,
    *,
    kubeconfig: str = KUBECONFIG,
    components: tuple[str, ...] = ("cluster-essentials", "istio"),
    kubeconfig_key: str = "kubeconfig",
) -> dict[str, Any]:
    """A request body as the broker sends it."""
    return {
        "runtimeID": runtime_id,
        "runtimeInput": {"name": runtime_id, "description": "api test"},
        "kymaConfig": {
            "version": "2.4.0",
            "profile": "evaluation",
            "administrators": ["admin@example.com"],
            "components": [
                {
                    "component": name,
                    "namespace": "kyma-system",
                    "URL": f"file:///charts/{name}",
                    "version": "1.0.0",
                    "configuration": [
                        {"key": "replicas", "value": 1, "secret": False},
                        {"key": "password", "value": "hunter2-secret-value", "secret": True},
                    ],
                }
                for name in components
            ],
        },
        "metadata": {
            "globalAccountID": "ga",
            "subAccountID": "sa",
            "serviceID": "svc",
            "servicePlanID": "plan",
            "servicePlanName": "azure",
            "shootName": f"shoot-{runtime_id}",
            "instanceID": "inst",
            "region": "local",
        },
        kubeconfig_key: kubeconfig,
    }


def engine_settings(directory: Path, **overrides: Any) -> Settings:
    base: dict[str, Any] = {
        "data_dir": directory,
        "sweep_interval": 0.2,
        "bookkeeping_interval": 0.2,
        "retry_backoff": 0.05,
        "max_retries": 1,
        "reconcile_interval": 3600,
        "metrics_interval": 0.2,
    }
    return Settings(**{**base, **overrides})


def noop_invoker(_planner: Planner) -> Invoker:
    async def invoke(_op: Operation, _state: ClusterState) -> InvokeResult:
        return InvokeResult(True)

    return CallableInvoker(invoke)


class Gate:
    """An invoker that holds one component until released (to see operations still `new`)."""

    def __init__(self, component: str) -> None:
        self.component = component
        self.release = asyncio.Event()
        self.entered = asyncio.Event()

    def factory(self, _planner: Planner) -> Invoker:
        async def invoke(op: Operation, _state: ClusterState) -> InvokeResult:
            if op.component == self.component:
                self.entered.set()
                await self.release.wait()
            return InvokeResult(True)

        return CallableInvoker(invoke)


async def accept_kubeconfig(_: str) -> None:
    """A kubeconfig check for engines with a no-op invoker (no cluster to contact)."""


# ------------------------------------------------------------------------------ tokens
@dataclass
class Tokens:
    """Static tokens per role, written to a token file."""

    path: Path
    by_role: dict[Role, str] = field(default_factory=dict)

    @classmethod
    def write(cls, directory: Path) -> Tokens:
        by_role = {role: f"{role.label}-{uuid.uuid4().hex}" for role in Role if role}
        data = {
            token: {"subject": f"{role.label}-user", "role": role.label}
            for role, token in by_role.items()
        }
        path = directory / "tokens.yaml"
        path.write_text(yaml.safe_dump(data))
        return cls(path, by_role)

    def header(self, role: Role) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.by_role[role]}"}


@dataclass
class Issuer:
    """An OIDC issuer stand-in: an RSA key, its JWKS, and signed tokens."""

    key: rsa.RSAPrivateKey = field(
        default_factory=lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048)
    )
    kid: str = "key-1"

    def jwks(self) -> dict[str, Any]:
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**public, "kid": self.kid, "use": "sig", "alg": "RS256"}]}

    def write_jwks(self, directory: Path) -> Path:
        path = directory / "jwks.json"
        path.write_text(json.dumps(self.jwks()))
        return path

    def token(
        self, *, expires_in: float = 300, headers: dict[str, Any] | None = None, **claims: Any
    ) -> str:
        now = int(time.time())
        payload = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": "someone",
            "iat": now,
            "exp": now + expires_in,
        }
        payload.update(claims)
        return jwt.encode(
            payload, self.key, algorithm="RS256", headers={"kid": self.kid, **(headers or {})}
        )

    def header(self, role: Role | None, **claims: Any) -> dict[str, str]:
        if role is not None:
            claims.setdefault("role", role.label)
        return {"Authorization": f"Bearer {self.token(**claims)}"}


def oidc_settings(jwks_file: Path, **overrides: Any) -> ApiSettings:
    base: dict[str, Any] = {
        "auth": "oidc",
        "oidc_issuer": ISSUER,
        "oidc_audience": AUDIENCE,
        "oidc_jwks_file": jwks_file,
    }
    return ApiSettings(**{**base, **overrides})


# ------------------------------------------------------------------------------ apps
@dataclass
class Api:
    engine: Engine
    app: FastAPI
    client: httpx.AsyncClient
    audit_file: Path
    audit: AuditLog

    def audit_lines(self) -> list[dict[str, Any]]:
        if not self.audit_file.exists():
            return []
        return [json.loads(line) for line in self.audit_file.read_text().splitlines()]


@asynccontextmanager
async def running_api(
    directory: Path,
    settings: ApiSettings,
    *,
    invoker: Callable[[Planner], Invoker] = noop_invoker,
    run_loops: bool = True,
    check_kubeconfig: KubeconfigCheck | None = accept_kubeconfig,
    validate_spec: Callable[[ClusterSpec], Awaitable[None]] | None = None,
    spec_validator: Callable[[Engine], Callable[[ClusterSpec], Awaitable[None]]] | None = None,
    headers: dict[str, str] | None = None,
    **engine_overrides: Any,
) -> AsyncIterator[Api]:
    """A real engine (SQLite under `directory`) with the API in front, and a client for it.
    `spec_validator` builds the upsert check from the started engine (e.g. its planner)."""
    audit_file = directory / "audit" / "audit.log"
    audit = AuditLog.to_file(audit_file)
    engine = Engine(
        engine_settings(directory / "data", **engine_overrides),
        invoker=invoker,
        run_loops=run_loops,
    )
    async with engine:
        app = create_app(
            engine.service,
            settings=settings,
            check_kubeconfig=check_kubeconfig,
            validate_spec=spec_validator(engine) if spec_validator else validate_spec,
            audit=audit,
            metrics=engine.metrics.registry,
        )
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://mothership.test", headers=headers
        ) as client:
            try:
                yield Api(engine, app, client, audit_file, audit)
            finally:
                audit.close()
                # ASGITransport runs no lifespan: close what the app's shutdown would
                await app.state.api.console_clients.aclose()


def quiet_audit() -> AuditLog:
    return AuditLog.to_stream(io.StringIO())


async def snapshot(engine: Engine) -> dict[str, Any]:
    """Row counts of every table and the cluster heads: equal snapshots = nothing written."""
    assert engine.db is not None
    state: dict[str, Any] = {}
    async with engine.db.connect() as conn:
        for table in metadata.sorted_tables:
            state[table.name] = (
                await conn.execute(sa.select(sa.func.count()).select_from(table))
            ).scalar_one()
        heads = metadata.tables["cluster_heads"]
        state["heads"] = [tuple(row) for row in (await conn.execute(sa.select(heads))).all()]
    return state


def reference_spec() -> dict[str, Any] | None:
    if not REFERENCE.is_file():
        return None
    data: dict[str, Any] = yaml.safe_load(REFERENCE.read_text())
    return data


def utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)
