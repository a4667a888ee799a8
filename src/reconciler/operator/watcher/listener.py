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

from reconciler.model.values import MAX_VALUE_DEPTH, nesting_depth
from reconciler.operator.clusters.control import ControlPlane
from reconciler.operator.watcher.ca import CertificateAuthority
from reconciler.operator.watcher.events import RemoteEvent, RemoteEvents
from reconciler.operator.watcher.limits import RefusalLog, RuntimeBuckets, retry_after
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


def reports_for(
    kyma: dict[str, Any], runtime: str, kyma_namespace: str, watched: str | None
) -> str | None:
    """None when `runtime` may report for `kyma`, else why not: the Kyma is in the namespace
    the operator watches (`watched`, None: all), and either its runtime-id label is `runtime`
    or, unlabelled, it is named `runtime` in `kyma_namespace` (an unlabelled Kyma of that name
    elsewhere is someone else's)."""
    meta = kyma.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    if watched and namespace != watched:
        return "the Kyma is not managed by this operator"
    label = (meta.get("labels") or {}).get(RUNTIME_ID)
    if label is not None:
        return None if label == runtime else "the Kyma belongs to another runtime"
    if meta.get("name") != runtime:
        return "the Kyma belongs to another runtime"
    if namespace != kyma_namespace:
        return f"an unlabelled Kyma counts only in {kyma_namespace}"
    return None


def _parse(raw: bytes) -> WatchEvent | str:
    """The event, or why not (naming the field)."""
    try:
        data = json.loads(raw)
    except RecursionError:
        return f"body: nested more than {MAX_VALUE_DEPTH} levels deep"
    except (ValueError, UnicodeDecodeError):
        return "body: not a JSON object"
    if nesting_depth(data) > MAX_VALUE_DEPTH:
        return f"body: nested more than {MAX_VALUE_DEPTH} levels deep"
    try:
        return WatchEvent.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        where = ".".join(str(p) for p in errors[0]["loc"]) if errors else "body"
        return f"{where}: {errors[0]['msg'] if errors else 'not a JSON object'}"


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
    settings: WatcherSettings,
    control: ControlPlane,
    events: RemoteEvents,
    watched: str | None = None,
) -> FastAPI:
    """The listener's routes; `watched`: the one namespace the operator watches (None: all)."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    buckets = RuntimeBuckets(settings.events_rate, settings.events_burst)
    refusals = RefusalLog(settings.refusal_window)
    app.state.refusals = refusals

    @app.post("/v2/{manager}/event")
    async def event(manager: str, request: Request) -> JSONResponse:
        if manager != settings.manager:
            return _error(404, f"unknown manager {manager[:64]!r}")
        runtime = _common_name(request.scope.get("state", {}).get(PEER_CERT))
        if not runtime:
            return _error(401, "a client certificate is required")
        refusals.tick()
        wait = buckets.take(runtime)
        if wait > 0:
            refusals.refused(runtime, 429, reason="rate limit")
            answer = _error(429, f"runtime {runtime} sends too many events: slow down")
            answer.headers["Retry-After"] = retry_after(wait)
            return answer
        raw = await _read_limited(request, settings.max_body)
        if raw is None:
            return _error(413, f"the event is larger than {settings.max_body} bytes")
        parsed = _parse(raw)
        if isinstance(parsed, str):
            return _error(400, parsed)
        owner = parsed.owner or ObjectKey(namespace=settings.kyma_namespace, name=runtime)
        kyma = await control.get("Kyma", owner.namespace, owner.name)
        reason = (
            "no such Kyma"
            if kyma is None
            else reports_for(kyma, runtime, settings.kyma_namespace, watched)
        )
        if reason is not None:
            refusals.refused(
                runtime, 403, kyma=owner.name, namespace=owner.namespace, reason=reason
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
        watched: str | None = None,
    ) -> None:
        self.settings = settings
        self.ca = ca
        self.app = create_listener_app(settings, control, events, watched)
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
            self.app.state.refusals.flush()
