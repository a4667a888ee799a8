"""The watcher: a validating admission webhook in a remote cluster that reports changes to the
operator's listener (`reconciler operator watcher serve`).

The apiserver calls `POST /validate/<manager>` with an AdmissionReview (`admission.k8s.io/v1`,
or `v1beta1` as Kubernetes 1.20 may send); the answer always allows (the webhook is registered
with `failurePolicy: Ignore` too: a watcher that is down never blocks the cluster) and echoes the
review's version and uid. The report to the listener is sent after the answer, by a background
sender (a bounded queue: a burst never delays the apiserver; a full queue drops and logs), as
`POST <listener>/v2/<manager>/event` with the original's `WatchEvent` body.

Mutual TLS: the Secret the operator writes into this cluster (`tls.crt`, `tls.key`, `ca.crt`)
holds the certificate the webhook serves with and presents to the listener (CN = the runtime
id), and the operator's CA, which both the apiserver (caBundle) and this client trust. The Secret
is read through the Kubernetes API and read again every `refresh` seconds: a rotated
certificate is served to new connections and used for the next report without a restart.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from reconciler.kube.client import KubeClient
from reconciler.observability.logging import get_logger
from reconciler.operator.watcher.serving import Server
from reconciler.util.backoff import delays

QUEUE_SIZE = 1000
ATTEMPTS = 3


@dataclass(frozen=True)
class WatcherConfig:
    listener: str
    """Base URL of the operator's listener (`https://host:port`)."""
    manager: str
    secret_namespace: str
    secret_name: str
    owner: tuple[str, str] | None = None
    """The control-plane Kyma (namespace, name) reported as the events' owner."""
    refresh: float = 30.0


@dataclass(frozen=True)
class Credentials:
    cert: bytes
    key: bytes
    ca: bytes


def _write_private(directory: Path, credentials: Credentials) -> tuple[Path, Path]:
    cert, key = directory / "tls.crt", directory / "tls.key"
    cert.write_bytes(credentials.cert)
    key.write_bytes(credentials.key)
    return cert, key


def load_into(context: ssl.SSLContext, credentials: Credentials) -> None:
    """Load a certificate and key into `context` (`ssl` reads them only from files)."""
    with tempfile.TemporaryDirectory(prefix="watcher-tls-") as directory:
        context.load_cert_chain(*_write_private(Path(directory), credentials))


def client_context(credentials: Credentials) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=credentials.ca.decode())
    load_into(context, credentials)
    return context


def event_of(review: dict[str, Any], owner: tuple[str, str] | None) -> dict[str, Any] | None:
    """The `WatchEvent` of one admission request (None when it names no object)."""
    request = review.get("request") or {}
    kind = request.get("kind") or {}
    name = request.get("name") or ((request.get("object") or {}).get("metadata") or {}).get("name")
    if not name or not kind.get("kind"):
        return None
    event: dict[str, Any] = {
        "watched": {"namespace": request.get("namespace") or "", "name": name},
        "watchedGvk": {
            "group": kind.get("group") or "",
            "version": kind.get("version") or "",
            "kind": kind["kind"],
        },
    }
    if owner is not None:
        event["owner"] = {"namespace": owner[0], "name": owner[1]}
    return event


class Watcher:
    def __init__(self, config: WatcherConfig, kube: KubeClient) -> None:
        self.config = config
        self.kube = kube
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(QUEUE_SIZE)
        self.credentials: Credentials | None = None
        self._client: httpx.AsyncClient | None = None
        self._server_context: ssl.SSLContext | None = None
        self._log = get_logger(part="watcher")
        self.app = self._app()

    def _app(self) -> FastAPI:
        app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)

        @app.get("/healthz")
        async def healthz() -> dict[str, str]:
            return {"status": "ok"}

        @app.post("/validate/{manager}")
        async def validate(manager: str, request: Request) -> JSONResponse:
            try:
                review = await request.json()
            except ValueError:
                return JSONResponse({"error": "body: not a JSON AdmissionReview"}, 400)
            if not isinstance(review, dict):
                return JSONResponse({"error": "body: not a JSON AdmissionReview"}, 400)
            uid = str((review.get("request") or {}).get("uid") or "")
            if manager == self.config.manager:
                event = event_of(review, self.config.owner)
                if event is not None:
                    try:
                        self.queue.put_nowait(event)
                    except asyncio.QueueFull:
                        self._log.warning("event dropped: queue full", size=QUEUE_SIZE)
            return JSONResponse(
                {
                    "apiVersion": review.get("apiVersion") or "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "response": {"uid": uid, "allowed": True},
                }
            )

        return app

    async def read_credentials(self) -> Credentials:
        config = self.config
        secret = await self.kube.request(
            "GET", f"/api/v1/namespaces/{config.secret_namespace}/secrets/{config.secret_name}"
        )
        data = secret.get("data") or {}
        return Credentials(*(base64.b64decode(data[k]) for k in ("tls.crt", "tls.key", "ca.crt")))

    async def refresh(self) -> bool:
        """Read the Secret; take a changed certificate into use. True when it changed."""
        credentials = await self.read_credentials()
        if credentials == self.credentials:
            return False
        self.credentials = credentials
        if self._server_context is not None:
            load_into(self._server_context, credentials)
        old, self._client = (
            self._client,
            httpx.AsyncClient(verify=client_context(credentials), timeout=5.0),
        )
        if old is not None:
            await old.aclose()
        return True

    async def _keep_fresh(self) -> None:
        while True:
            await asyncio.sleep(self.config.refresh)
            try:
                if await self.refresh():
                    self._log.info("certificate renewed")
            except Exception as exc:  # keep the current one; say why
                self._log.warning("cannot read the certificate Secret", error=str(exc))

    async def _send(self, event: dict[str, Any]) -> None:
        url = f"{self.config.listener.rstrip('/')}/v2/{self.config.manager}/event"
        waits = delays(0.2)
        for _ in range(ATTEMPTS):
            assert self._client is not None
            try:
                response = await self._client.post(url, json=event)
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 500:
                    if response.status_code >= 400:
                        self._log.warning("listener refused the event", status=response.status_code)
                    return
                problem = f"status {response.status_code}"
            await asyncio.sleep(next(waits))
        self._log.warning("event not delivered", error=problem, kind=event["watchedGvk"]["kind"])

    async def _sender(self) -> None:
        while True:
            event = await self.queue.get()
            await self._send(event)

    async def serve(self, host: str, port: int, started: asyncio.Event | None = None) -> None:
        """Serve the webhook (HTTPS with the Secret's certificate) until cancelled."""
        await self.refresh()
        assert self.credentials is not None
        with tempfile.TemporaryDirectory(prefix="watcher-tls-") as directory:
            cert, key = _write_private(Path(directory), self.credentials)
            config = uvicorn.Config(
                self.app,
                host=host,
                port=port,
                log_config=None,
                access_log=False,
                ssl_certfile=str(cert),
                ssl_keyfile=str(key),
            )
            config.load()
        self._server_context = config.ssl
        server = Server(config)
        tasks = [
            asyncio.create_task(server.serve()),
            asyncio.create_task(self._sender()),
            asyncio.create_task(self._keep_fresh()),
        ]
        up = asyncio.create_task(server.up.wait())
        try:
            await asyncio.wait([up, tasks[0]], return_when=asyncio.FIRST_COMPLETED)
            if started is not None and server.up.is_set():
                started.set()
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            server.should_exit = True
            up.cancel()
            for task in tasks[1:]:
                task.cancel()
            await asyncio.gather(up, *tasks, return_exceptions=True)
            if self._client is not None:
                await self._client.aclose()
        for task in tasks:
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
