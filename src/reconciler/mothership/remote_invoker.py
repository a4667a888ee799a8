"""Hands operations to component reconciler services (`POST /v1/run`); results come back as
callbacks to `/v1/operations/{schedulingID}/callback/{correlationID}`.

The component decides the service (`component_reconcilers[component]`, else `[base]`); a value
may list several URLs separated by commas, which are used in turn (and the next one is tried
when one is busy or down). A busy service (429) or an unavailable one (5xx, connection refused)
is retried a few times with backoff within one claim; a still-busy pool hands the operation back
without counting an attempt, an unavailable one counts as a transient failure. The kubeconfig
travels only in the request body (TLS when the URL is https), never in logs; so does the
operation's callback secret, issued anew (only its hash stored) before each hand-over.
"""

from __future__ import annotations

import asyncio
import itertools
import ssl

import structlog

from reconciler.model.cluster import ClusterState
from reconciler.model.operation import Operation
from reconciler.model.remote import RemoteTask
from reconciler.mothership.invoker import InvokeResult, Progress
from reconciler.mothership.planner import Planner
from reconciler.mothership.settings import Settings
from reconciler.observability.metrics import Metrics
from reconciler.remote.client import ComponentReconcilerClient, RunStatus
from reconciler.store.callback_secrets import CallbackSecrets
from reconciler.util.backoff import delays

log = structlog.get_logger()
MAX_BACKOFF = 5.0


class RemoteInvoker:
    def __init__(
        self,
        planner: Planner,
        settings: Settings,
        secrets: CallbackSecrets,
        metrics: Metrics | None = None,
    ) -> None:
        self.planner = planner
        self.settings = settings
        self.secrets = secrets
        self.metrics = metrics
        self._clients: dict[str, ComponentReconcilerClient] = {}
        self._turn = itertools.count()

    def _client(self, url: str) -> ComponentReconcilerClient:
        if url not in self._clients:
            verify: ssl.SSLContext | str | bool = True
            if self.settings.component_reconciler_ca_file is not None:
                verify = ssl.create_default_context(
                    cafile=str(self.settings.component_reconciler_ca_file)
                )
            self._clients[url] = ComponentReconcilerClient(
                url, token=self.settings.component_reconciler_token, verify=verify
            )
        return self._clients[url]

    def urls_for(self, component: str) -> list[str]:
        pools = self.settings.component_reconcilers
        configured = pools.get(component) or pools.get("base") or ""
        return [url.strip() for url in configured.split(",") if url.strip()]

    async def invoke(self, op: Operation, state: ClusterState, progress: Progress) -> InvokeResult:
        urls = self.urls_for(op.component)
        if not urls:
            return InvokeResult(
                False,
                f"component {op.component}: no component reconciler configured "
                "(setting component_reconcilers, key 'base' for the fallback)",
            )
        callback = (
            f"{self.settings.callback_url.rstrip('/')}/v1/operations/"
            f"{op.scheduling_id}/callback/{op.correlation_id}"
        )
        task = RemoteTask.of(
            self.planner.task(state, op, timeout=self.settings.operation_timeout),
            kubeconfig=state.spec.kubeconfig,
            callback_url=callback,
            max_retries=self.settings.max_retries,
            # before the hand-over: the first callback may arrive before `run` returns
            callback_secret=await self.secrets.issue(op.key),
        )
        first = next(self._turn)
        waits = delays(0.2, MAX_BACKOFF)
        last = RunStatus.UNAVAILABLE
        reason = ""
        for attempt in range(max(self.settings.remote_attempts, 1)):
            url = urls[(first + attempt) % len(urls)]
            result = await self._client(url).run(task)
            if self.metrics is not None and result.occupancy is not None:
                self.metrics.occupancy_remote.labels(pool=url).set(result.occupancy)
            if result.accepted:
                return InvokeResult(False, pending=True)
            if result.status is RunStatus.REJECTED:
                return InvokeResult(
                    False, f"component {op.component}: rejected by {url}: {result.error}"
                )
            last, reason = result.status, result.error
            delay = next(waits)
            await asyncio.sleep(min(result.retry_after or delay, MAX_BACKOFF))
        log.warning(
            "component reconciler not taking work",
            pool=url,
            status=last.value,
            component=op.component,
            correlation_id=op.correlation_id,
        )
        if last is RunStatus.BUSY:
            return InvokeResult(
                False,
                f"component reconciler {url} is busy",
                requeue_after=self.settings.retry_backoff,
            )
        return InvokeResult(
            False,
            f"component {op.component}: component reconciler {url} unavailable: {reason}",
            transient=True,
        )

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
