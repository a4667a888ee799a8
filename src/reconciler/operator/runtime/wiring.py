"""`reconciler operator run`: kopf watches, our work queue and the controllers, wired.

kopf only watches (Kyma, Manifest, the catalog, the remote Secrets, ModuleConfig, SyncResource)
and turns events into keys on the work queue (Kyma, Manifest, RemoteKyma, SyncResource); the
controllers read the object fresh, act, and say when to look again. Status-only changes of an
object do not requeue it (its own status writes would loop); a Manifest's change requeues its
Kyma, whose status aggregates it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Hashable
from pathlib import Path
from typing import Any, Protocol, cast

from reconciler.charts.sources import ChartCache
from reconciler.core.charts import HelmChartProvider
from reconciler.core.runner import ComponentReconciler
from reconciler.errors import ReconcilerError
from reconciler.kube.cluster import Cluster
from reconciler.kube.workqueue import WorkQueue
from reconciler.model.kube_object import Body
from reconciler.model.lifecycle import (
    GROUP,
    KYMA_FINALIZER,
    KYMA_NAME,
    MANIFEST_FINALIZER,
    VERSION,
    kyma_of,
)
from reconciler.observability.logging import get_logger
from reconciler.operator.clusters.control import ControlPlane
from reconciler.operator.clusters.drift import DriftWatch
from reconciler.operator.clusters.fleet import FleetIndex
from reconciler.operator.clusters.remote_watch import RemoteWatch
from reconciler.operator.clusters.targets import TargetClusters
from reconciler.operator.controllers.kymas import KymaController
from reconciler.operator.controllers.manifests import ManifestController
from reconciler.operator.controllers.remote_kyma import REMOTE_FINALIZER, RemoteSync
from reconciler.operator.controllers.sync_resources import SYNC_FINALIZER, SyncResourceController
from reconciler.operator.metrics import OperatorMetrics
from reconciler.operator.rollout.controller import RolloutController
from reconciler.operator.rollout.index import RolloutIndex
from reconciler.operator.runtime.forward import WATCHED_AT, EventForwarder
from reconciler.operator.runtime.kopf_thread import Callback, KopfThread, Watched
from reconciler.operator.runtime.shards import ShardGate
from reconciler.operator.settings import OperatorSettings, ShardSettings
from reconciler.operator.settled import Covered, SettledRuns
from reconciler.operator.watcher.ca import CertificateAuthority
from reconciler.operator.watcher.events import RemoteEvent, RemoteEvents
from reconciler.operator.watcher.listener import Listener
from reconciler.operator.watcher.remote import RemoteWatchers
from reconciler.operator.watcher.settings import WatcherSettings

Key = tuple[str, str, str]
OWN_FINALIZERS = frozenset({KYMA_FINALIZER, MANIFEST_FINALIZER, REMOTE_FINALIZER, SYNC_FINALIZER})

AGGREGATE_DELAY = 0.25
"""Seconds a Kyma waits after a change of one of its Manifests before it aggregates them: the
status changes of its modules in a burst cost one Kyma reconcile (and status write), not one
each. A change of the Kyma itself is not delayed."""


ROLLOUT_DELAY = 1.0
"""Seconds a ModuleRollout waits after a change of a Kyma or Manifest of its namespace before it
counts its waves again: a fleet's burst of Manifest changes costs one count, not one each."""

CATALOG_DELAY = 0.5
"""Seconds a catalog change waits before it requeues the namespace's Kymas: a burst of template
events (start-up's listing, a release) costs one pass over the Kymas, not one per event."""
MAX_EVENT_KYMAS = 10_000
"""Kymas whose latest event-triggered run is remembered (for coalescing) before old ones go."""

SETTLING = frozenset({"Kyma", "Manifest", "RemoteKyma"})
"""Kinds whose periodic check is skipped while they are settled (`operator/settled.py`): a Kyma's
inputs (itself, its Manifests, the catalog), a Manifest's (itself, its Secret, the objects it
installed, through the drift watch) and a remote sync's (the Kyma, its ModuleConfigs, the catalog,
the remote side through the remote watch) are all watched."""


class Controller(Protocol):
    async def handle(self, namespace: str, name: str) -> float | None: ...


def _essence(body: Body) -> tuple[Any, ...]:
    """What of an object a controller reacts to: not its status, and not our own finalizer
    (the controller's first run adds it; the echo would cost every new object a second run),
    but a watcher event another process recorded on a Kyma (`operator/runtime/forward.py`)."""
    meta = body.get("metadata", {})
    return (
        meta.get("generation"),
        (meta.get("annotations") or {}).get(WATCHED_AT),
        meta.get("deletionTimestamp"),
        tuple(sorted((meta.get("labels") or {}).items())),
        tuple(f for f in meta.get("finalizers") or [] if f not in OWN_FINALIZERS),
    )


class Operator:
    def __init__(
        self,
        control: Cluster,
        charts: ChartCache,
        settings: OperatorSettings | None = None,
        watcher: WatcherSettings | None = None,
        shards: ShardSettings | None = None,
    ) -> None:
        self.settings = settings or OperatorSettings()
        self.watcher = watcher or WatcherSettings()
        self.listener: Listener | None = None
        """The watcher's listener, once `run` started it (when the watcher is on)."""
        self._listening = asyncio.Event()
        self.remote_watchers: RemoteWatchers | None = None
        """Puts each remote cluster's watcher in place (when the watcher is on)."""
        self.control = ControlPlane(control)
        self.fleet = FleetIndex()
        self.targets = TargetClusters(self.control, control, self.fleet)
        core = ComponentReconciler(HelmChartProvider(charts, policy=self.settings.source_policy()))
        self.queue = WorkQueue(self._handle, workers=self.settings.workers, part="operator-queue")
        self.rollout_queue = WorkQueue(self._handle, workers=1, part="operator-rollouts")
        """ModuleRollouts on a queue of their own: a wave's soak or deadline ends on time even
        behind a backlog of the fleet's Kymas and Manifests."""
        self.drift = DriftWatch(self.queue.add)
        self.settled = SettledRuns(self.settings.verify_interval)
        self.metrics = OperatorMetrics()
        self.metrics.watch_sizes(lambda: len(self.targets), lambda: len(self.queue))
        self.manifests = ManifestController(
            self.control,
            self.targets,
            core,
            self.settings,
            self.drift,
            self.metrics,
        )
        self.rollout_index = RolloutIndex()
        self.kymas = KymaController(
            self.control, self.settings, self.metrics, self.fleet, self.rollout_index
        )
        self.rollouts = RolloutController(
            self.control, self.settings, self.rollout_index, self.fleet, self.metrics
        )
        self.remote_watch = RemoteWatch(self.queue.add)
        self.remote = RemoteSync(
            self.control,
            self.targets,
            self.settings,
            self.remote_watch,
            self.fleet,
            self.rollout_index,
        )
        self.kymas.catalog = lambda namespace, name: self.remote.catalog_synced.get(
            (namespace, name)
        )
        self.kymas.crds = lambda namespace, name: self.remote.crds_synced.get((namespace, name))
        self.syncs = SyncResourceController(
            self.control, self.targets, core, self.settings, self.drift
        )
        self._controllers: dict[str, Controller] = {
            "Kyma": self.kymas,
            "Manifest": self.manifests,
            "RemoteKyma": self.remote,
            "SyncResource": self.syncs,
            "ModuleRollout": self.rollouts,
        }
        self.events = RemoteEvents()
        self.events.subscribe(self._remote_changed)
        shard_settings = shards or ShardSettings()
        self.shards: ShardGate | None = None
        """Which Kymas are this process's (None: all; sharding off)."""
        if shard_settings.count > 1:
            self.shards = ShardGate(
                shard_settings, self.control, self.queue.add, self.settings.stop_timeout
            )
            self.events.subscribe(self._forward_unless_mine)
        self.forwarder = EventForwarder(self.control)
        self._seen: dict[Key, tuple[Any, ...]] = {}
        self._catalog_pending: set[str] = set()
        self._event_runs: dict[tuple[str, str], float] = {}
        """(namespace, Kyma) -> when its latest event-triggered run is due (monotonic)."""
        """Namespaces whose catalog changed, waiting `CATALOG_DELAY` to requeue their Kymas."""
        self._sync_kymas: dict[tuple[str, str], str] = {}
        """(namespace, SyncResource) -> its Kyma, from the watch: the shard it goes with."""
        self._background: set[asyncio.Task[None]] = set()
        self._log = get_logger(part="operator")

    async def _handle(self, key: Hashable) -> float | None:
        kind, namespace, name = cast(Key, key)
        if self.shards is None:
            return await self._handle_mine(kind, namespace, name)
        async with self.shards.claim(*self._shard_key(kind, namespace, name)) as mine:
            if mine:
                return await self._handle_mine(kind, namespace, name)
        # a rollout has no Kyma whose takeover would enqueue it: each process looks now and
        # then whether its shard became this process's
        return self.settings.busy_interval if kind == "ModuleRollout" else None

    def _shard_key(self, kind: str, namespace: str, name: str) -> Key:
        """What decides the shard: a remote sync and a SyncResource go with their Kyma."""
        if kind == "RemoteKyma":
            return ("Kyma", namespace, name)
        if kind == "ModuleRollout":  # by its name's hash, like a Kyma's
            return ("Kyma", namespace, f"modulerollout.{name}")
        kyma = self._sync_kymas.get((namespace, name)) if kind == "SyncResource" else None
        return ("Kyma", namespace, kyma) if kyma else (kind, namespace, name)

    async def _handle_mine(self, kind: str, namespace: str, name: str) -> float | None:
        key = (kind, namespace, name)
        started = time.monotonic()
        if kind in SETTLING and self.queue.by_timer(key) and self.settled.skip(key, started):
            self.metrics.requeues.labels(kind, "settled").inc()
            return self.settings.success_interval
        self.settled.forget(key)
        controller = self._controllers[kind]
        result = "exception"
        before = self._kyma_conditions(kind, namespace, name)
        try:
            delay = await controller.handle(namespace, name)
            if kind in SETTLING and delay == self.settings.success_interval:
                self.settled.settle(key, started, self._covered(kind, namespace, name))
            if kind == "Kyma" and self.remote_watchers is not None:
                again = await self.remote_watchers.reconcile(
                    self.control, self.targets, namespace, name
                )
                delay = delay if again is None else min(again, delay or again)
            result = "ok"
            return delay
        finally:
            self.metrics.duration.labels(kind, result).observe(time.monotonic() - started)
            if before != self._kyma_conditions(kind, namespace, name):
                self.queue.add(("Kyma", namespace, name))  # its conditions changed meanwhile

    def _kyma_conditions(self, kind: str, namespace: str, name: str) -> tuple[object, ...]:
        """What a Kyma's conditions read from its remote sync and watcher (compared around a
        run of either, which comes after the Kyma's own)."""
        if kind not in ("Kyma", "RemoteKyma"):
            return ()
        watchers = self.remote_watchers
        return (
            self.remote.crds_synced.get((namespace, name)),
            self.remote.catalog_synced.get((namespace, name)),
            watchers.synced(namespace, name) if watchers is not None else None,
        )

    def _covered(self, kind: str, namespace: str, name: str) -> Covered | None:
        """What must have been watched without a gap for a settled `kind` to skip its check
        (None: only control-plane resources, which kopf watches and re-lists after a gap)."""
        if kind == "Manifest":
            return self.manifests.covered(namespace, name)
        if kind == "RemoteKyma":
            return self.remote.covered(namespace, name)
        return None

    def _remote_changed(self, event: RemoteEvent) -> None:
        """A watcher reported a change in the Kyma's remote cluster: look at the Kyma now, and
        sync its remote side (the remote Kyma, a module custom resource). Coalesced per Kyma:
        runs for events start at least `event_coalesce` seconds apart; an event within that
        time joins the one pending requeue at its end (however many events arrive)."""
        key = (event.kyma_namespace, event.kyma_name)
        now, spacing = time.monotonic(), self.watcher.event_coalesce
        last = self._event_runs.get(key)
        if last is None or now >= last + spacing:
            due = now  # the first event in a while: at once
        else:
            due = last if now <= last else last + spacing  # the pending one, or the next
        if len(self._event_runs) > MAX_EVENT_KYMAS:  # forget Kymas without recent events
            self._event_runs = {k: t for k, t in self._event_runs.items() if t > now - spacing}
        self._event_runs[key] = due
        self.queue.add(("Kyma", *key), due - now)
        if self.settings.remote_sync:
            self.queue.add(("RemoteKyma", *key), due - now)

    async def _forward_unless_mine(self, event: RemoteEvent) -> None:
        """The Kyma's shard is another process's: record the event on the Kyma for it."""
        if self.shards is None:
            return
        shard = await self.shards.shard("Kyma", event.kyma_namespace, event.kyma_name)
        if shard is not None and not self.shards.shards.owned(shard):
            self.forwarder.forward(event.kyma_namespace, event.kyma_name)

    def _sync_remote(self, namespace: str, kyma: str) -> None:
        if self.settings.remote_sync:
            self.queue.add(("RemoteKyma", namespace, kyma))

    def _changed(self, key: Key, body: Body, event_type: str | None) -> bool:
        if event_type == "DELETED":
            self._seen.pop(key, None)
            return False
        essence = _essence(body)
        if self._seen.get(key) == essence:
            return False
        self._seen[key] = essence
        return True

    def watched(self) -> dict[Watched, Callback]:
        """What kopf watches, and which of our callbacks gets each event."""
        ours = {
            "kymas": self._kyma_event,
            "manifests": self._manifest_event,
            "syncresources": self._sync_resource_event,
            "moduleconfigs": self._module_config_event,
            "moduletemplates": self._catalog_event,
            "modulereleasemetas": self._catalog_event,
            "modulerollouts": self._rollout_event,
        }
        callbacks: dict[Watched, Callback] = {
            Watched(GROUP, VERSION, plural): callback for plural, callback in ours.items()
        }
        callbacks[Watched("", "v1", "secrets", (KYMA_NAME,))] = self._secret_event
        return callbacks

    def _catalog_event(self, body: Body, event_type: str | None) -> None:
        """A catalog change looks at every Kyma of the namespace, once per burst: at start-up
        (the initial listing) and when a release publishes many templates at once."""
        if not self.fleet.catalog_item(body, deleted=event_type == "DELETED"):
            return
        namespace = str(body["metadata"]["namespace"])
        if namespace not in self._catalog_pending:
            self._catalog_pending.add(namespace)
            asyncio.get_running_loop().call_later(CATALOG_DELAY, self._catalog_changed, namespace)

    def _catalog_changed(self, namespace: str) -> None:
        self._catalog_pending.discard(namespace)
        self._all_kymas(namespace)
        self._count_rollouts(namespace, 0)

    def _all_kymas(self, namespace: str) -> None:
        kymas = [name for kind, ns, name in self._seen if kind == "Kyma" and ns == namespace]
        for name in kymas:
            self.queue.add(("Kyma", namespace, name))
            self._sync_remote(namespace, name)

    def _count_rollouts(self, namespace: str, delay: float = ROLLOUT_DELAY) -> None:
        for policy in self.rollout_index.policies(namespace):
            self.rollout_queue.add(("ModuleRollout", namespace, policy.name), delay)

    def _rollout_event(self, body: Body, event_type: str | None) -> None:
        """A ModuleRollout: its spec changed (run it), or its status moved a release to another
        wave or phase (every Kyma of the namespace looks at its versions again)."""
        deleted = event_type == "DELETED"
        meta = body["metadata"]
        key = ("ModuleRollout", str(meta["namespace"]), str(meta["name"]))
        moved = self.rollout_index.observe(body, deleted=deleted)
        if moved is None:
            self._all_kymas(key[1])
        for kyma in sorted(moved or ()):
            self.queue.add(("Kyma", key[1], kyma))
            self._sync_remote(key[1], kyma)  # its cluster's catalog copy names its version
        if self._changed(key, body, event_type):
            self.rollout_queue.add(key)

    def _kyma_event(self, body: Body, event_type: str | None) -> None:
        meta = body["metadata"]
        key = ("Kyma", str(meta["namespace"]), str(meta["name"]))
        self.rollout_index.observe_kyma(body, deleted=event_type == "DELETED")
        self._count_rollouts(key[1])
        if self.shards is not None:
            self.shards.note_kyma(key[1], key[2], dict(meta.get("labels") or {}))
        if self._changed(key, body, event_type):
            self.queue.add(key)
        self._sync_remote(key[1], key[2])  # status included: it is mirrored to the remote Kyma

    def _sync_resource_event(self, body: Body, event_type: str | None) -> None:
        meta = body["metadata"]
        key = ("SyncResource", str(meta["namespace"]), str(meta["name"]))
        kyma = (body.get("spec") or {}).get("kyma")
        if event_type == "DELETED" or not kyma:
            self._sync_kymas.pop((key[1], key[2]), None)
        else:
            self._sync_kymas[(key[1], key[2])] = str(kyma)
        if self._changed(key, body, event_type):
            self.queue.add(key)

    def _module_config_event(self, body: Body, event_type: str | None) -> None:
        """Someone may have changed a ModuleConfig: its Kyma's sync puts the spec back."""
        self.remote.configs.observe(body, deleted=event_type == "DELETED")
        kyma = kyma_of(body)
        if kyma and event_type != "DELETED":
            self._sync_remote(str(body["metadata"]["namespace"]), kyma)

    def _manifest_event(self, body: Body, event_type: str | None) -> None:
        self.fleet.manifest(body, deleted=event_type == "DELETED")
        meta = body["metadata"]
        namespace = str(meta["namespace"])
        key = ("Manifest", namespace, str(meta["name"]))
        if self._changed(key, body, event_type):
            self.queue.add(key)
        kyma = kyma_of(body)
        if self.shards is not None:
            self.shards.note_manifest(namespace, key[2], kyma)
        if kyma:  # any change, status included: the Kyma aggregates it, once per burst
            self.queue.add(("Kyma", namespace, kyma), AGGREGATE_DELAY)
            self._count_rollouts(namespace)

    def _secret_event(self, body: Body, event_type: str | None) -> None:
        """A kubeconfig Secret: a new or changed one (not the initial listing) makes its Kyma's
        Manifests look at their cluster again at once."""
        changed = self.fleet.secret(body, deleted=event_type == "DELETED")
        if changed or event_type == "ADDED":
            namespace = str(body["metadata"]["namespace"])
            task = asyncio.create_task(self._secret_changed(namespace, kyma_of(body)))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _secret_changed(self, namespace: str, kyma: str) -> None:
        await self.targets.forget(namespace, kyma)
        for manifest in self.fleet.manifests(namespace, kyma):
            self.queue.add(("Manifest", namespace, manifest["metadata"]["name"]))
        self._sync_remote(namespace, kyma)

    async def run(
        self,
        kubeconfig: Path | None,
        *,
        namespace: str | None = None,
        stop: asyncio.Event | None = None,
        ready: asyncio.Event | None = None,
    ) -> None:
        """Run until `stop` is set (or cancelled); kopf watches from its own thread
        (`operator/runtime/kopf_thread.py`), stopped within `stop_timeout`."""
        if self.watcher.enabled:  # before any Kyma is handled: each gets its watcher
            ca = await CertificateAuthority.load_or_create(
                self.control.cluster, self.watcher.ca_namespace, self.watcher.ca_secret
            )
            self.remote_watchers = RemoteWatchers(self.watcher, ca)
            self.kymas.webhook = self.remote_watchers.synced
            self.listener = Listener(self.watcher, ca, self.control, self.events, namespace)
        await self._prime_catalog(namespace)
        await self._prime_rollouts(namespace)
        kopf = KopfThread(kubeconfig, namespace, self.watched(), self.settings.stop_timeout)
        kopf_done = kopf.start()

        async def signal_ready() -> None:
            await asyncio.wrap_future(kopf.ready)
            if self.watcher.enabled:
                await self._listening.wait()
            if ready is not None:
                ready.set()
            await asyncio.Event().wait()

        ours = [
            asyncio.create_task(self.queue.run()),
            asyncio.create_task((stop or asyncio.Event()).wait()),
            asyncio.create_task(signal_ready()),
        ]
        if self.listener is not None:
            ours.append(asyncio.create_task(self.listener.serve(self._listening)))
        if self.shards is not None:
            self.shards.namespace = namespace or ""
            ours.append(asyncio.create_task(self.shards.shards.run()))
        ours.append(asyncio.create_task(self.rollout_queue.run()))
        try:
            waited: list[asyncio.Future[Any]] = [kopf_done, *ours]
            await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in ours:
                task.cancel()
            results = await asyncio.gather(*ours, return_exceptions=True)
            await kopf.stop()
            await self.events.aclose()
            await self.forwarder.aclose()
            await self.drift.aclose()
            await self.remote_watch.aclose()
            await self.targets.aclose()
        if kopf_done.done() and kopf_done.exception() is not None:
            raise cast(BaseException, kopf_done.exception())  # kopf ended by itself: say why
        for result in [results[0], *results[3:]]:  # the queue or the listener ended: say why
            if isinstance(result, Exception):
                raise result

    async def _prime_catalog(self, namespace: str | None) -> None:
        """List the catalog once, before the watches: Kymas resolve against the index (no
        request per reconcile). Without it (a failed listing) each reconcile lists the catalog."""
        items: list[Body] = []
        try:
            for kind in ("ModuleReleaseMeta", "ModuleTemplate"):
                for body in await self.control.list(kind, namespace or ""):
                    items.append({**body, "kind": kind})
        except ReconcilerError as exc:
            self._log.warning("catalog not indexed", reason=str(exc))
            return
        self.fleet.prime_catalog(items)

    async def _prime_rollouts(self, namespace: str | None) -> None:
        """List the ModuleRollouts once, before the watches: no Kyma is reconciled before its
        modules' rollout policies (and where their releases are) are known."""
        try:
            items = await self.control.list("ModuleRollout", namespace or "")
        except ReconcilerError as exc:  # e.g. the CRD is not installed: no policies
            self._log.warning("rollout policies not listed", reason=str(exc))
            return
        self.rollout_index.prime(items)
