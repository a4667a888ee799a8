"""A stand-in mothership for component reconciler tests: records callbacks over real HTTP.

`CallbackReceiver` serves `POST /v1/operations/{schedulingID}/callback/{correlationID}` with
uvicorn on a free 127.0.0.1 port. Like the mothership it answers 400 once an operation's final
callback was taken, and it can refuse the first N final callbacks with 503 to exercise delivery
retries. `task_body` builds a `POST /v1/run` body; `running_service` runs the app in-process,
`serve_process` runs `reconciler component serve` as a real process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from reconciler.cli import main
from reconciler.devcluster.ports import free_ports
from reconciler.devcluster.processes import tied_to_parent
from reconciler.model.remote import CALLBACK_SECRET_HEADER, CallbackMessage, CallbackStatus
from reconciler.remote.app import create_app
from reconciler.remote.settings import ComponentSettings
from reconciler.util.polling import poll_until

TOKEN = "s3cret-shared-token"
FINAL = (CallbackStatus.SUCCESS, CallbackStatus.ERROR)


@dataclass
class Received:
    correlation_id: str
    message: CallbackMessage
    authorization: str
    answered: int
    secret: str = ""
    """The `X-Callback-Secret` header."""
    at: float = field(default_factory=time.monotonic)


@dataclass
class CallbackReceiver:
    url: str = ""
    refuse_final: int = 0
    """Answer this many final callbacks with 503 before taking one."""
    received: list[Received] = field(default_factory=list)
    by_operation: dict[str, list[Received]] = field(default_factory=dict)
    raw_bodies: list[str] = field(default_factory=list)
    closed: set[str] = field(default_factory=set)
    """Operations finalised by the mothership itself: their callbacks answer 400."""

    def callback_url(self, correlation_id: str) -> str:
        return f"{self.url}/v1/operations/{uuid.uuid4()}/callback/{correlation_id}"

    def of(self, correlation_id: str) -> list[Received]:
        return list(self.by_operation.get(correlation_id, []))

    def statuses(self, correlation_id: str) -> list[CallbackStatus]:
        return [r.message.status for r in self.of(correlation_id) if r.answered < 300]

    def final(self, correlation_id: str) -> CallbackMessage | None:
        done = [r.message for r in self.of(correlation_id) if r.message.status in FINAL]
        accepted = [r for r in self.of(correlation_id) if r.answered == 200]
        return done[-1] if done and accepted and accepted[-1].message.status in FINAL else None

    async def wait_final(self, correlation_id: str, timeout: float = 60) -> CallbackMessage:
        async def check() -> CallbackMessage | None:
            return self.final(correlation_id)

        return await poll_until(check, timeout=timeout, what=f"final callback of {correlation_id}")

    async def wait_status(
        self, correlation_id: str, status: CallbackStatus, timeout: float = 30
    ) -> None:
        async def check() -> bool:
            return status in self.statuses(correlation_id)

        await poll_until(check, timeout=timeout, what=f"{status} callback of {correlation_id}")

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/operations/{scheduling_id}/callback/{correlation_id}")
        async def callback(
            scheduling_id: str, correlation_id: str, request: Request
        ) -> JSONResponse:
            body = (await request.body()).decode()
            self.raw_bodies.append(body)
            message = CallbackMessage.model_validate_json(body)
            code = 200
            if correlation_id in self.closed or self.final(correlation_id) is not None:
                code = 400
            elif message.status in FINAL and self.refuse_final > 0:
                self.refuse_final -= 1
                code = 503
            auth = request.headers.get("authorization", "")
            secret = request.headers.get(CALLBACK_SECRET_HEADER, "")
            received = Received(correlation_id, message, auth, code, secret=secret)
            self.received.append(received)
            self.by_operation.setdefault(correlation_id, []).append(received)
            return JSONResponse({} if code == 200 else {"error": "no"}, status_code=code)

        return app


@asynccontextmanager
async def serve_app(app: FastAPI, **tls: Any) -> AsyncIterator[str]:
    """Serve `app` on a free 127.0.0.1 port for the block; yields its base URL.

    `tls` are uvicorn's `ssl_*` options (HTTPS when `ssl_certfile` is among them)."""
    (port,) = free_ports(1)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off", **tls)
    )
    task = asyncio.create_task(server.serve())
    try:

        async def started() -> bool:
            if task.done():
                task.result()
            return server.started

        await poll_until(started, timeout=10, what="the callback receiver to listen")
        scheme = "https" if tls.get("ssl_certfile") else "http"
        yield f"{scheme}://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


def serve_command() -> list[str]:
    """`reconciler component serve`, or the same typer app directly until main registers it."""
    if "component" in main.LAZY_COMMANDS:
        return [str(Path(sys.executable).parent / "reconciler"), "component", "serve"]
    code = "from reconciler.cli.component import app; app()"
    return [sys.executable, "-c", code, "serve"]


@dataclass
class ServeProcess:
    """One `reconciler component serve` process (own process group, output in `log`)."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path

    async def live(self, verify: ssl.SSLContext | bool = True, timeout: float = 30) -> None:
        async with httpx.AsyncClient(base_url=self.url, verify=verify) as http:

            async def answers() -> bool:
                if self.process.poll() is not None:
                    raise AssertionError(
                        f"serve exited {self.process.returncode}:\n{self.log.read_text()}"
                    )
                with contextlib.suppress(httpx.TransportError):
                    return (await http.get("/health/live")).status_code == 200
                return False

            await poll_until(answers, timeout=timeout, what="reconciler component serve")

    async def exited(self, timeout: float = 30) -> int:
        async def status() -> int | None:
            return self.process.poll()

        return await poll_until(status, timeout=timeout, what="serve to exit")


@contextmanager
def serve_process(
    directory: Path, *options: str, env: dict[str, str] | None = None, scheme: str = "http"
) -> Iterator[ServeProcess]:
    """Start `serve` on a free port with the shared token; killed (group) on leaving."""
    (port,) = free_ports(1)
    token_file = directory / "token"
    token_file.write_text(TOKEN + "\n")
    log = directory / "serve.log"
    environment = {
        **os.environ,
        "RECONCILER_COMPONENT_HEARTBEAT_INTERVAL": "0.2",
        "RECONCILER_COMPONENT_CHARTS_CACHE": str(directory / "cache"),
        **(env or {}),
    }
    with log.open("wb") as output:
        process = subprocess.Popen(
            tied_to_parent(  # gone with a killed test run
                [*serve_command(), "--port", str(port), "--token-file", str(token_file), *options]
            ),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=environment,
            start_new_session=True,
        )
    try:
        yield ServeProcess(process, f"{scheme}://127.0.0.1:{port}", log)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@asynccontextmanager
async def running_service(
    settings: ComponentSettings,
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    """The service app with its lifespan running, and a client talking to it in-process."""
    app = create_app(settings)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://component",
            headers={"Authorization": f"Bearer {TOKEN}"},
        ) as client,
    ):
        yield app, client


def settings(tmp_path: Path, **changes: Any) -> ComponentSettings:
    base: dict[str, Any] = {
        "token": TOKEN,
        "heartbeat_interval": 0.2,
        "charts_cache": tmp_path / "chart-cache",
        "retry_delay": 0.1,
        "final_callback_grace": 10,
        "shutdown_timeout": 3,
    }
    return ComponentSettings(**{**base, **changes})


def task_body(
    *,
    chart: Path | str,
    namespace: str,
    kubeconfig: str,
    callback_url: str,
    component: str = "web",
    correlation_id: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "component": component,
        "namespace": namespace,
        "version": "1.0.0",
        "url": str(chart),
        "kubeconfig": kubeconfig,
        "callbackURL": callback_url,
        "correlationID": correlation_id or str(uuid.uuid4()),
        "componentConfiguration": {"maxRetries": 0},
        "timeout": 60,
        **extra,
    }
