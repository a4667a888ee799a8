"""kopf as the operator's watcher, in a thread of its own.

kopf only watches here: each event of a watched resource is handed, as it came ({"type",
"object"}), to a callback in the operator's event loop; the controllers and their work queue
live there. kopf runs in a daemon thread with its own event loop because at exit it cancels every
task of its loop, which must not be the controllers'. Its stop is waited for at most a timeout: a
kopf that does not return is abandoned with every stack in the log, never waited for forever (a
daemon thread keeps no process alive).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kopf
from lightkube.config.models import User

from reconciler.kube.kubeconfig import load_kubeconfig
from reconciler.model.kube_object import Body
from reconciler.observability.logging import get_logger
from reconciler.util.stacks import dump_stacks

Callback = Callable[[Body, str | None], None]
"""Called in the operator's loop with an event's object and type (None: kopf's own listing)."""


@dataclass(frozen=True)
class Watched:
    group: str
    version: str
    plural: str
    labels: tuple[str, ...] = field(default=())
    """Only objects carrying these labels (any value)."""


def login_for(kubeconfig: Path | None) -> Callable[..., kopf.ConnectionInfo | None]:
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        # No kubeconfig: the same search as every other client here (the pod's service account
        # with KUBERNETES_SERVICE_HOST/PORT, then $KUBECONFIG, ~/.kube/config). Not kopf's own
        # service-account login: it names https://kubernetes.default.svc, which needs cluster
        # DNS. Called again on 401, so a rotated token file is read anew.
        config = load_kubeconfig(kubeconfig)
        cluster, user = config.cluster, config.user or User()
        token = user.token
        if user.token_file:  # a service account's (or kubeconfig `tokenFile`): rotated on disk
            token = Path(user.token_file).read_text().strip()
        return kopf.ConnectionInfo(
            server=cluster.server,
            ca_data=cluster.certificate_auth_data,
            ca_path=cluster.certificate_auth,
            insecure=cluster.insecure,
            certificate_data=user.client_cert_data,
            certificate_path=user.client_cert,
            private_key_data=user.client_key_data,
            private_key_path=user.client_key,
            token=token,
            scheme="Bearer" if token else None,
        )

    return login


def registry(
    kubeconfig: Path | None,
    loop: asyncio.AbstractEventLoop,
    callbacks: Mapping[Watched, Callback],
) -> kopf.OperatorRegistry:
    """kopf's handlers: they run in kopf's thread and hand each event to our loop.

    The event handlers are coroutines only so that kopf calls them in its loop: a plain function
    would cost a hop through kopf's thread pool for every event of the fleet."""
    result = kopf.OperatorRegistry()
    kopf.on.login(registry=result)(login_for(kubeconfig))
    for watched, callback in callbacks.items():

        async def handler(callback: Callback = callback, **event: Any) -> None:
            raw = event["event"]  # the watch event as it came: {"type", "object"}
            loop.call_soon_threadsafe(callback, raw["object"], raw.get("type"))

        labels = {label: kopf.PRESENT for label in watched.labels} or None
        kopf.on.event(
            watched.group, watched.version, watched.plural, labels=labels, registry=result
        )(handler)
    return result


class KopfThread:
    """kopf watching `namespace` (None: all) in a daemon thread, until `stop`."""

    def __init__(
        self,
        kubeconfig: Path | None,
        namespace: str | None,
        callbacks: Mapping[Watched, Callback],
        stop_timeout: float,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.callbacks = callbacks
        self.stop_timeout = stop_timeout
        self.ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        """Set once kopf watches."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._log = get_logger(part="operator")

    def start(self) -> asyncio.Future[None]:
        """Start the thread; the future settles (in the calling loop) when kopf has ended."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._thread = threading.Thread(
            target=self._run,
            args=(registry(self.kubeconfig, loop, self.callbacks), done),
            name="kopf",
            daemon=True,
        )
        self._thread.start()
        self.done = done
        return done

    async def stop(self) -> None:
        """Ask kopf to stop and wait for it at most `stop_timeout`."""
        self._stop.set()
        await asyncio.wait([self.done], timeout=self.stop_timeout)
        if not self.done.done():
            self._log.error(
                "kopf did not stop in time; abandoning its thread",
                timeout=self.stop_timeout,
                alive=self._thread is not None and self._thread.is_alive(),
            )
            dump_stacks()

    def _run(self, handlers: kopf.OperatorRegistry, done: asyncio.Future[None]) -> None:
        """kopf's thread: run it until stopped, then settle `done` in the caller's loop."""
        settings = kopf.OperatorSettings()
        settings.posting.enabled = False
        settings.scanning.disabled = True
        logging.getLogger("kopf").setLevel(logging.WARNING)
        error: BaseException | None = None
        try:
            asyncio.run(
                kopf.operator(
                    registry=handlers,
                    settings=settings,
                    standalone=True,
                    clusterwide=self.namespace is None,
                    namespaces=[self.namespace] if self.namespace else (),
                    stop_flag=self._stop,
                    ready_flag=self.ready,
                )
            )
        except BaseException as exc:  # handed to the caller's loop, raised there
            error = exc

        def settle() -> None:
            if done.done():
                return
            if error is None:
                done.set_result(None)
            else:
                done.set_exception(error)

        with contextlib.suppress(RuntimeError):  # the caller's loop is gone: nobody waits
            done.get_loop().call_soon_threadsafe(settle)
