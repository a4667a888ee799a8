"""A served mothership for browser tests: a real engine and the API app (console included) under
uvicorn on a loopback port, in a thread with its own event loop, so a test can drive Debian's
Chromium with Playwright's synchronous API while the engine runs.

`ServedConsole.call(fn)` runs `await fn(engine)` on the server's loop and returns the result
(set up clusters, read the store). Chromium comes from `reconciler.devcluster.chromium`
(installed from Debian's package when missing); Playwright's own browser download is not used.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import uvicorn

from reconciler.api import ApiSettings, create_app
from reconciler.devcluster.ports import free_ports
from reconciler.mothership.engine import Engine
from reconciler.mothership.invoker import Invoker
from reconciler.mothership.planner import Planner
from tests.api.support import accept_kubeconfig, engine_settings, noop_invoker, quiet_audit

T = TypeVar("T")


@dataclass
class ServedConsole:
    url: str
    loop: asyncio.AbstractEventLoop
    engine: Engine
    stop: Callable[[], None] = field(repr=False)

    def call(self, fn: Callable[[Engine], Awaitable[T]], timeout: float = 120) -> T:
        async def run() -> T:
            return await fn(self.engine)

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout)


@contextmanager
def served_console(
    directory: Path,
    settings: ApiSettings,
    *,
    invoker: Callable[[Planner], Invoker] = noop_invoker,
    run_loops: bool = True,
    **engine_overrides: Any,
) -> Iterator[ServedConsole]:
    (port,) = free_ports(1)
    ready: Future[ServedConsole] = Future()
    stopping = threading.Event()

    async def serve() -> None:
        async with Engine(
            engine_settings(directory / "data", **engine_overrides),
            invoker=invoker,
            run_loops=run_loops,
        ) as engine:
            app = create_app(
                engine.service,
                settings=settings,
                check_kubeconfig=accept_kubeconfig,
                audit=quiet_audit(),
            )
            config = uvicorn.Config(
                app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"
            )
            server = uvicorn.Server(config)
            task = asyncio.create_task(server.serve())
            while not server.started:
                if task.done():
                    task.result()
                await asyncio.sleep(0.02)
            loop = asyncio.get_running_loop()

            def stop() -> None:
                server.should_exit = True

            ready.set_result(ServedConsole(f"http://127.0.0.1:{port}", loop, engine, stop))
            await task

    def run() -> None:
        try:
            asyncio.run(serve())
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
        finally:
            stopping.set()

    thread = threading.Thread(target=run, name="served-console", daemon=True)
    thread.start()
    served = ready.result(timeout=120)
    try:
        yield served
    finally:
        served.loop.call_soon_threadsafe(served.stop)
        stopping.wait(60)
        thread.join(60)
