"""The API served for real: `server_config` (what `mothership serve` runs) over a started engine,
on a free local port, with TLS and optionally mutual TLS; clients with or without a client
certificate. For tests of what only a real TLS connection shows (client certificates)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from reconciler.api import ApiSettings, create_app
from reconciler.api.app import planner_validator
from reconciler.api.server import server_config
from reconciler.devcluster.ports import free_ports
from reconciler.mothership.engine import Engine
from reconciler.mothership.invoker import Invoker
from reconciler.mothership.planner import Planner
from reconciler.util.polling import poll_until
from tests.api.pki import Pair, TestCa
from tests.api.support import accept_kubeconfig, engine_settings, noop_invoker, quiet_audit


@dataclass
class Served:
    engine: Engine
    url: str
    ca: TestCa

    def client(self, pair: Pair | None = None, **kwargs: Any) -> httpx.AsyncClient:
        """A client trusting the test CA, presenting `pair` as its certificate if given."""
        context = ssl.create_default_context(cafile=str(self.ca.file))
        if pair is not None:
            context.load_cert_chain(str(pair.cert), str(pair.key))
        return httpx.AsyncClient(base_url=self.url, verify=context, **kwargs)


@asynccontextmanager
async def served_api(
    directory: Path,
    ca: TestCa,
    settings: ApiSettings,
    *,
    invoker: Callable[[Planner], Invoker] = noop_invoker,
    **engine_overrides: Any,
) -> AsyncIterator[Served]:
    """A real engine (SQLite under `directory`) and the API served over TLS on 127.0.0.1."""
    server_pair = ca.server()
    async with Engine(
        engine_settings(directory / "data", **engine_overrides), invoker=invoker
    ) as engine:
        app = create_app(
            engine.service,
            settings=settings,
            check_kubeconfig=accept_kubeconfig,
            validate_spec=planner_validator(engine.planner, settings),
            audit=quiet_audit(),
            metrics=engine.metrics.registry,
        )
        (port,) = free_ports(1)
        config = server_config(
            app,
            settings,
            host="127.0.0.1",
            port=port,
            cert_file=server_pair.cert,
            key_file=server_pair.key,
        )
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve())

        async def started() -> bool:
            if task.done():
                task.result()  # the server failed to start: raise its error
            return server.started

        try:
            await poll_until(started, timeout=30, what="the API server to listen")
            yield Served(engine, f"https://127.0.0.1:{port}", ca)
        finally:
            server.should_exit = True
            await task
