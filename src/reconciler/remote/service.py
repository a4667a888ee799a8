"""The component reconciler service: one worker pool, its task runner and callback client, and
the shared token `POST /v1/run` needs (the app is `remote/app.py`, the routes `remote/routes.py`).

Stateless by design: a task lives only in memory from acceptance to its final callback, so any
number of instances can stand behind one URL and a lost instance costs only its running tasks
(the mothership detects them as orphans, or hears `failed` on a graceful shutdown). Invalid
bodies answer 400 naming the field; nothing a response, log line or callback says ever contains
the task's kubeconfig.
"""

from __future__ import annotations

import httpx

from reconciler.charts.sources import ChartCache
from reconciler.core.actions import ActionRegistry
from reconciler.core.charts import ChartProvider, HelmChartProvider
from reconciler.errors import KubeconfigError
from reconciler.kube import kubeconfig
from reconciler.kube.clients import ClientCache
from reconciler.model.remote import RemoteTask
from reconciler.remote.callbacks import CallbackSender
from reconciler.remote.metrics import ServiceMetrics
from reconciler.remote.pool import Admission, WorkerPool
from reconciler.remote.settings import ComponentSettings
from reconciler.remote.worker import Job, TaskRunner
from reconciler.web.bearer import SharedToken


class ComponentService:
    """The pool, the runner and the callback client of one service instance."""

    def __init__(
        self,
        settings: ComponentSettings,
        *,
        charts: ChartProvider | None = None,
        actions: ActionRegistry | None = None,
        metrics: ServiceMetrics | None = None,
    ) -> None:
        self.settings = settings
        self.metrics = metrics or ServiceMetrics()
        self.http = httpx.AsyncClient(verify=settings.callback_verify(), trust_env=False)
        self.callbacks = CallbackSender(
            self.http,
            self.metrics,
            token=settings.outgoing_token,
            timeout=settings.callback_timeout,
        )
        self.clients = ClientCache(
            max_idle=settings.client_cache_size, idle_seconds=settings.client_idle_seconds
        )
        self.runner = TaskRunner(
            settings,
            charts
            or HelmChartProvider(
                ChartCache(settings.charts_cache, max_bytes=settings.charts_cache_max_bytes)
            ),
            actions if actions is not None else ActionRegistry.from_entry_points(),
            self.callbacks,
            self.metrics,
            self.clients,
        )
        self.pool = WorkerPool(settings.workers, self.metrics)
        self.token = SharedToken(settings.token) if settings.token else None
        """The shared token `POST /v1/run` needs (None: anonymous access was allowed)."""

    def check(self, task: RemoteTask) -> str | None:
        """Why this instance will not take `task` (a 400 message), or None."""
        served = self.settings.components
        if served and task.component not in served:
            return (
                f"component: {task.component} is not served by this reconciler"
                f" (it serves {', '.join(served)})"
            )
        if not task.callback_url.startswith(("http://", "https://")):
            return "callbackURL: must be an http(s) URL"
        try:  # a task's kubeconfig never runs a command or reads a file on this host
            kubeconfig.check_text(task.kubeconfig)
        except KubeconfigError as exc:
            return f"kubeconfig: {exc}"
        return None

    def submit(self, task: RemoteTask) -> Admission:
        return self.pool.submit(Job(task), self.runner.run)

    async def aclose(self) -> None:
        await self.pool.shutdown(self.callbacks, self.settings.shutdown_timeout)
        await self.clients.aclose()
        await self.http.aclose()
