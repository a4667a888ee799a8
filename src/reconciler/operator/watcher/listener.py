"""The operator's listener: remote watchers `POST /v2/<manager>/event` here, over mutual TLS.

The body is the original's `WatchEvent`: `{"watched": {"namespace", "name"}, "watchedGvk":
{"group", "version", "kind"}}` (keys in any case: the original's Go encoding writes `Namespace`
and `Name`), optionally `"owner": {"namespace", "name"}`, the control-plane Kyma. Without an
owner the Kyma is the one named by the runtime id in `kyma_namespace` (the original's
convention). The sender is the CN of its verified client certificate; an event naming a Kyma
whose runtime id (label `kyma-project.io/runtime-id`, else its name) is another one is refused
with 403 and logged, as is an event for a Kyma that does not exist: a runtime may only wake its
own Kyma. The body is read up to `max_body` bytes (413 beyond) and checked field by field (400
naming the field). An accepted event is published on `RemoteEvents` before the answer.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import ssl
import tempfile
from pathlib import Path
from typing import Annotated, Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from reconciler.observability.logging import get_logger
from reconciler.operator.clusters.control import ControlPlane
from reconciler.operator.watcher.ca import CertificateAuthority
from reconciler.operator.watcher.events import RemoteEvent, RemoteEvents
from reconciler.operator.watcher.serving import Server
from reconciler.operator.watcher.settings import WatcherSettings
from reconciler.web.tls import PEER_CERT, PeerCertificateProtocol

RUNTIME_ID = "kyma-project.io/runtime-id"
"""Label of a Kyma naming its runtime (the CN of the runtime's certificate); default its name."""
LISTENER_VALIDITY_DAYS = 365

_NAME = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
Name = Annotated[str, Field(pattern=_NAME, max_length=253)]


def _lower_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k).lower(): _lower_keys(v) for k, v in value.items()}
    return value


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ObjectKey(_Model):
    namespace: Annotated[str, Field(pattern=r"^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)?$")] = ""
    name: Name


class Gvk(_Model):
    group: Annotated[str, Field(pattern=r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)?$")] = ""
    version: Annotated[str, Field(pattern=r"^[a-z0-9]{1,63}$")]
    kind: Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9]{0,62}$")]


class WatchEvent(_Model):
    watched: ObjectKey
    watchedgvk: Gvk
    owner: ObjectKey | None = None

    @model_validator(mode="before")
    @classmethod
    def _any_case(cls, data: Any) -> Any:
        return _lower_keys(data)


def runtime_of(kyma: dict[str, Any]) -> str:
    meta = kyma.get("metadata") or {}
    return str((meta.get("labels") or {}).get(RUNTIME_ID) or meta.get("name") or "")


def _common_name(cert: dict[str, Any] | None) -> str | None:
    for rdn in (cert or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _read_limited(request: Request, limit: int) -> bytes | None:
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


def create_listener_app(
    settings: WatcherSettings, control: ControlPlane, events: RemoteEvents
) -> FastAPI:
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    log = get_logger(part="watcher-listener")

    @app.post("/v2/{manager}/event")
    async def event(manager: str, request: Request) -> JSONResponse:
        if manager != settings.manager:
            return _error(404, f"unknown manager {manager[:64]!r}")
        runtime = _common_name(request.scope.get("state", {}).get(PEER_CERT))
        if not runtime:
            return _error(401, "a client certificate is required")
        raw = await _read_limited(request, settings.max_body)
        if raw is None:
            return _error(413, f"the event is larger than {settings.max_body} bytes")
        try:
            parsed = WatchEvent.model_validate(json.loads(raw))
        except (ValueError, UnicodeDecodeError) as exc:
            errors = exc.errors() if isinstance(exc, ValidationError) else None
            where = ".".join(str(p) for p in errors[0]["loc"]) if errors else "body"
            problem = errors[0]["msg"] if errors else "not a JSON object"
            return _error(400, f"{where}: {problem}")
        owner = parsed.owner or ObjectKey(namespace=settings.kyma_namespace, name=runtime)
        kyma = await control.get("Kyma", owner.namespace, owner.name)
        if kyma is None or runtime_of(kyma) != runtime:
            reason = "no such Kyma" if kyma is None else "the Kyma belongs to another runtime"
            log.warning(
                "watcher event refused",
                runtime=runtime,
                kyma=owner.name,
                namespace=owner.namespace,
                reason=reason,
            )
            return _error(403, f"runtime {runtime} may not report for Kyma {owner.name}")
        events.publish(
            RemoteEvent(
                kyma_namespace=owner.namespace,
                kyma_name=owner.name,
                runtime_id=runtime,
                group=parsed.watchedgvk.group,
                version=parsed.watchedgvk.version,
                kind=parsed.watchedgvk.kind,
                namespace=parsed.watched.namespace,
                name=parsed.watched.name,
            )
        )
        return JSONResponse({})

    return app


class Listener:
    """The listener's HTTPS server (client certificates of the CA required)."""

    def __init__(
        self,
        settings: WatcherSettings,
        ca: CertificateAuthority,
        control: ControlPlane,
        events: RemoteEvents,
    ) -> None:
        self.settings = settings
        self.ca = ca
        self.app = create_listener_app(settings, control, events)
        self._server: Server | None = None

    @property
    def port(self) -> int:
        """The bound port (the configured one, or the one chosen for port 0)."""
        if self._server is None:
            raise RuntimeError("the listener is not serving")
        return self._server.port

    async def serve(self, started: asyncio.Event | None = None) -> None:
        """Serve until cancelled."""
        pair = self.ca.issue(
            "reconciler-watcher-listener",
            self.settings.listener_hosts,
            dt.timedelta(days=LISTENER_VALIDITY_DAYS),
        )
        with tempfile.TemporaryDirectory(prefix="watcher-listener-") as directory:
            files = Path(directory)
            (files / "tls.crt").write_bytes(pair.cert)
            (files / "tls.key").write_bytes(pair.key)
            (files / "ca.crt").write_bytes(self.ca.cert_pem)
            config = uvicorn.Config(
                self.app,
                host=self.settings.listener_host,
                port=self.settings.listener_port,
                log_config=None,
                access_log=False,
                http=PeerCertificateProtocol,
                ssl_certfile=str(files / "tls.crt"),
                ssl_keyfile=str(files / "tls.key"),
                ssl_ca_certs=str(files / "ca.crt"),
                ssl_cert_reqs=ssl.CERT_REQUIRED,
            )
            config.load()  # reads the files: they may go once it has
        self._server = server = Server(config)
        task = asyncio.create_task(server.serve())
        try:
            up = asyncio.create_task(server.up.wait())
            await asyncio.wait([up, task], return_when=asyncio.FIRST_COMPLETED)
            up.cancel()
            if started is not None:
                started.set()
            await asyncio.shield(task)
        finally:
            server.should_exit = True
            await asyncio.gather(task, return_exceptions=True)
