"""The boundary to Gardener: Shoots in the project namespace `garden-<project>` of the garden
cluster and their `adminkubeconfig` subresource, and the cluster-scoped Seeds (read only), on
Gardener's own REST paths, through one rate limiter shared by every worker (KIM: 5 requests/s).
Nothing else in the manager speaks to the garden cluster.

Errors keep Gardener's status code: 429 and 5xx are retryable (`GardenerError.retryable`), the
rest are not. Kubeconfigs are returned, never logged or put into messages.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import re
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

from reconciler.errors import ClusterUnreachable, KubeApiError, ReconcilerError
from reconciler.kube.client import KubeClient
from reconciler.model.infrastructure import FIELD_MANAGER, SHOOT_NAME_MAX, SHOOT_NAME_PATTERN

API = "/apis/core.gardener.cloud/v1beta1"
SHOOT_API_VERSION = "core.gardener.cloud/v1beta1"
DELETION_CONFIRMATION = "confirmation.gardener.cloud/deletion"
APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
SEED_NAME = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
"""A Seed's name (a DNS subdomain): the last segment of its REST path."""
RETRYABLE = frozenset({429, 500, 502, 503, 504})


class GardenerError(ReconcilerError):
    """Gardener refused or could not be reached; `retryable` says whether trying later helps."""

    def __init__(self, message: str, *, retryable: bool, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        """Gardener's HTTP status (None: no answer, or no request was sent)."""


def check_shoot_name(name: str) -> str:
    """`name` when it is a valid Shoot name (a DNS label of at most 63 characters), else a
    final `GardenerError`: the name is the last segment of a REST path, and anything else
    (`..`, `/`, `%2F`, `?`) could address something other than that one Shoot."""
    if (
        not isinstance(name, str)
        or len(name) > SHOOT_NAME_MAX
        or not re.fullmatch(SHOOT_NAME_PATTERN, name)
    ):
        shown = repr(name[:80]) if isinstance(name, str) else type(name).__name__
        raise GardenerError(
            f"invalid Shoot name {shown}: a Shoot's name must be a DNS label (lower-case "
            f"letters, digits and '-', at most {SHOOT_NAME_MAX} characters)",
            retryable=False,
        )
    return name


class RateLimiter:
    """A token bucket: `rate` requests per second on average, at most `burst` at once; waiters
    are served in order (asyncio's lock is fair). `rate=None` lets everything through."""

    def __init__(
        self, rate: float | None, burst: int = 1, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        if self.rate is None:
            return
        async with self._lock:
            self._refill()
            if self._tokens < 1:
                await asyncio.sleep((1 - self._tokens) / self.rate)
                self._refill()  # a late wake-up (a busy loop) is credited, not lost
            self._tokens -= 1

    def _refill(self) -> None:
        assert self.rate is not None
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
        self._last = now


Observer = Callable[[str, str], None]
"""Told `(operation, outcome)` of every request (metrics)."""


class Gardener:
    def __init__(
        self,
        client: KubeClient,
        project: str,
        limiter: RateLimiter,
        observe: Observer | None = None,
    ) -> None:
        self.client = client
        self.namespace = f"garden-{project}"
        self.limiter = limiter
        self._observe = observe or (lambda operation, outcome: None)

    def _path(self, name: str | None = None) -> str:
        """The Shoots of the project, or one Shoot: every path this client sends is one of
        these (or a Shoot's subresource), the name checked and escaped."""
        base = f"{API}/namespaces/{urllib.parse.quote(self.namespace, safe='')}/shoots"
        if name is None:
            return base
        return f"{base}/{urllib.parse.quote(check_shoot_name(name), safe='')}"

    async def _request(self, operation: str, method: str, path: str, **kwargs: Any) -> Any:
        await self.limiter.acquire()
        try:
            result = await self.client.request(method, path, **kwargs)
        except KubeApiError as exc:
            self._observe(operation, str(exc.status))
            raise
        except ClusterUnreachable as exc:
            self._observe(operation, "unreachable")
            raise GardenerError(f"Gardener: {exc}", retryable=True) from None
        self._observe(operation, "ok")
        return result

    @staticmethod
    def _failed(what: str, exc: KubeApiError) -> GardenerError:
        return GardenerError(
            f"Gardener {what} ({exc.status} {exc.reason}): {exc}",
            retryable=exc.status in RETRYABLE,
            status=exc.status,
        )

    async def get_shoot(self, name: str) -> dict[str, Any] | None:
        try:
            return dict(await self._request("get", "GET", self._path(name)))
        except KubeApiError as exc:
            if exc.status == 404:
                return None
            raise self._failed(f"refused to read Shoot {name}", exc) from None

    async def apply_shoot(self, shoot: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply (field manager `kim`, forced): create or patch the Shoot."""
        name = shoot["metadata"]["name"]
        params = {"fieldManager": FIELD_MANAGER, "force": "true"}
        try:
            return dict(
                await self._request(
                    "apply",
                    "PATCH",
                    self._path(name),
                    params=params,
                    body=shoot,
                    content_type=APPLY_PATCH,
                )
            )
        except KubeApiError as exc:
            raise self._failed(f"refused Shoot {name}", exc) from None

    async def annotate(self, name: str, annotations: dict[str, str]) -> None:
        patch = {"metadata": {"annotations": annotations}}
        try:
            await self._request(
                "annotate", "PATCH", self._path(name), body=patch, content_type=MERGE_PATCH
            )
        except KubeApiError as exc:
            if exc.status != 404:
                raise self._failed(f"refused to annotate Shoot {name}", exc) from None

    async def delete_shoot(self, name: str) -> bool:
        """Confirm and request the deletion; False when the Shoot is already gone."""
        await self.annotate(name, {DELETION_CONFIRMATION: "true"})
        try:
            await self._request("delete", "DELETE", self._path(name))
        except KubeApiError as exc:
            if exc.status == 404:
                return False
            raise self._failed(f"refused to delete Shoot {name}", exc) from None
        return True

    async def list_seeds(self) -> list[dict[str, Any]]:
        """Gardener's Seeds (cluster-scoped: the garden identity needs `list` on
        `seeds.core.gardener.cloud`)."""
        try:
            answer = await self._request("seeds", "GET", f"{API}/seeds")
        except KubeApiError as exc:
            raise self._failed("refused to list Seeds", exc) from None
        return [dict(item) for item in (answer or {}).get("items") or []]

    async def get_seed(self, name: str) -> dict[str, Any] | None:
        """One Seed (None: there is none of that name)."""
        if not re.fullmatch(SEED_NAME, name):
            raise GardenerError(f"invalid Seed name {name[:80]!r}", retryable=False)
        path = f"{API}/seeds/{name}"
        try:
            return dict(await self._request("seed", "GET", path))
        except KubeApiError as exc:
            if exc.status == 404:
                return None
            raise self._failed(f"refused to read Seed {name}", exc) from None

    async def admin_kubeconfig(self, name: str, seconds: int) -> tuple[str, dt.datetime]:
        """A fresh admin kubeconfig of the shoot, valid `seconds`: (kubeconfig, expiry)."""
        request = {
            "apiVersion": "authentication.gardener.cloud/v1alpha1",
            "kind": "AdminKubeconfigRequest",
            "spec": {"expirationSeconds": seconds},
        }
        try:
            answer = await self._request(
                "adminkubeconfig", "POST", self._path(name) + "/adminkubeconfig", body=request
            )
        except KubeApiError as exc:
            raise self._failed(f"refused an admin kubeconfig of Shoot {name}", exc) from None
        status = (answer or {}).get("status") or {}
        try:
            kubeconfig = base64.b64decode(status["kubeconfig"]).decode("utf-8")
            expires = dt.datetime.fromisoformat(status["expirationTimestamp"])
        except (KeyError, TypeError, ValueError):
            raise GardenerError(
                f"Gardener answered the admin kubeconfig request of Shoot {name} "
                "without a kubeconfig and its expiry",
                retryable=True,
            ) from None
        return kubeconfig, expires

    async def apply_configmap(self, configmap: dict[str, Any]) -> None:
        """Server-side apply of a ConfigMap in the project namespace (a Shoot's structured
        authentication configuration, which the Shoot names and Gardener requires to exist)."""
        name = check_shoot_name(configmap["metadata"]["name"])
        path = f"/api/v1/namespaces/{urllib.parse.quote(self.namespace, safe='')}/configmaps/{name}"
        params = {"fieldManager": FIELD_MANAGER, "force": "true"}
        body = {**configmap, "metadata": {**configmap["metadata"], "namespace": self.namespace}}
        try:
            await self._request(
                "configmap", "PATCH", path, params=params, body=body, content_type=APPLY_PATCH
            )
        except KubeApiError as exc:
            raise self._failed(f"refused ConfigMap {name}", exc) from None

    async def delete_configmap(self, name: str) -> None:
        """Delete a ConfigMap in the project namespace (a deleted Shoot's structured
        authentication configuration); one already gone is fine."""
        name = check_shoot_name(name)
        path = f"/api/v1/namespaces/{urllib.parse.quote(self.namespace, safe='')}/configmaps/{name}"
        try:
            await self._request("configmap", "DELETE", path)
        except KubeApiError as exc:
            if exc.status != 404:
                raise self._failed(f"refused to delete ConfigMap {name}", exc) from None
