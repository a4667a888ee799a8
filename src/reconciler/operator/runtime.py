"""`reconciler operator run`: kopf watches, our work queue and the two controllers, wired.

kopf only watches (Kyma, Manifest, the catalog, the remote Secrets) and turns events into keys
on the work queue; the controllers read the object fresh, act, and say when to look again.
Status-only changes of an object do not requeue it (its own status writes would loop);
a Manifest's change requeues its Kyma, whose status aggregates it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Coroutine, Hashable
from pathlib import Path
from typing import Any, cast

import kopf
from lightkube.config.models import User

from reconciler.charts.sources import ChartCache
from reconciler.core.charts import HelmChartProvider
from reconciler.core.runner import ComponentReconciler
from reconciler.kube.cluster import Cluster
from reconciler.kube.kubeconfig import load_kubeconfig
from reconciler.kube.workqueue import WorkQueue
from reconciler.observability.logging import get_logger
from reconciler.operator.control import ControlPlane
from reconciler.operator.drift import DriftWatch
from reconciler.operator.events import RemoteEvent, RemoteEvents
from reconciler.operator.kymas import KymaController
from reconciler.operator.manifests import ManifestController
from reconciler.operator.metrics import OperatorMetrics
from reconciler.operator.resources import GROUP, KYMA_NAME, VERSION
from reconciler.operator.settings import OperatorSettings
from reconciler.operator.sources import ModuleSources
from reconciler.operator.targets import TargetClusters

Key = tuple[str, str, str]


def _login_for(kubeconfig: Path | None) -> Any:
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        if kubeconfig is None:
            return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)
        config = load_kubeconfig(kubeconfig)
        cluster, user = config.cluster, config.user or User()
        return kopf.ConnectionInfo(
            server=cluster.server,
            ca_data=cluster.certificate_auth_data,
            ca_path=cluster.certificate_auth,
            insecure=cluster.insecure,
            certificate_data=user.client_cert_data,
            certificate_path=user.client_cert,
            private_key_data=user.client_key_data,
            private_key_path=user.client_key,
            token=user.token,
            scheme="Bearer" if user.token else None,
        )

    return login


def _essence(body: kopf.Body) -> tuple[Any, ...]:
    """What of an object a controller reacts to: not its status."""
    meta = body.get("metadata", {})
    return (
        meta.get("generation"),
        meta.get("deletionTimestamp"),
        tuple(sorted((meta.get("labels") or {}).items())),
        tuple(meta.get("finalizers") or []),
    )


class Operator:
    def __init__(
        self,
        control: Cluster,
        charts: ChartCache,
        settings: OperatorSettings | None = None,
    ) -> None:
        self.settings = settings or OperatorSettings()
        self.control = ControlPlane(control)
        self.targets = TargetClusters(self.control, control)
        self.sources = ModuleSources(HelmChartProvider(charts))
        core = ComponentReconciler(self.sources)
        self.queue = WorkQueue(self._handle, workers=self.settings.workers, part="operator-queue")
        self.drift = DriftWatch(self.queue.add)
        self.metrics = OperatorMetrics()
        self.metrics.watch_sizes(lambda: len(self.targets), lambda: len(self.queue))
        self.manifests = ManifestController(
            self.control,
            self.targets,
            core,
            self.settings,
            self.drift,
            self.metrics,
            self.sources,
        )
        self.kymas = KymaController(self.control, self.settings, self.metrics)
        self.events = RemoteEvents()
        self.events.subscribe(self._remote_changed)
        self._seen: dict[Key, tuple[Any, ...]] = {}
        self._log = get_logger(part="operator")

    async def _handle(self, key: Hashable) -> float | None:
        kind, namespace, name = cast(Key, key)
        controller = self.kymas if kind == "Kyma" else self.manifests
        started, result = time.monotonic(), "exception"
        try:
            delay = await controller.handle(namespace, name)
            result = "ok"
            return delay
        finally:
            self.metrics.duration.labels(kind, result).observe(time.monotonic() - started)

    def _remote_changed(self, event: RemoteEvent) -> None:
        """A watcher reported a change in the Kyma's remote cluster: look at the Kyma now."""
        self.queue.add(("Kyma", event.kyma_namespace, event.kyma_name))

    def _changed(self, key: Key, body: kopf.Body, event_type: str | None) -> bool:
        if event_type == "DELETED":
            self._seen.pop(key, None)
            return False
        essence = _essence(body)
        if self._seen.get(key) == essence:
            return False
        self._seen[key] = essence
        return True

    def registry(
        self, kubeconfig: Path | None, loop: asyncio.AbstractEventLoop
    ) -> kopf.OperatorRegistry:
        """kopf's handlers: they run in kopf's thread and hand work to our loop."""
        registry = kopf.OperatorRegistry()
        kopf.on.login(registry=registry)(_login_for(kubeconfig))

        def add(key: Key) -> None:
            loop.call_soon_threadsafe(self.queue.add, key)

        async def in_our_loop(coro: Coroutine[Any, Any, None]) -> None:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))

        @kopf.on.event(GROUP, VERSION, "kymas", registry=registry)
        def kyma_event(**event: Any) -> None:
            key = ("Kyma", str(event["namespace"]), str(event["name"]))
            if self._changed(key, event["body"], event["type"]):
                add(key)

        @kopf.on.event(GROUP, VERSION, "manifests", registry=registry)
        def manifest_event(**event: Any) -> None:
            namespace = str(event["namespace"])
            key = ("Manifest", namespace, str(event["name"]))
            if self._changed(key, event["body"], event["type"]):
                add(key)
            kyma = event["labels"].get(KYMA_NAME)
            if kyma:  # any change, status included: the Kyma aggregates it
                add(("Kyma", namespace, kyma))

        async def catalog_event(**event: Any) -> None:
            await in_our_loop(self._catalog_changed(str(event["namespace"])))

        for plural in ("moduletemplates", "modulereleasemetas"):
            kopf.on.event(GROUP, VERSION, plural, registry=registry)(catalog_event)

        @kopf.on.event("", "v1", "secrets", labels={KYMA_NAME: kopf.PRESENT}, registry=registry)
        async def secret_event(**event: Any) -> None:
            namespace, kyma = str(event["namespace"]), str(event["labels"][KYMA_NAME])
            await in_our_loop(self._secret_changed(namespace, kyma))

        return registry

    async def _catalog_changed(self, namespace: str) -> None:
        for kyma in await self.control.list("Kyma", namespace):
            self.queue.add(("Kyma", namespace, kyma["metadata"]["name"]))

    async def _secret_changed(self, namespace: str, kyma: str) -> None:
        await self.targets.evict(namespace, kyma)
        for manifest in await self.control.list("Manifest", namespace, f"{KYMA_NAME}={kyma}"):
            self.queue.add(("Manifest", namespace, manifest["metadata"]["name"]))

    async def run(
        self,
        kubeconfig: Path | None,
        *,
        namespace: str | None = None,
        stop: asyncio.Event | None = None,
        ready: asyncio.Event | None = None,
    ) -> None:
        """Run until `stop` is set (or cancelled).

        kopf runs in a thread with its own event loop: at exit it cancels every task of its
        loop created after it started, which must not be ours."""
        settings = kopf.OperatorSettings()
        settings.posting.enabled = False
        settings.scanning.disabled = True
        logging.getLogger("kopf").setLevel(logging.WARNING)
        registry = self.registry(kubeconfig, asyncio.get_running_loop())
        kopf_stop, kopf_ready = threading.Event(), threading.Event()

        def watch() -> None:
            asyncio.run(
                kopf.operator(
                    registry=registry,
                    settings=settings,
                    standalone=True,
                    clusterwide=namespace is None,
                    namespaces=[namespace] if namespace else (),
                    stop_flag=kopf_stop,
                    ready_flag=kopf_ready,
                )
            )

        async def signal_ready() -> None:
            await asyncio.to_thread(kopf_ready.wait)
            if ready is not None:
                ready.set()
            await asyncio.Event().wait()

        tasks = [
            asyncio.create_task(asyncio.to_thread(watch)),
            asyncio.create_task(self.queue.run()),
            asyncio.create_task((stop or asyncio.Event()).wait()),
            asyncio.create_task(signal_ready()),
        ]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            kopf_stop.set()
            kopf_ready.set()  # releases signal_ready's thread if kopf never got ready
            for task in tasks[1:]:
                task.cancel()
            results = await asyncio.gather(*tasks, return_exceptions=True)
            await self.events.aclose()
            await self.drift.aclose()
            await self.targets.aclose()
        for result in results[:2]:  # kopf or the queue ended by itself: say why
            if isinstance(result, Exception):
                raise result
