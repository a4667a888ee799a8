"""The mothership's side of `POST /v1/run`: hand a task to a component reconciler service.

`run` never raises for what the service answers; it classifies the answer so the caller can
decide: accepted (wait for callbacks), busy (429: retry later or elsewhere), rejected (400: the
task itself is wrong, retrying cannot help) or unavailable (5xx, auth or connection trouble: retry
with backoff, maybe on another instance). The task body carries a kubeconfig; it is sent only in
the request body and never appears in a result or log line.
"""

from __future__ import annotations

import enum
import ssl
from dataclasses import dataclass
from types import TracebackType

import httpx

from reconciler.charts.sources import redact
from reconciler.model.remote import RemoteTask
from reconciler.util.secrecy import excerpt


class RunStatus(enum.Enum):
    ACCEPTED = "accepted"
    BUSY = "busy"
    REJECTED = "rejected"
    UNAVAILABLE = "unavailable"


@dataclass(frozen=True)
class RunResult:
    status: RunStatus
    error: str = ""
    retry_after: float | None = None
    """Seconds the service asked to wait (429/503 `Retry-After`)."""
    busy: int | None = None
    size: int | None = None
    """The service's pool occupancy at the time of the answer, when it reported it."""

    @property
    def accepted(self) -> bool:
        return self.status is RunStatus.ACCEPTED

    @property
    def occupancy(self) -> float | None:
        if self.busy is None or not self.size:
            return None
        return self.busy / self.size


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _error_of(response: httpx.Response) -> str:
    """The service's error message, capped (whatever answers at its URL is copied into a
    failure reason)."""
    try:
        body = response.json()
        if isinstance(body, dict) and isinstance(body.get("error"), str):
            return excerpt(str(body["error"]))
    except ValueError:
        pass
    return excerpt(response.text) or response.reason_phrase


class ComponentReconcilerClient:
    """One component reconciler URL (a single service or a load balancer in front of many)."""

    def __init__(
        self,
        base_url: str,
        token: str = "",
        verify: ssl.SSLContext | str | bool = True,
        *,
        timeout: float = 10.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._own = http is None
        self.http = http or httpx.AsyncClient(verify=verify, timeout=timeout, trust_env=False)
        self.headers = headers

    async def run(self, task: RemoteTask) -> RunResult:
        try:
            response = await self.http.post(
                f"{self.base_url}/v1/run",
                json=task.model_dump(mode="json", by_alias=True),
                headers=self.headers,
            )
        except httpx.HTTPError as exc:
            return RunResult(
                RunStatus.UNAVAILABLE,
                f"component reconciler {redact(self.base_url)}: {type(exc).__name__}: {exc}",
            )
        busy = _number(response.headers.get("x-pool-busy"))
        size = _number(response.headers.get("x-pool-size"))

        def result(status: RunStatus, error: str = "") -> RunResult:
            return RunResult(
                status,
                error,
                retry_after=_number(response.headers.get("retry-after")),
                busy=int(busy) if busy is not None else None,
                size=int(size) if size is not None else None,
            )

        code = response.status_code
        if response.is_success:
            return result(RunStatus.ACCEPTED)
        if code == 400:
            return result(RunStatus.REJECTED, _error_of(response))
        error = f"component reconciler {redact(self.base_url)}: {code} {_error_of(response)}"
        return result(RunStatus.BUSY if code == 429 else RunStatus.UNAVAILABLE, error)

    async def ready(self) -> bool:
        """Whether the service answers `/health/ready` with 200."""
        try:
            response = await self.http.get(f"{self.base_url}/health/ready")
        except httpx.HTTPError:
            return False
        return response.is_success

    async def aclose(self) -> None:
        if self._own:
            await self.http.aclose()

    async def __aenter__(self) -> ComponentReconcilerClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
